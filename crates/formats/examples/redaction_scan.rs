//! What the built-in secret detectors find in a folder of transcripts: per kind, how many items
//! and how many distinct matches, with each distinct match shown masked (its first four characters,
//! its length and its context's first characters) so that a reader can tell credentials from false
//! positives without the output repeating any secret.
//!
//! `cargo run --release -p compact-formats --example redaction_scan -- ../shared/corpus`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::redact::Redactor;
use compact_formats::import::{import, ImportMode, ImportOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| x == "jsonl" || x == "json" || x == "md")
        {
            out.push(p);
        }
    }
}

fn mask(secret: &str) -> String {
    let head: String = secret.chars().take(4).collect();
    format!("{head}… ({} chars)", secret.chars().count())
}

fn main() {
    let root = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/corpus".to_owned());
    let mut paths = Vec::new();
    files(Path::new(&root), &mut paths);
    paths.sort();
    let redactor = Redactor::new();
    let options = ImportOptions {
        format: None,
        mode: ImportMode::Lenient,
    };
    let (mut transcripts, mut items) = (0usize, 0usize);
    let mut by_kind: BTreeMap<String, (usize, BTreeSet<String>)> = BTreeMap::new();
    for path in &paths {
        let bytes = std::fs::read(path).unwrap();
        let Ok(imported) = import(&bytes, &path.display().to_string(), &options) else {
            continue;
        };
        transcripts += 1;
        for item in &imported.conversation.items {
            items += 1;
            let mut kinds = BTreeSet::new();
            for (kind, secret) in redactor.secrets(item) {
                let entry = by_kind.entry(kind.clone()).or_default();
                entry.1.insert(secret);
                kinds.insert(kind);
            }
            for kind in kinds {
                by_kind.entry(kind).or_default().0 += 1;
            }
        }
    }
    println!("{transcripts} transcripts, {items} items");
    println!("| kind | items | distinct matches | examples (masked) |");
    println!("|---|---:|---:|---|");
    for (kind, (n, distinct)) in &by_kind {
        let examples: Vec<String> = distinct.iter().take(4).map(|s| mask(s)).collect();
        println!(
            "| {kind} | {n} | {} | {} |",
            distinct.len(),
            examples.join(", ")
        );
    }
}
