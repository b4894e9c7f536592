//! Choosing what goes into a checkpoint of at most `max_tokens` tokens.
//!
//! 1. **Kept entries** first: the original task, the latest requests, the open steps of the plan,
//!    where work stopped, the latest unresolved failure. When they alone would take more than
//!    [`KEPT_SHARE`] of the budget they are shortened (blocks dropped, then text cut to 600, 400, ...
//!    characters) rather than dropped.
//! 2. **Floors**: every section with entries gets a floor share of the budget ([`FLOORS`], shares of
//!    empty sections spread over the others). Within its floor a section takes its entries by value,
//!    best first; an entry that does not fit whole may go in shortened. So no section collapses to a
//!    placeholder while another holds dozens of entries.
//! 3. **Value per token**: what is left goes to the remaining entries of all sections, best value per
//!    token first.
//! 4. **Exact fit**: the text is rendered and counted with the counter; while it is over, the entry
//!    with the least value per token goes; while room is left, the next best entries are tried. If
//!    even the kept entries cannot fit they are cut shorter, and as a last resort the text itself is
//!    cut, so the result is never over `max_tokens`.
//!
//! An entry's value = section weight × (0.3 + 0.7 × recency rank) × (1 + 0.25 ln(1 + uses)), lower for
//! minor entries (a resolved failure, a finished step, the names a file used). A constraint already
//! quoted by a kept request is worth nothing. Entries are written in their original order. Deterministic.

use super::section::{Entry, Section, SectionKind};
use super::CheckpointOptions;
use crate::facts::shorten;
use std::collections::{BTreeMap, BTreeSet};

/// Floor share of the budget per section.
pub const FLOORS: [(SectionKind, f64); 9] = [
    (SectionKind::Goal, 0.20),
    (SectionKind::Constraints, 0.06),
    (SectionKind::FilesModified, 0.18),
    (SectionKind::FilesRead, 0.05),
    (SectionKind::Errors, 0.17),
    (SectionKind::Commands, 0.04),
    (SectionKind::Decisions, 0.07),
    (SectionKind::Earlier, 0.08),
    (SectionKind::State, 0.15),
];
/// Kept entries may take at most this share of the budget before they are shortened.
pub const KEPT_SHARE: f64 = 0.6;
/// Caps (characters) tried in turn on kept entries that are too long.
const KEEP_CAPS: [usize; 6] = [600, 400, 240, 160, 100, 60];
/// Caps tried on kept entries when nothing else can give way.
const LAST_RESORT_CAPS: [usize; 6] = [240, 160, 100, 60, 40, 20];
/// Caps tried on an entry that does not fit whole in what is left.
const FIT_CAPS: [usize; 3] = [200, 120, 70];
/// A shortened failure keeps at least this many characters of the start of its command and of its
/// error line: enough to tell one command or message from another.
const IDENTIFYING_CHARS: usize = 72;
/// A shortened entry is worth this share of the whole one.
const SHORTENED_VALUE: f64 = 0.6;
/// Minor entries are worth this share of a normal one.
const MINOR_VALUE: f64 = 0.4;
/// A section's first line may take this much even when its floor share is smaller.
const MIN_LINE_TOKENS: usize = 40;
/// Tokens set aside per section for its omission note (and three more for the closing note).
const NOTE_TOKENS: usize = 7;
/// Entries cheaper than this count as this many tokens when value per token is compared.
const MIN_DENSITY_COST: usize = 16;
/// At most this many entries are tried, one exact count each, to fill what is left at the end.
const FILL_TRIES: usize = 12;

/// How much an entry of a section is worth, before recency and use.
fn weight(kind: SectionKind) -> f64 {
    match kind {
        SectionKind::Goal => 3.0,
        SectionKind::State => 2.5,
        SectionKind::Errors => 2.2,
        SectionKind::FilesModified => 2.0,
        SectionKind::Constraints => 1.6,
        SectionKind::Decisions => 1.4,
        SectionKind::Earlier => 1.2,
        SectionKind::FilesRead => 1.0,
        SectionKind::Commands => 0.9,
    }
}

type Key = (SectionKind, usize);

struct Cand {
    key: Key,
    value: f64,
    cost: usize,
    keep: bool,
    minor: bool,
}

impl Cand {
    /// Value per token; an entry counts as at least [`MIN_DENSITY_COST`] tokens, so that trivia is
    /// not preferred for being short.
    fn density(&self) -> f64 {
        self.value / self.cost.max(MIN_DENSITY_COST) as f64
    }
}

/// The checkpoint text: `header`, then what fits of `sections` (see the module documentation).
pub(super) fn fit(
    mut sections: BTreeMap<SectionKind, Section>,
    header: &str,
    options: &CheckpointOptions,
) -> String {
    let max = options.max_tokens;
    let counter = &options.counter;
    let count = |s: &str| counter.count_text(s);
    let header_cost = count(header);
    let reserve = NOTE_TOKENS * (sections.len() + 3);
    let room = max.saturating_sub(header_cost + reserve);

    shrink_kept(&mut sections, room, &count);
    let mut cands = candidates(&sections, &count);
    let heading_cost: BTreeMap<SectionKind, usize> = sections
        .iter()
        .map(|(k, s)| {
            let intro: usize = s.intro.iter().map(|l| count(l) + 1).sum();
            (*k, count(&format!("\n## {}\n", k.title())) + intro)
        })
        .collect();

    let mut picked = Picked::default();
    for c in cands.iter().filter(|c| c.keep) {
        picked.take(c, &heading_cost);
    }

    // Floors.
    let present: Vec<SectionKind> = sections.keys().copied().collect();
    let total_share: f64 = FLOORS
        .iter()
        .filter(|(k, _)| present.contains(k))
        .map(|(_, s)| s)
        .sum();
    let mut by_weight: Vec<&(SectionKind, f64)> =
        FLOORS.iter().filter(|(k, _)| present.contains(k)).collect();
    by_weight.sort_by(|a, b| weight(b.0).total_cmp(&weight(a.0)));
    for (kind, share) in by_weight {
        let share_floor = (room as f64 * share / total_share.max(f64::EPSILON)) as usize;
        let mut order: Vec<usize> = (0..cands.len())
            .filter(|&i| cands[i].key.0 == *kind && !picked.chosen.contains(&cands[i].key))
            .collect();
        order.sort_by(|&a, &b| cands[b].value.total_cmp(&cands[a].value));
        for i in order {
            let heading = picked.heading(*kind, &heading_cost);
            // Minor entries (a finished step, a resolved failure) compete on value per token, except
            // when the section has nothing else to show.
            if redundant(&sections, &picked.chosen, cands[i].key)
                || (cands[i].minor && heading == 0)
            {
                continue;
            }
            let in_section = picked.spent.get(kind).copied().unwrap_or(0);
            let share_left = share_floor.saturating_sub(in_section + heading);
            // A section's first line may take a little more than its share: a floor is at least
            // one line.
            let left = if heading > 0 {
                share_left.max(MIN_LINE_TOKENS)
            } else {
                share_left
            };
            let left = left.min(room.saturating_sub(picked.used + heading));
            if cands[i].cost > left
                && !shorten_to(&mut sections, &mut cands[i], left, heading > 0, &count)
            {
                continue;
            }
            picked.take(&cands[i], &heading_cost);
        }
    }

    // Value per token.
    let mut order: Vec<usize> = (0..cands.len())
        .filter(|&i| !picked.chosen.contains(&cands[i].key))
        .collect();
    order.sort_by(|&a, &b| cands[b].density().total_cmp(&cands[a].density()));
    for i in order {
        let heading = picked.heading(cands[i].key.0, &heading_cost);
        let left = room.saturating_sub(picked.used + heading);
        if redundant(&sections, &picked.chosen, cands[i].key) {
            continue;
        }
        if cands[i].cost <= left
            || shorten_to(&mut sections, &mut cands[i], left, heading > 0, &count)
        {
            picked.take(&cands[i], &heading_cost);
        }
    }

    let mut chosen = picked.chosen;
    exact(&mut sections, &mut cands, &mut chosen, header, options)
}

/// The entries chosen so far and what they cost (estimated).
#[derive(Default)]
struct Picked {
    chosen: BTreeSet<Key>,
    used: usize,
    spent: BTreeMap<SectionKind, usize>,
}

impl Picked {
    /// The heading's cost if `kind` has nothing chosen yet.
    fn heading(&self, kind: SectionKind, heading_cost: &BTreeMap<SectionKind, usize>) -> usize {
        if self.chosen.iter().any(|k| k.0 == kind) {
            0
        } else {
            heading_cost.get(&kind).copied().unwrap_or(0)
        }
    }

    fn take(&mut self, c: &Cand, heading_cost: &BTreeMap<SectionKind, usize>) {
        let extra = c.cost + self.heading(c.key.0, heading_cost);
        self.chosen.insert(c.key);
        self.used += extra;
        *self.spent.entry(c.key.0).or_default() += extra;
    }
}

/// Shortens kept entries (dropping their blocks first) while they take more than [`KEPT_SHARE`] of
/// `room`.
fn shrink_kept(
    sections: &mut BTreeMap<SectionKind, Section>,
    room: usize,
    count: &impl Fn(&str) -> usize,
) {
    let limit = (room as f64 * KEPT_SHARE) as usize;
    let kept_cost = |sections: &BTreeMap<SectionKind, Section>| -> usize {
        sections
            .values()
            .flat_map(|s| s.entries.iter())
            .filter(|e| e.hint.keep)
            .map(|e| count(&e.render()) + 1)
            .sum()
    };
    if kept_cost(sections) <= limit {
        return;
    }
    for e in sections.values_mut().flat_map(|s| s.entries.iter_mut()) {
        if e.hint.keep {
            e.block = None;
        }
    }
    for cap in KEEP_CAPS {
        if kept_cost(sections) <= limit {
            return;
        }
        for e in sections.values_mut().flat_map(|s| s.entries.iter_mut()) {
            if e.hint.keep {
                e.text = shorten(&e.text, cap);
            }
        }
    }
}

/// Every entry as a candidate, with its value and cost.
fn candidates(
    sections: &BTreeMap<SectionKind, Section>,
    count: &impl Fn(&str) -> usize,
) -> Vec<Cand> {
    let mut recencies: Vec<u64> = sections
        .values()
        .flat_map(|s| s.entries.iter().map(|e| e.hint.recency))
        .collect();
    recencies.sort_unstable();
    recencies.dedup();
    let span = recencies.len().saturating_sub(1).max(1) as f64;
    let rank = |r: u64| recencies.binary_search(&r).unwrap_or(0) as f64 / span;
    let mut out = Vec::new();
    for (kind, s) in sections {
        for (i, e) in s.entries.iter().enumerate() {
            out.push(Cand {
                key: (*kind, i),
                value: value(*kind, e, rank(e.hint.recency)),
                cost: count(&e.render()) + 1,
                keep: e.hint.keep,
                minor: e.hint.minor,
            });
        }
    }
    out
}

fn value(kind: SectionKind, e: &Entry, rank: f64) -> f64 {
    let minor = if e.hint.minor { MINOR_VALUE } else { 1.0 };
    let uses = 1.0 + 0.25 * f64::from(e.hint.uses).ln_1p();
    weight(kind) * minor * (0.3 + 0.7 * rank) * uses
}

/// A constraint quoted word for word by a chosen request adds nothing.
fn redundant(sections: &BTreeMap<SectionKind, Section>, chosen: &BTreeSet<Key>, key: Key) -> bool {
    if key.0 != SectionKind::Constraints {
        return false;
    }
    let text = &sections[&key.0].entries[key.1].text;
    chosen
        .iter()
        .filter(|k| k.0 == SectionKind::Goal)
        .any(|k| sections[&k.0].entries[k.1].text.contains(text.as_str()))
}

/// Shorter forms of an entry's text, longest first, each keeping what identifies the fact: a file
/// entry keeps its whole path (then its operation and last change, then its symbols), a failure keeps
/// the start of its command and of its error line whole (see [`failure_forms`]), other entries are
/// cut to [`FIT_CAPS`]. A failure is cut to [`FIT_CAPS`] too when it would be its section's only
/// line (`alone`): a floor is at least one line.
fn variants(kind: SectionKind, text: &str, alone: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    match kind {
        SectionKind::FilesModified | SectionKind::FilesRead => {
            if let Some(at) = text.find("; symbols: ") {
                out.push(text[..at].to_owned());
            }
            if let Some(at) = text.find("; ") {
                out.push(text[..at].to_owned());
            }
            if let Some(at) = text.find(" — ") {
                out.push(text[..at].to_owned());
            }
        }
        SectionKind::Errors => {
            let mut forms = failure_forms(text);
            if !forms.is_empty() {
                if alone {
                    let last = forms.last().cloned().unwrap_or_default();
                    forms.extend(FIT_CAPS.iter().map(|&cap| shorten(&last, cap)));
                    forms.dedup();
                }
                return forms;
            }
        }
        _ => {}
    }
    // A path cut short names no file: file entries stop at the bare path.
    if !matches!(kind, SectionKind::FilesModified | SectionKind::FilesRead) {
        let base = out.last().map_or(text, String::as_str).to_owned();
        out.extend(FIT_CAPS.iter().map(|&cap| shorten(&base, cap)));
    }
    out.dedup();
    out
}

/// Shorter forms of a failure entry (`` `cmd` (status): line — then: … — resolved … ``), longest
/// first: without what followed, then the command and the error line each cut, never below their
/// first [`IDENTIFYING_CHARS`] characters (the command last, down to 40), the status and whether it
/// was resolved always kept. A failure cut anywhere shorter names neither what failed nor why, so
/// there is no shorter form. Empty for text not in that shape.
fn failure_forms(text: &str) -> Vec<String> {
    let (text, resolved) = match text.find(" — resolved") {
        Some(at) => (&text[..at], &text[at..]),
        None => (text, ""),
    };
    let text = text.find(" — then: ").map_or(text, |at| &text[..at]);
    let Some((cmd, rest)) = text.strip_prefix('`').and_then(|t| t.split_once("` (")) else {
        return Vec::new();
    };
    let Some((status, line)) = rest.split_once("): ") else {
        return Vec::new();
    };
    let form = |c: usize, l: usize| {
        format!(
            "`{}` ({status}): {}{resolved}",
            shorten(cmd, c),
            shorten(line, l)
        )
    };
    let mut out = vec![format!("{text}{resolved}")];
    out.extend([
        form(IDENTIFYING_CHARS, usize::MAX),
        form(IDENTIFYING_CHARS, 2 * IDENTIFYING_CHARS),
        form(IDENTIFYING_CHARS, IDENTIFYING_CHARS),
        form(40, IDENTIFYING_CHARS),
    ]);
    out.dedup();
    out
}

/// Puts the candidate's entry in its longest form that costs at most `left` (blocks dropped first);
/// false, and the entry unchanged, when even the shortest form does not fit. `alone`: the entry
/// would be its section's only line.
fn shorten_to(
    sections: &mut BTreeMap<SectionKind, Section>,
    cand: &mut Cand,
    left: usize,
    alone: bool,
    count: &impl Fn(&str) -> usize,
) -> bool {
    let kind = cand.key.0;
    let Some(entry) = sections
        .get_mut(&kind)
        .and_then(|s| s.entries.get_mut(cand.key.1))
    else {
        return false;
    };
    let mut trial = entry.clone();
    trial.block = None;
    let forms = std::iter::once(entry.text.clone()).chain(variants(kind, &entry.text, alone));
    for (n, text) in forms.enumerate() {
        trial.text = text;
        if n > 0 {
            // A shortened entry cites only its latest item: the text goes before the pointers.
            trial.cites = entry.cites.last().cloned().into_iter().collect();
        }
        let cost = count(&trial.render()) + 1;
        if cost <= left {
            let shortened = n > 0 || entry.block.is_some();
            *entry = trial;
            cand.cost = cost;
            if shortened {
                cand.value *= SHORTENED_VALUE;
            }
            return true;
        }
    }
    false
}

/// Renders the chosen entries: sections in write order, entries in their order, an omission note
/// per section that left entries out, and one line naming the sections left out entirely.
fn render(
    sections: &BTreeMap<SectionKind, Section>,
    chosen: &BTreeSet<Key>,
    header: &str,
) -> String {
    let mut out = header.trim_end().to_owned();
    let mut skipped: Vec<String> = Vec::new();
    for kind in SectionKind::WRITE_ORDER {
        let Some(s) = sections.get(&kind) else {
            continue;
        };
        let entries: Vec<Entry> = s
            .entries
            .iter()
            .enumerate()
            .filter(|(i, _)| chosen.contains(&(kind, *i)))
            .map(|(_, e)| e.clone())
            .collect();
        // Constraints quoted by a shown request are not missing.
        let covered = (0..s.entries.len())
            .filter(|i| !chosen.contains(&(kind, *i)) && redundant(sections, chosen, (kind, *i)))
            .count();
        let omitted = s.entries.len() - entries.len() - covered;
        if entries.is_empty() {
            if omitted > 0 {
                skipped.push(format!("{} ({omitted})", kind.title().to_lowercase()));
            }
            continue;
        }
        let shown = Section {
            entries,
            intro: s.intro.clone(),
            omitted,
        };
        out.push_str("\n\n");
        out.push_str(shown.render(kind).trim_end());
    }
    if !skipped.is_empty() {
        out.push_str(&format!(
            "\n\n{}{}.)",
            super::NOT_SHOWN_PREFIX,
            skipped.join(", ")
        ));
    }
    out
}

/// Renders and counts exactly, dropping the least valuable entries while over and trying the next
/// best while under; cuts kept entries and finally the text itself if nothing else fits.
fn exact(
    sections: &mut BTreeMap<SectionKind, Section>,
    cands: &mut [Cand],
    chosen: &mut BTreeSet<Key>,
    header: &str,
    options: &CheckpointOptions,
) -> String {
    let max = options.max_tokens;
    let count = |s: &str| options.counter.count_text(s);
    let mut text = render(sections, chosen, header);
    let mut total = count(&text);
    while total > max {
        // The least valuable entry per token goes first, from a section that keeps others (so the
        // floors hold); a section's last entry only when no other can go.
        let shown = |kind: SectionKind| chosen.iter().filter(|k| k.0 == kind).count();
        let removable = |c: &&Cand| !c.keep && chosen.contains(&c.key);
        let worst = cands
            .iter()
            .filter(removable)
            .filter(|c| shown(c.key.0) > 1)
            .min_by(|a, b| a.density().total_cmp(&b.density()))
            .or_else(|| {
                cands
                    .iter()
                    .filter(removable)
                    .min_by(|a, b| a.density().total_cmp(&b.density()))
            });
        match worst {
            Some(c) => {
                chosen.remove(&c.key);
            }
            None => break,
        }
        text = render(sections, chosen, header);
        total = count(&text);
    }
    for cap in LAST_RESORT_CAPS {
        if total <= max {
            break;
        }
        for c in cands.iter().filter(|c| c.keep) {
            if let Some(e) = sections
                .get_mut(&c.key.0)
                .and_then(|s| s.entries.get_mut(c.key.1))
            {
                e.block = None;
                e.text = shorten(&e.text, cap);
            }
        }
        text = render(sections, chosen, header);
        total = count(&text);
    }
    if total > max {
        return cut(&text, max, &count);
    }
    // Fill what is left with the next best entries.
    let mut order: Vec<usize> = (0..cands.len())
        .filter(|&i| !chosen.contains(&cands[i].key))
        .collect();
    order.sort_by(|&a, &b| cands[b].density().total_cmp(&cands[a].density()));
    let mut tries = 0;
    for i in order {
        if tries >= FILL_TRIES || total >= max {
            break;
        }
        if cands[i].cost > max - total || redundant(sections, chosen, cands[i].key) {
            continue;
        }
        tries += 1;
        chosen.insert(cands[i].key);
        let trial = render(sections, chosen, header);
        let trial_total = count(&trial);
        if trial_total <= max {
            text = trial;
            total = trial_total;
        } else {
            chosen.remove(&cands[i].key);
        }
    }
    text
}

/// The longest prefix of `text` (at a line, else a char boundary) within `max` tokens.
fn cut(text: &str, max: usize, count: &impl Fn(&str) -> usize) -> String {
    let mut lo = 0usize;
    let mut hi = text.len();
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let mut at = mid;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        if count(&text[..at]) <= max {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let mut at = lo;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let prefix = &text[..at];
    match prefix.rfind('\n') {
        Some(nl) if nl > prefix.len() / 2 => prefix[..nl].to_owned(),
        _ => prefix.to_owned(),
    }
}
