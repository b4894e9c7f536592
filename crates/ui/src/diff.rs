//! The diff of one compaction, read from the session log: what the model saw before it (the previous
//! view and the items received since) against the view it wrote, per item kept, truncated,
//! densified, referenced, summarised or dropped, the classes `compactctl diff` shows with the plan's
//! [`Action`](compact_core::plan::Action) names. The log holds views, not plans, so the class is
//! read from what the view did to each item: the same chain link sent again is kept, a copy under
//! the same id whose text is a reference stub is referenced, one with a truncation marker is
//! truncated (any other rewrite densified), an id a new checkpoint covers is summarised, and the
//! rest is dropped. Linear in the log's size.

use compact_core::model::{Item, ItemBody};
use compact_core::plan::REFERENCE_PREFIX;
use compact_core::truncate::MARKER_OPEN;
use compact_session::chain::ChainHash;
use compact_session::record::{ItemSource, Record, Stored, ViewEntry, ViewRecord};
use std::collections::{HashMap, HashSet};

/// What a compaction did to an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fate {
    /// Sent unchanged.
    Kept,
    /// Cut to a head and tail with a marker naming the original.
    Truncated,
    /// Rewritten without loss (or with a marker naming the original).
    Densified,
    /// Replaced by a reference stub naming the original.
    Referenced,
    /// Covered by the new checkpoint.
    Summarised,
    /// Removed without a summary.
    Dropped,
    /// Made by the compaction (the checkpoint, a synthetic result).
    Added,
}

impl Fate {
    /// The class name (the plan's action names, as `compactctl diff` prints them).
    pub fn as_str(self) -> &'static str {
        match self {
            Fate::Kept => "keep",
            Fate::Truncated => "truncate",
            Fate::Densified => "densify",
            Fate::Referenced => "reference",
            Fate::Summarised => "summarize",
            Fate::Dropped => "drop",
            Fate::Added => "added",
        }
    }

    /// Every class, in the order a legend lists them.
    pub const ALL: [Fate; 7] = [
        Fate::Kept,
        Fate::Truncated,
        Fate::Densified,
        Fate::Referenced,
        Fate::Summarised,
        Fate::Dropped,
        Fate::Added,
    ];
}

/// One row of a diff.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// The item before the compaction (`None` for an item the compaction added).
    pub before: Option<&'a Item>,
    /// What the model sees of it after (`None` when summarised or dropped).
    pub after: Option<&'a Item>,
    /// Its fate.
    pub fate: Fate,
}

/// A compaction's diff.
#[derive(Debug, Clone)]
pub struct Diff<'a> {
    /// The view record.
    pub view: &'a ViewRecord,
    /// One row per item before, in order, then the items the compaction added.
    pub rows: Vec<Row<'a>>,
    /// The checkpoints of the new view (text, generation).
    pub checkpoints: Vec<&'a Item>,
}

impl Diff<'_> {
    /// How many rows have `fate`.
    pub fn count(&self, fate: Fate) -> usize {
        self.rows.iter().filter(|r| r.fate == fate).count()
    }
}

/// The received items of `records` by chain link.
fn received(records: &[Stored]) -> HashMap<ChainHash, (&Item, ChainHash)> {
    records
        .iter()
        .filter_map(|s| match &s.record {
            Record::Item(r) if r.source == ItemSource::Received => {
                Some((r.hash, (&r.item, r.parent)))
            }
            _ => None,
        })
        .collect()
}

/// The chain of received items ending at `tip`, oldest first.
fn chain<'a>(
    by_hash: &HashMap<ChainHash, (&'a Item, ChainHash)>,
    tip: ChainHash,
) -> Vec<(ChainHash, &'a Item)> {
    let mut out = Vec::new();
    let mut at = tip;
    while at != ChainHash::GENESIS {
        let Some((item, parent)) = by_hash.get(&at) else {
            break;
        };
        out.push((at, *item));
        if out.len() > by_hash.len() {
            break; // A damaged log that loops.
        }
        at = *parent;
    }
    out.reverse();
    out
}

fn resolve<'a>(
    view: &'a ViewRecord,
    by_hash: &HashMap<ChainHash, (&'a Item, ChainHash)>,
) -> Vec<(Option<ChainHash>, &'a Item)> {
    view.entries
        .iter()
        .filter_map(|e| match e {
            ViewEntry::Logged(h) => by_hash.get(h).map(|(item, _)| (Some(*h), *item)),
            ViewEntry::Inline(item) => Some((None, item)),
        })
        .collect()
}

/// The text of an item as the diff compares it.
fn text(item: &Item) -> String {
    match item.body() {
        ItemBody::Checkpoint(c) => c.text.clone(),
        _ => item.plain_text(),
    }
}

/// The diff of the compaction that wrote the view record `view_seq` of `records`; `None` when no
/// view record has that number.
pub fn diff(records: &[Stored], view_seq: u64) -> Option<Diff<'_>> {
    let mut view = None;
    let mut previous = None;
    for s in records {
        if let Record::View(v) = &s.record {
            if s.seq == view_seq {
                view = Some(v);
                break;
            }
            previous = Some(v);
        }
    }
    let view = view?;
    let by_hash = received(records);
    let links = chain(&by_hash, view.tip);
    let before: Vec<(Option<ChainHash>, &Item)> =
        match previous.and_then(|p| links.iter().position(|(h, _)| *h == p.tip).map(|i| (p, i))) {
            Some((p, i)) => {
                let mut b = resolve(p, &by_hash);
                b.extend(links[i + 1..].iter().map(|(h, item)| (Some(*h), *item)));
                b
            }
            None => links.iter().map(|(h, item)| (Some(*h), *item)).collect(),
        };
    let after = resolve(view, &by_hash);
    let logged: HashSet<ChainHash> = after.iter().filter_map(|(h, _)| *h).collect();
    let before_ids: HashSet<&str> = before.iter().map(|(_, i)| i.meta.id.as_str()).collect();
    let inline: HashMap<&str, &Item> = after
        .iter()
        .filter(|(h, _)| h.is_none())
        .map(|(_, i)| (i.meta.id.as_str(), *i))
        .collect();
    let checkpoints: Vec<&Item> = after
        .iter()
        .filter(|(_, i)| matches!(i.body(), ItemBody::Checkpoint(_)))
        .map(|(_, i)| *i)
        .collect();
    let covered: HashSet<&str> = checkpoints
        .iter()
        .filter_map(|i| match i.body() {
            ItemBody::Checkpoint(c) => Some(c.covers.iter().map(|id| id.as_str())),
            _ => None,
        })
        .flatten()
        .collect();
    let mut rows = Vec::with_capacity(before.len() + 2);
    for (hash, item) in &before {
        let id = item.meta.id.as_str();
        let (fate, now) = if hash.is_some_and(|h| logged.contains(&h)) {
            (Fate::Kept, Some(*item))
        } else if let Some(now) = inline.get(id) {
            let (old, new) = (text(item), text(now));
            let fate = if old == new {
                Fate::Kept
            } else if new.contains(REFERENCE_PREFIX) {
                Fate::Referenced
            } else if new.contains(MARKER_OPEN) && !old.contains(MARKER_OPEN) {
                Fate::Truncated
            } else if matches!(item.body(), ItemBody::Checkpoint(_)) {
                Fate::Summarised
            } else {
                Fate::Densified
            };
            (fate, (fate != Fate::Summarised).then_some(*now))
        } else if covered.contains(id)
            || (matches!(item.body(), ItemBody::Checkpoint(_)) && !checkpoints.is_empty())
        {
            (Fate::Summarised, None)
        } else {
            (Fate::Dropped, None)
        };
        rows.push(Row {
            before: Some(item),
            after: now,
            fate,
        });
    }
    for (hash, item) in &after {
        if hash.is_none() && !before_ids.contains(item.meta.id.as_str()) {
            rows.push(Row {
                before: None,
                after: Some(item),
                fate: Fate::Added,
            });
        }
    }
    Some(Diff {
        view,
        rows,
        checkpoints,
    })
}
