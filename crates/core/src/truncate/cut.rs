//! The head/tail cut behind [`super::truncate_output`]: choose the kept lines, keep error lines from
//! the removed middle, write the marker, and check the result against the limit.

use super::{error_message_key, is_error_line, thousands, Limit, Unit, MARKER_OPEN};
use crate::model::ItemId;
use crate::tokens::TokenCounter;
use std::collections::HashSet;

/// At most this share of the kept budget goes to error lines from the middle, so head and tail
/// (setup and conclusion) always keep most of the space (tool outputs in a transcript).
pub(super) const ERROR_SHARE: f64 = 0.25;
/// A kept error line longer than this many characters is shortened (one stack frame or message, not
/// a minified blob that happens to contain "error").
const MAX_ERROR_LINE_CHARS: usize = 400;
/// Attempts at fitting before falling back to the marker alone. Each attempt shrinks the space by the
/// measured excess, so one or two suffice in practice (BPE counts are not exactly additive).
const MAX_ATTEMPTS: usize = 8;
/// Error lines that do not fit (a shorter one after them may) before the selection stops: bounds
/// the work on an output of millions of error lines.
const MAX_ERROR_MISSES: usize = 32;
/// No token is longer than this many bytes in practice: bounds the search for a partial line.
const MAX_BYTES_PER_TOKEN: usize = 32;
/// Cost of the newline that joins two pieces.
const NEWLINE_COST: usize = 1;

/// Options of one cut.
pub(super) struct CutOptions<'a> {
    pub limit: Limit,
    pub head_fraction: f64,
    pub keep_error_lines: bool,
    /// Most of the kept budget error lines from the middle may take (0.0 ..= 1.0).
    pub error_share: f64,
    pub reference: &'a ItemId,
}

/// The result of a cut.
pub(super) struct Cut {
    pub text: String,
    pub removed_tokens: usize,
    pub removed_lines: usize,
    pub kept_error_lines: usize,
}

/// What is kept: full head lines, an optional partial line after them, error lines, an optional
/// partial line before the tail, full tail lines.
#[derive(Default)]
struct Layout {
    head: usize,
    head_partial: Option<String>,
    errors: Vec<String>,
    /// Distinct error lines of the removed middle not kept (the marker counts them).
    errors_left_out: usize,
    tail_partial: Option<String>,
    tail: usize,
}

fn marker(
    removed_tokens: usize,
    removed_lines: usize,
    kept_errors: usize,
    left_out_errors: usize,
    reference: &ItemId,
) -> String {
    let lines = if removed_lines == 1 { "line" } else { "lines" };
    let mut errors = match kept_errors {
        0 => String::new(),
        1 => ", 1 error line from it kept below".to_owned(),
        n => format!(", {n} error lines from it kept below"),
    };
    match (kept_errors, left_out_errors) {
        (_, 0) => {}
        (0, 1) => errors.push_str(", 1 error line in it"),
        (0, n) => errors.push_str(&format!(", {} error lines in it", thousands(n))),
        (_, n) => errors.push_str(&format!(", {} more not shown", thousands(n))),
    }
    format!(
        "{MARKER_OPEN}{} tokens / {} {lines} truncated{errors}; full output: compactctl recall {reference}]",
        thousands(removed_tokens),
        thousands(removed_lines)
    )
}

/// Cuts `text` (which measures over the limit) to fit `opts.limit`.
pub(super) fn cut(
    text: &str,
    text_tokens: usize,
    opts: &CutOptions<'_>,
    counter: &TokenCounter,
) -> Cut {
    let lines: Vec<&str> = text.split('\n').collect();
    let error_idx: Vec<usize> = if opts.keep_error_lines {
        lines
            .iter()
            .enumerate()
            .filter(|(_, l)| is_error_line(l))
            .map(|(i, _)| i)
            .collect()
    } else {
        Vec::new()
    };
    let distinct_errors = error_idx
        .iter()
        .map(|&i| lines[i].trim_end())
        .collect::<HashSet<&str>>()
        .len();
    // Reserve room for the widest marker this text could need, but for the count of error lines
    // left out: that clause is rare, and when it is there the measured excess shrinks the room.
    let widest = marker(text_tokens, lines.len(), error_idx.len(), 0, opts.reference);
    let reserve = opts.limit.measure(counter, &widest) + 2 * NEWLINE_COST;
    if opts.limit.max > reserve {
        let mut avail = opts.limit.max - reserve;
        for _ in 0..MAX_ATTEMPTS {
            let layout = plan(&lines, &error_idx, avail, opts, counter);
            let cut = assemble(&lines, &layout, text_tokens, opts.reference, counter);
            let size = opts.limit.measure(counter, &cut.text);
            if size <= opts.limit.max {
                return cut;
            }
            let excess = size - opts.limit.max;
            if avail <= excess {
                break;
            }
            avail -= excess;
        }
    }
    marker_only(text_tokens, lines.len(), distinct_errors, opts, counter)
}

fn plan(
    lines: &[&str],
    error_idx: &[usize],
    avail: usize,
    opts: &CutOptions<'_>,
    counter: &TokenCounter,
) -> Layout {
    let mut err_reserve = if error_idx.is_empty() {
        0
    } else {
        (avail as f64 * opts.error_share.clamp(0.0, 1.0)) as usize
    };
    // The last line (the conclusion) stays whole when the room allows: error lines give up what
    // the tail's share needs for it.
    if let Some(last) = lines.last().filter(|_| opts.head_fraction < 1.0) {
        let need = (cost(last, opts, counter) as f64 / (1.0 - opts.head_fraction)).ceil() as usize;
        if need <= avail && avail - err_reserve < need {
            err_reserve = avail - need;
        }
    }
    let mut layout = head_tail(lines, avail - err_reserve, opts, counter);
    let (errors, used, left_out) =
        pick_errors(lines, error_idx, &layout, err_reserve, opts, counter);
    if used < err_reserve {
        layout = head_tail(lines, avail - used, opts, counter);
        (layout.errors, _, layout.errors_left_out) =
            pick_errors(lines, error_idx, &layout, used, opts, counter);
    } else {
        (layout.errors, layout.errors_left_out) = (errors, left_out);
    }
    layout
}

fn cost(line: &str, opts: &CutOptions<'_>, counter: &TokenCounter) -> usize {
    opts.limit.measure(counter, line) + NEWLINE_COST
}

fn head_tail(
    lines: &[&str],
    budget: usize,
    opts: &CutOptions<'_>,
    counter: &TokenCounter,
) -> Layout {
    let head_budget = (budget as f64 * opts.head_fraction).floor() as usize;
    let tail_budget = budget - head_budget.min(budget);
    let n = lines.len();
    let mut layout = Layout::default();
    let mut used = 0;
    while layout.head < n {
        let c = cost(lines[layout.head], opts, counter);
        if used + c > head_budget {
            break;
        }
        used += c;
        layout.head += 1;
    }
    if layout.head == 0 && head_budget > NEWLINE_COST && n > 0 {
        let p = prefix_fitting(lines[0], head_budget - NEWLINE_COST, opts, counter);
        if !p.is_empty() {
            layout.head_partial = Some(p.to_owned());
        }
    }
    let floor = layout.head + usize::from(layout.head_partial.is_some());
    used = 0;
    while n - layout.tail > floor {
        let c = cost(lines[n - 1 - layout.tail], opts, counter);
        if used + c > tail_budget {
            break;
        }
        used += c;
        layout.tail += 1;
    }
    if layout.tail == 0 && tail_budget > NEWLINE_COST && n > layout.head {
        let s = suffix_fitting(lines[n - 1], tail_budget - NEWLINE_COST, opts, counter);
        if !s.is_empty() {
            layout.tail_partial = Some(s.to_owned());
        }
    }
    layout
}

/// Error lines strictly inside the removed middle that fit `budget`, in their order, the tokens they
/// take and how many distinct error lines of the middle are left out. Distinct
/// messages come first: one line of each message (lines equal once digits are ignored: the same
/// error at another time, line number or address) not already in the kept head or tail, then the
/// others, in order, while room is left; a line identical to one already in view is not repeated.
fn pick_errors(
    lines: &[&str],
    error_idx: &[usize],
    layout: &Layout,
    budget: usize,
    opts: &CutOptions<'_>,
    counter: &TokenCounter,
) -> (Vec<String>, usize, usize) {
    let n = lines.len();
    let lo = layout.head + usize::from(layout.head_partial.is_some());
    let hi = n - layout.tail - usize::from(layout.tail_partial.is_some());
    let (middle, outside): (Vec<usize>, Vec<usize>) =
        error_idx.iter().partition(|&&i| i >= lo && i < hi);
    let mut used = 0;
    let mut misses = 0;
    let mut chosen: Vec<(usize, String)> = Vec::new();
    // Lines and messages already in view (the kept head and tail, then each chosen line).
    let mut seen_lines: HashSet<&str> = outside.iter().map(|&i| lines[i].trim_end()).collect();
    let mut seen_messages: HashSet<String> =
        seen_lines.iter().map(|l| error_message_key(l)).collect();
    let mut distinct = 0;
    let mut later: Vec<usize> = Vec::new();
    let take = |i: usize, used: &mut usize, chosen: &mut Vec<(usize, String)>| -> bool {
        let kept = shorten(lines[i].trim_end());
        let c = cost(&kept, opts, counter);
        if *used + c > budget {
            return false;
        }
        *used += c;
        chosen.push((i, kept));
        true
    };
    for &i in &middle {
        let line = lines[i].trim_end();
        if !seen_lines.insert(line) {
            continue;
        }
        distinct += 1;
        if !seen_messages.insert(error_message_key(line)) {
            later.push(i);
        } else if misses < MAX_ERROR_MISSES && !take(i, &mut used, &mut chosen) {
            misses += 1;
        }
    }
    for i in later {
        if misses >= MAX_ERROR_MISSES {
            break;
        }
        if !take(i, &mut used, &mut chosen) {
            misses += 1;
        }
    }
    let left_out = distinct - chosen.len();
    chosen.sort_by_key(|(i, _)| *i);
    (chosen.into_iter().map(|(_, l)| l).collect(), used, left_out)
}

fn shorten(line: &str) -> String {
    match line.char_indices().nth(MAX_ERROR_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

fn assemble(
    lines: &[&str],
    layout: &Layout,
    text_tokens: usize,
    reference: &ItemId,
    counter: &TokenCounter,
) -> Cut {
    let n = lines.len();
    let head = lines[..layout.head].join("\n");
    let tail = lines[n - layout.tail..].join("\n");
    let mut kept_tokens = counter.count_text(&head) + counter.count_text(&tail);
    let mut before: Vec<&str> = Vec::new();
    if layout.head > 0 {
        before.push(&head);
    }
    if let Some(p) = &layout.head_partial {
        kept_tokens += counter.count_text(p);
        before.push(p);
    }
    let mut after: Vec<&str> = layout.errors.iter().map(String::as_str).collect();
    kept_tokens += layout
        .errors
        .iter()
        .map(|e| counter.count_text(e))
        .sum::<usize>();
    if let Some(s) = &layout.tail_partial {
        kept_tokens += counter.count_text(s);
        after.push(s);
    }
    if layout.tail > 0 {
        after.push(&tail);
    }
    let removed_lines = n - layout.head - layout.tail - layout.errors.len();
    let removed_tokens = text_tokens.saturating_sub(kept_tokens);
    let mark = marker(
        removed_tokens,
        removed_lines,
        layout.errors.len(),
        layout.errors_left_out,
        reference,
    );
    let mut pieces = before;
    pieces.push(&mark);
    pieces.extend(after);
    Cut {
        text: pieces.join("\n"),
        removed_tokens,
        removed_lines,
        kept_error_lines: layout.errors.len(),
    }
}

/// The marker alone when nothing else fits: with the count of the distinct error lines it drops
/// (`error_lines`) when that fits, else without it, else a shorter form, else a prefix of that.
fn marker_only(
    text_tokens: usize,
    total_lines: usize,
    error_lines: usize,
    opts: &CutOptions<'_>,
    counter: &TokenCounter,
) -> Cut {
    let counted = marker(text_tokens, total_lines, 0, error_lines, opts.reference);
    let full = marker(text_tokens, total_lines, 0, 0, opts.reference);
    let short = format!(
        "{MARKER_OPEN}output truncated; compactctl recall {}]",
        opts.reference
    );
    let fits = |m: &String| opts.limit.measure(counter, m) <= opts.limit.max;
    let text = if fits(&counted) {
        counted
    } else if fits(&full) {
        full
    } else if fits(&short) {
        short
    } else {
        prefix_fitting(&short, opts.limit.max, opts, counter).to_owned()
    };
    Cut {
        text,
        removed_tokens: text_tokens,
        removed_lines: total_lines,
        kept_error_lines: 0,
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn search_bound(budget: usize, unit: Unit) -> usize {
    match unit {
        Unit::Bytes => budget,
        Unit::Tokens => budget.saturating_mul(MAX_BYTES_PER_TOKEN),
    }
}

/// The longest prefix of `s` (on a char boundary) that measures at most `budget`.
fn prefix_fitting<'s>(
    s: &'s str,
    budget: usize,
    opts: &CutOptions<'_>,
    counter: &TokenCounter,
) -> &'s str {
    let (mut lo, mut hi) = (
        0usize,
        floor_boundary(s, search_bound(budget, opts.limit.unit)),
    );
    if opts.limit.measure(counter, &s[..hi]) <= budget {
        return &s[..hi];
    }
    // Invariant: s[..lo] fits, s[..hi] does not.
    while hi - lo > 1 {
        let mid = floor_boundary(s, lo + (hi - lo) / 2);
        if mid <= lo {
            break;
        }
        if opts.limit.measure(counter, &s[..mid]) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    &s[..lo]
}

/// The longest suffix of `s` (on a char boundary) that measures at most `budget`.
fn suffix_fitting<'s>(
    s: &'s str,
    budget: usize,
    opts: &CutOptions<'_>,
    counter: &TokenCounter,
) -> &'s str {
    let len = s.len();
    let (mut lo, mut hi) = (
        0usize,
        len - ceil_boundary(s, len.saturating_sub(search_bound(budget, opts.limit.unit))),
    );
    if opts.limit.measure(counter, &s[len - hi..]) <= budget {
        return &s[len - hi..];
    }
    // Invariant: a suffix of `lo` bytes fits, one of `hi` bytes does not.
    while hi - lo > 1 {
        let start = ceil_boundary(s, len - (lo + (hi - lo) / 2));
        let mid = len - start;
        if mid <= lo || mid >= hi {
            break;
        }
        if opts.limit.measure(counter, &s[start..]) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    &s[len - lo..]
}
