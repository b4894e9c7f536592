//! [`MemoryStore`]: session logs in memory (tests, embedding without persistence).

use super::{Store, StoreError};
use crate::record::{Record, Stored};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// Session logs held in memory, lost with the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<BTreeMap<String, Log>>,
}

/// One session's log: the records of each append kept as they came (an append never copies the
/// records before it, however long the log).
#[derive(Debug, Default)]
struct Log {
    appends: Vec<Vec<Record>>,
    len: usize,
}

impl Log {
    fn records(&self) -> impl Iterator<Item = &Record> {
        self.appends.iter().flatten()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, BTreeMap<String, Log>>, StoreError> {
        self.sessions
            .lock()
            .map_err(|_| StoreError::Backend("memory store lock poisoned".to_owned()))
    }
}

fn unknown(session: &str) -> StoreError {
    StoreError::UnknownSession(session.to_owned())
}

fn stored(log: &Log, after: u64) -> impl Iterator<Item = Stored> + '_ {
    log.records()
        .enumerate()
        .skip(usize::try_from(after).unwrap_or(usize::MAX))
        .map(|(i, r)| Stored {
            seq: i as u64 + 1,
            record: r.clone(),
        })
}

impl Store for MemoryStore {
    fn create(&self, session: &str) -> Result<bool, StoreError> {
        let mut all = self.lock()?;
        if all.contains_key(session) {
            return Ok(false);
        }
        all.insert(session.to_owned(), Log::default());
        Ok(true)
    }

    fn version(&self, session: &str) -> Result<u64, StoreError> {
        let all = self.lock()?;
        all.get(session)
            .map(|log| log.len as u64)
            .ok_or_else(|| unknown(session))
    }

    fn append(
        &self,
        session: &str,
        expected: u64,
        records: Vec<Record>,
    ) -> Result<u64, StoreError> {
        let mut all = self.lock()?;
        let log = all.get_mut(session).ok_or_else(|| unknown(session))?;
        let actual = log.len as u64;
        if actual != expected {
            return Err(StoreError::Conflict {
                session: session.to_owned(),
                expected,
                actual,
            });
        }
        log.len += records.len();
        log.appends.push(records);
        Ok(log.len as u64)
    }

    fn read(&self, session: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        let all = self.lock()?;
        let log = all.get(session).ok_or_else(|| unknown(session))?;
        Ok(stored(log, after).collect())
    }

    fn find_items(&self, session: &str, item_id: &str) -> Result<Vec<Stored>, StoreError> {
        let all = self.lock()?;
        let log = all.get(session).ok_or_else(|| unknown(session))?;
        Ok(stored(log, 0)
            .filter(|s| s.record.item_id() == Some(item_id))
            .collect())
    }

    fn sessions(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.lock()?.keys().cloned().collect())
    }

    fn delete_session(&self, session: &str) -> Result<bool, StoreError> {
        Ok(self.lock()?.remove(session).is_some())
    }
}
