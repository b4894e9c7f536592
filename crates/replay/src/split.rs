//! A deterministic split of a transcript set into two halves by *project* (the source repository),
//! so that settings can be tuned on one half and reported on the other: sessions of one project
//! share code names, paths, tools and habits, and a figure measured on the project a setting was
//! tuned on does not predict unseen sessions.
//!
//! The rule, fitted to no list of files:
//! 1. A transcript's project is the source repository its corpus's `MANIFEST.md` names for it (a
//!    table row whose first cell is the file's `dir/name` and second cell `owner/repo`); without a
//!    manifest row, the file name up to its first `__` (the corpus names files `<owner>__...`).
//! 2. Its family is its format's: `claude-code`, `codex-rollout`, or `other` for every other format.
//! 3. Within each family, projects are taken in the order of a stable hash of their name (FNV-1a,
//!    64 bits) and each goes to the half that holds less of that family's weight so far (half A on
//!    a tie); a transcript's weight is its size in tokens, so that each half holds about half of
//!    every family's history (and of its cut points: a project of many short sessions weighs what
//!    one of few long ones does), and no project is in both. A project whose transcripts span
//!    families is placed with the family of most of its weight.
//!
//! The assignment depends only on the project names, families and transcript sizes of the set
//! given: replay the whole corpus with `--split A` and with `--split B` to tune on one and report
//! on the other.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// One half of a [`split`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Half {
    /// The first half.
    A,
    /// The second half.
    B,
}

impl Half {
    /// `A` or `B`.
    pub fn as_str(self) -> &'static str {
        match self {
            Half::A => "A",
            Half::B => "B",
        }
    }
}

/// What the split needs to know of one transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitEntry {
    /// Its project (see [`project_of`]).
    pub project: String,
    /// Its family (see [`family_of`]).
    pub family: String,
    /// Its weight: its size in tokens.
    pub weight: u64,
}

/// The family of a transcript format: `claude-code`, `codex-rollout`, else `other`.
pub fn family_of(format: &str) -> &'static str {
    match format {
        "claude-code" => "claude-code",
        "codex-rollout" => "codex-rollout",
        _ => "other",
    }
}

/// FNV-1a, 64 bits: stable across platforms, releases and runs.
pub fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The project of the transcript at `path` (see the module documentation); `manifests` caches the
/// manifests read, by directory.
pub fn project_of(path: &Path, manifests: &mut HashMap<std::path::PathBuf, Manifest>) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut dir = path.parent();
    let mut rel = name.clone();
    for _ in 0..3 {
        let Some(d) = dir else { break };
        let manifest = manifests
            .entry(d.to_path_buf())
            .or_insert_with(|| Manifest::read(&d.join("MANIFEST.md")));
        if let Some(repo) = manifest.repos.get(&rel) {
            return repo.clone();
        }
        if let Some(dn) = d.file_name() {
            rel = format!("{}/{rel}", dn.to_string_lossy());
        }
        dir = d.parent();
    }
    name.split("__").next().unwrap_or(&name).to_owned()
}

/// The rows of a corpus manifest: file (as the manifest names it) to source repository.
#[derive(Debug, Clone, Default)]
pub struct Manifest {
    repos: HashMap<String, String>,
}

impl Manifest {
    /// Reads `path`; a missing or unreadable file is an empty manifest.
    pub fn read(path: &Path) -> Manifest {
        std::fs::read_to_string(path)
            .map(|t| Manifest::parse(&t))
            .unwrap_or_default()
    }

    /// Table rows `` | `dir/file` | owner/repo | ... ``.
    pub fn parse(text: &str) -> Manifest {
        let mut repos = HashMap::new();
        for line in text.lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // "| a | b |" splits into ["", "a", "b", ""].
            if cells.len() < 4 {
                continue;
            }
            let file = cells[1].trim_matches('`');
            let repo = cells[2].split_whitespace().next().unwrap_or("");
            if file.is_empty() || !repo.contains('/') || repo.contains('`') {
                continue;
            }
            repos.insert(file.to_owned(), repo.to_owned());
        }
        Manifest { repos }
    }
}

/// The half of every entry, in input order (see the module documentation).
pub fn split(entries: &[SplitEntry]) -> Vec<Half> {
    // Each project's family: the family of most of its weight (ties: the first in name order).
    let mut counts: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    for e in entries {
        *counts
            .entry(e.project.as_str())
            .or_default()
            .entry(e.family.as_str())
            .or_default() += e.weight.max(1);
    }
    let mut by_family: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for (project, families) in &counts {
        let mut family = "";
        let mut most = 0;
        for (f, n) in families {
            if *n > most {
                (family, most) = (f, *n);
            }
        }
        let total: u64 = families.values().sum();
        by_family.entry(family).or_default().push((project, total));
    }
    let mut half_of: HashMap<&str, Half> = HashMap::new();
    for projects in by_family.values_mut() {
        projects.sort_by_key(|(p, _)| (stable_hash(p), *p));
        let (mut a, mut b) = (0u64, 0u64);
        for (project, n) in projects.iter() {
            if a <= b {
                a += n;
                half_of.insert(project, Half::A);
            } else {
                b += n;
                half_of.insert(project, Half::B);
            }
        }
    }
    entries
        .iter()
        .map(|e| half_of.get(e.project.as_str()).copied().unwrap_or(Half::A))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(project: &str, family: &str) -> SplitEntry {
        SplitEntry {
            project: project.into(),
            family: family.into(),
            weight: 1_000,
        }
    }

    #[test]
    fn the_hash_is_fnv1a() {
        assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_project_is_never_in_both_halves_and_families_are_balanced() {
        let mut entries = vec![SplitEntry {
            weight: 0,
            ..entry("t/empty", "claude-code")
        }];
        for (p, n) in [("o/one", 4), ("o/two", 3), ("p/three", 2), ("q/four", 1)] {
            for _ in 0..n {
                entries.push(entry(p, "claude-code"));
            }
        }
        for p in ["r/five", "s/six"] {
            entries.push(entry(p, "codex-rollout"));
        }
        let halves = split(&entries);
        let mut of: HashMap<&str, Half> = HashMap::new();
        for (e, h) in entries.iter().zip(&halves) {
            assert_eq!(*of.entry(e.project.as_str()).or_insert(*h), *h, "{e:?}");
        }
        for family in ["claude-code", "codex-rollout"] {
            let count = |half| {
                entries
                    .iter()
                    .zip(&halves)
                    .filter(|(e, h)| e.family == family && **h == half)
                    .count()
            };
            assert!(count(Half::A) > 0 && count(Half::B) > 0, "{family}");
            assert!(count(Half::A).abs_diff(count(Half::B)) <= 4, "{family}");
            let weight = |half| {
                entries
                    .iter()
                    .zip(&halves)
                    .filter(|(e, h)| e.family == family && **h == half)
                    .map(|(e, _)| e.weight)
                    .sum::<u64>()
            };
            // Greedy by weight: the halves differ by at most the heaviest project.
            assert!(
                weight(Half::A).abs_diff(weight(Half::B)) <= 4_000,
                "{family}"
            );
        }
        // Deterministic, and independent of the input order.
        let mut reversed = entries.clone();
        reversed.reverse();
        let mut back = split(&reversed);
        back.reverse();
        assert_eq!(back, halves);
    }

    #[test]
    fn the_manifest_names_the_repository_and_the_file_name_is_the_fallback() -> std::io::Result<()>
    {
        let m = Manifest::parse(
            "| file | source repository | path |\n|---|---|---|\n\
             | `codex-rollout/acme__rollout-1.jsonl` | acme/widgets | `.codex/x.jsonl` |\n",
        );
        assert_eq!(
            m.repos
                .get("codex-rollout/acme__rollout-1.jsonl")
                .map(String::as_str),
            Some("acme/widgets")
        );
        let dir = std::env::temp_dir().join(format!("compact-split-{}", std::process::id()));
        let sub = dir.join("codex-rollout");
        std::fs::create_dir_all(&sub)?;
        std::fs::write(
            dir.join("MANIFEST.md"),
            "| `codex-rollout/acme__rollout-1.jsonl` | acme/widgets | x |\n",
        )?;
        let mut cache = HashMap::new();
        assert_eq!(
            project_of(&sub.join("acme__rollout-1.jsonl"), &mut cache),
            "acme/widgets"
        );
        assert_eq!(
            project_of(&sub.join("other__rollout-2.jsonl"), &mut cache),
            "other"
        );
        std::fs::remove_dir_all(&dir)
    }
}
