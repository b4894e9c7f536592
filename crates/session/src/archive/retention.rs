//! Retention: [`gc`] deletes archived objects oldest first until none is older than
//! [`Retention::max_age`] and all together take at most [`Retention::max_bytes`].

use super::{Archive, ArchiveError, ObjectInfo, ObjectKey};
use std::time::{Duration, SystemTime};

/// How long and how much the archive keeps. `None` means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Objects written longer ago than this are deleted.
    pub max_age: Option<Duration>,
    /// The oldest objects are deleted until the rest take at most this many bytes.
    pub max_bytes: Option<u64>,
}

/// What a [`gc`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The objects deleted, oldest first.
    pub deleted: Vec<ObjectKey>,
    /// Their total size.
    pub freed_bytes: u64,
    /// Objects kept.
    pub kept: usize,
    /// Their total size.
    pub kept_bytes: u64,
}

/// The indices into `objects` that `retention` deletes at time `now`, oldest first (by write time,
/// then by key, so the order is total): every object older than the age limit, then the oldest of
/// the rest while they are over the size limit.
pub fn plan_gc(objects: &[ObjectInfo], retention: &Retention, now: SystemTime) -> Vec<usize> {
    let mut order: Vec<usize> = (0..objects.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&objects[a], &objects[b]);
        a.modified.cmp(&b.modified).then_with(|| a.key.cmp(&b.key))
    });
    let too_old = |o: &ObjectInfo| {
        retention
            .max_age
            .is_some_and(|max| now.duration_since(o.modified).is_ok_and(|age| age > max))
    };
    let mut total: u64 = objects.iter().map(|o| o.size).sum();
    let mut doomed = Vec::new();
    for i in order {
        let object = &objects[i];
        let over = retention.max_bytes.is_some_and(|max| total > max);
        if !(too_old(object) || over) {
            // Everything after is younger, and the size limit is met.
            break;
        }
        total -= object.size;
        doomed.push(i);
    }
    doomed
}

/// Applies `retention` to the whole archive at time `now` (pass `SystemTime::now()`).
pub fn gc(
    archive: &dyn Archive,
    retention: &Retention,
    now: SystemTime,
) -> Result<GcReport, ArchiveError> {
    let objects = archive.list(None)?;
    let doomed = plan_gc(&objects, retention, now);
    let mut report = GcReport {
        kept: objects.len() - doomed.len(),
        kept_bytes: objects.iter().map(|o| o.size).sum(),
        ..GcReport::default()
    };
    for i in doomed {
        let object = &objects[i];
        archive.delete(&object.key)?;
        report.kept_bytes -= object.size;
        report.freed_bytes += object.size;
        report.deleted.push(object.key.clone());
    }
    Ok(report)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::archive::ObjectKind;

    fn object(seq: u64, size: u64, age_secs: u64, now: SystemTime) -> ObjectInfo {
        ObjectInfo {
            key: ObjectKey::new("s", seq, ObjectKind::Transcript),
            size,
            modified: now - Duration::from_secs(age_secs),
        }
    }

    #[test]
    fn age_then_size_oldest_first() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        // Listed out of age order on purpose.
        let objects = vec![
            object(3, 100, 10, now),
            object(1, 100, 300, now),
            object(2, 100, 200, now),
            object(4, 100, 5, now),
        ];
        let none = Retention::default();
        assert!(plan_gc(&objects, &none, now).is_empty());
        let age = Retention {
            max_age: Some(Duration::from_secs(100)),
            max_bytes: None,
        };
        assert_eq!(plan_gc(&objects, &age, now), vec![1, 2]);
        let size = Retention {
            max_age: None,
            max_bytes: Some(150),
        };
        assert_eq!(plan_gc(&objects, &size, now), vec![1, 2, 0]);
        let both = Retention {
            max_age: Some(Duration::from_secs(250)),
            max_bytes: Some(300),
        };
        assert_eq!(plan_gc(&objects, &both, now), vec![1]);
        let exact = Retention {
            max_age: None,
            max_bytes: Some(400),
        };
        assert!(
            plan_gc(&objects, &exact, now).is_empty(),
            "at the limit is within it"
        );
        // An object from the future (clock skew) is not old.
        let future = vec![object(9, 1, 0, now + Duration::from_secs(60))];
        assert!(plan_gc(&future, &age, now).is_empty());
    }
}
