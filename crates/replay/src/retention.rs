//! Retention: which probes the model can see at a call, maintained incrementally as items enter and
//! leave the held history.

use crate::probes::{ProbeKind, ProbeSet};

/// Expected and present probes at one call, per kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    /// Probes expected at this call, per [`ProbeKind::index`].
    pub expected: [u32; ProbeKind::COUNT],
    /// Of those, the ones present in the visible context.
    pub present: [u32; ProbeKind::COUNT],
}

impl Retention {
    /// Fraction of all expected probes that are present (`None` when none are expected).
    pub fn overall(&self) -> Option<f64> {
        ratio(self.present.iter().sum(), self.expected.iter().sum())
    }

    /// Fraction for one kind (`None` when none of that kind are expected).
    pub fn of(&self, kind: ProbeKind) -> Option<f64> {
        ratio(self.present[kind.index()], self.expected[kind.index()])
    }

    /// Adds another call's (or session's) counts to these, for pooled figures.
    pub fn add(&mut self, other: &Retention) {
        for k in 0..self.expected.len() {
            self.expected[k] += other.expected[k];
            self.present[k] += other.present[k];
        }
    }
}

fn ratio(present: u32, expected: u32) -> Option<f64> {
    (expected > 0).then(|| f64::from(present) / f64::from(expected))
}

/// How many visible held items contain each probe.
#[derive(Debug, Clone)]
pub struct RetentionTracker {
    holders: Vec<u32>,
}

impl RetentionTracker {
    /// A tracker for `probes`, with nothing held.
    pub fn new(probes: &ProbeSet) -> Self {
        RetentionTracker {
            holders: vec![0; probes.len()],
        }
    }

    /// An item containing `hits` entered the held history.
    pub fn enter(&mut self, hits: &[u32]) {
        for &h in hits {
            if let Some(n) = self.holders.get_mut(h as usize) {
                *n += 1;
            }
        }
    }

    /// Forgets everything held (before re-entering the items of a rewritten history).
    pub fn clear(&mut self) {
        self.holders.iter_mut().for_each(|n| *n = 0);
    }

    /// The probes expected at the call made before original item `at` that no held item contains
    /// (indices into `probes`): the ones [`RetentionTracker::measure`] counts as expected but not
    /// present.
    pub fn missing(&self, probes: &ProbeSet, at: usize) -> Vec<u32> {
        probes
            .probes()
            .iter()
            .zip(&self.holders)
            .enumerate()
            .filter(|(_, (probe, &n))| probe.expected_at(at) && n == 0)
            .filter_map(|(i, _)| u32::try_from(i).ok())
            .collect()
    }

    /// Retention at the call made before original item `at`.
    pub fn measure(&self, probes: &ProbeSet, at: usize) -> Retention {
        let mut out = Retention::default();
        for (probe, &n) in probes.probes().iter().zip(&self.holders) {
            if probe.expected_at(at) {
                out.expected[probe.kind.index()] += 1;
                if n > 0 {
                    out.present[probe.kind.index()] += 1;
                }
            }
        }
        out
    }
}
