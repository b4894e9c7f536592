//! Tier-1 reference stubs: the short text that replaces an old tool output, naming the tool, its
//! arguments in brief, the output's size and the id that restores it (`compactctl recall`). The stub
//! of a failed output keeps its status and the line that says why (the failure rule of
//! [`crate::facts::failure_of`]): a failure is what the agent must not repeat.

use crate::model::{Item, ItemBody, Part, ToolCall};

/// Opening of every reference stub (lets later passes recognise stubs and never reference them twice).
pub const REFERENCE_PREFIX: &str = "[compact:ref ";
/// Arguments are shown up to this many characters: enough to recognise a path or a command.
pub const ARGUMENTS_BRIEF_CHARS: usize = 120;

fn brief(text: &str, max_chars: usize) -> String {
    let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max_chars {
        return collapsed;
    }
    let mut out: String = collapsed.chars().take(max_chars).collect();
    out.push('…');
    out
}

/// At most this many names a referenced file read defines are kept in its stub.
pub const OUTLINE_SYMBOLS: usize = 16;

/// The names and files a stub keeps take at most one character per this many tokens of the output
/// (about a quarter of its tokens)...
pub const OUTPUT_TOKENS_PER_MENTION_CHAR: usize = 1;
/// ... and at most this many characters in all.
pub const MAX_MENTION_CHARS: usize = 600;
/// At most this many files another output mentions are kept in its stub.
pub const MENTIONED_PATHS: usize = 12;
/// At most this many code names another output mentions are kept in its stub.
pub const MENTIONED_NAMES: usize = 16;

/// The file `call` reads, when reading one file is what it does.
fn read_path(call: &ToolCall) -> Option<String> {
    let actions = crate::facts::classify(call);
    let mut reads = actions.iter().filter_map(|a| match a {
        crate::facts::Action::Read(p) => Some(p),
        _ => None,
    });
    let first = reads.next()?.clone();
    let modifies = actions
        .iter()
        .any(|a| matches!(a, crate::facts::Action::Modify(_)));
    (reads.next().is_none() && !modifies).then_some(first)
}

/// Why an output was moved out although nothing was lost: a newer item shows it (or shows that it is
/// out of date).
#[derive(Debug, Clone, Copy)]
pub struct Supersession<'a> {
    /// The id of the item that supersedes it.
    pub by: &'a crate::model::ItemId,
    /// What that item did (`read again later`, ...).
    pub reason: &'a str,
    /// True when the newer item shows everything this one did (a covering re-read, a rewrite, a
    /// re-run): the stub keeps no outline.
    pub covered: bool,
}

/// The stub text for `result` (answering `call`, if known), which cost `tokens` tokens.
pub fn reference_stub(call: Option<&ToolCall>, result: &Item, tokens: usize) -> String {
    stub_text(call, result, tokens, None)
}

/// The stub text for a superseded `result`: it names what supersedes it, and keeps no outline when
/// that item shows the same content.
pub fn superseded_stub(
    call: Option<&ToolCall>,
    result: &Item,
    tokens: usize,
    superseded: Supersession<'_>,
) -> String {
    stub_text(call, result, tokens, Some(superseded))
}

fn stub_text(
    call: Option<&ToolCall>,
    result: &Item,
    tokens: usize,
    superseded: Option<Supersession<'_>>,
) -> String {
    let (tool, lines) = match result.body() {
        ItemBody::ToolResult(r) => (
            r.tool_name
                .clone()
                .or_else(|| call.map(|c| c.name.clone()))
                .unwrap_or_else(|| "tool".to_owned()),
            r.parts
                .iter()
                .filter_map(Part::as_text)
                .map(|t| t.lines().count())
                .sum::<usize>(),
        ),
        _ => ("tool".to_owned(), 0),
    };
    let args = call
        .map(|c| brief(&c.arguments.to_text(), ARGUMENTS_BRIEF_CHARS))
        .unwrap_or_default();
    let id = &result.meta.id;
    let mut stub = match superseded {
        None => format!(
            "{REFERENCE_PREFIX}{id}] Output of `{tool}` {args} ({tokens} tokens, {lines} lines) moved out of the context, unchanged in the session log; recall `{id}` if needed."
        ),
        Some(s) => format!(
            "{REFERENCE_PREFIX}{id}] Output of `{tool}` {args} ({tokens} tokens, {lines} lines) superseded: {reason} (`{by}`); unchanged in the session log, recall `{id}` if needed.",
            reason = s.reason,
            by = s.by,
        ),
    };
    // A file read keeps its outline: the names it defines, so the agent still knows where things are.
    // Any other output keeps the files it mentions (a search's matches, a listing, a build's error
    // locations), and every output the code names it uses most: what the agent is likely to open or
    // name next. Together they take at most about a quarter of the output's tokens.
    let text = result.plain_text();
    // A superseded output whose newer copy shows the same keeps no outline.
    let mut room = if superseded.is_some_and(|s| s.covered) {
        0
    } else {
        (tokens / OUTPUT_TOKENS_PER_MENTION_CHAR).min(MAX_MENTION_CHARS)
    };
    if room > 0 {
        if let Some(path) = call.and_then(read_path) {
            let defined = crate::facts::symbols::definitions(&path, &text, OUTLINE_SYMBOLS);
            push_list(&mut stub, "Defines", &defined, &mut room);
        } else {
            let paths = crate::facts::symbols::mentioned_paths(&text, MENTIONED_PATHS);
            push_list(&mut stub, "Files", &paths, &mut room);
        }
        let names = crate::facts::symbols::code_names(&text, MENTIONED_NAMES);
        push_list(&mut stub, "Names", &names, &mut room);
    }
    // A failure keeps its status and the line that says why: what failed must stay known.
    match crate::facts::failure_of(result) {
        Some((Some(code), line)) => {
            stub.push_str(&format!("\nIt failed, exit code {code}: {line}"))
        }
        Some((None, line)) => stub.push_str(&format!("\nIt failed: {line}")),
        None => {}
    }
    stub
}

/// Appends `\n{label}: a, b, ...` with as many of `list` as fit in `room` characters (taken from it).
fn push_list(stub: &mut String, label: &str, list: &[String], room: &mut usize) {
    let mut line = String::new();
    for entry in list {
        let extra = entry.len() + if line.is_empty() { label.len() + 3 } else { 2 };
        if extra > *room {
            break;
        }
        *room -= extra;
        if line.is_empty() {
            line = format!("\n{label}: {entry}");
        } else {
            line.push_str(", ");
            line.push_str(entry);
        }
    }
    stub.push_str(&line);
}

/// True when `item` is a tool result whose text is already a reference stub.
pub fn is_reference(item: &Item) -> bool {
    match item.body() {
        ItemBody::ToolResult(r) => r
            .parts
            .first()
            .and_then(Part::as_text)
            .is_some_and(|t| t.starts_with(REFERENCE_PREFIX)),
        _ => false,
    }
}

/// The result item with its output replaced by `stub` (same id, call id and error flag).
pub fn with_stub(result: &Item, stub: &str) -> Item {
    let mut out = result.clone();
    if let ItemBody::ToolResult(r) = out.body_mut() {
        r.parts = vec![Part::text(stub)];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolCallKind, ToolResult};

    fn result(text: &str, is_error: bool) -> Item {
        Item::new(ItemBody::ToolResult(ToolResult {
            call_id: "c1".into(),
            tool_name: Some("bash".into()),
            parts: vec![Part::text(text)],
            is_error,
            kind: ToolCallKind::Function,
            content_was_string: true,
            extra: Default::default(),
        }))
        .with_id("r1")
    }

    #[test]
    fn a_failed_output_keeps_its_error_line() {
        let text = "Compiling quill v0.3.0\nerror[E0425]: cannot find value `rows` in this scope\n  --> src/page.rs:14:9\nwarning: unused import\nerror: could not compile `quill` due to 1 previous error\n";
        let stub = reference_stub(None, &result(text, true), 900);
        assert!(stub.starts_with(REFERENCE_PREFIX));
        assert!(stub.contains("It failed:"), "{stub}");
        assert!(stub.contains("error"), "{stub}");
        assert!(!stub.contains("warning: unused import"));
        // Detected from the exit code as well as from the flag.
        let exit = "Exit code: 2\nls: cannot access 'missing': No such file or directory";
        assert!(reference_stub(None, &result(exit, false), 40).contains("cannot access"));
    }

    #[test]
    fn a_file_read_keeps_its_outline() {
        let call = ToolCall::function(
            "c1",
            "Read",
            serde_json::json!({"file_path": "src/page.rs"}),
        );
        let text = "     1→pub struct Page {\n     2→    rows: Vec<Row>,\n     3→}\n     4→impl Page {\n     5→    pub fn render(&self) -> String {\n";
        let stub = reference_stub(Some(&call), &result(text, false), 900);
        assert!(stub.contains("recall `r1`"), "{stub}");
        assert!(stub.ends_with("Defines: Page, render()"), "{stub}");
        // A command's output has no outline.
        let run = ToolCall::function("c1", "Bash", serde_json::json!({"command": "cargo build"}));
        assert!(!reference_stub(Some(&run), &result(text, false), 900).contains("Defines"));
    }

    #[test]
    fn a_search_keeps_the_files_and_names_it_found_within_its_room() {
        let grep = ToolCall::function("c1", "Grep", serde_json::json!({"pattern": "parse_row"}));
        let text = "src/csv/reader.rs:14:    fn parse_row(&mut self) -> RowResult {\n\
                    src/csv/reader.rs:40:        let row = self.parse_row()?;\n\
                    tests/read_rows.rs:9:    assert_eq!(reader.parse_row().unwrap(), expected_row);\n\
                    see https://docs.rs/csv/latest/csv/ for details\n";
        let stub = reference_stub(Some(&grep), &result(text, false), 900);
        assert!(
            stub.contains("\nFiles: src/csv/reader.rs, tests/read_rows.rs\n"),
            "{stub}"
        );
        assert!(stub.contains("\nNames: parse_row, RowResult"), "{stub}");
        assert!(stub.contains("expected_row"), "{stub}");
        // The URL is not a file.
        assert!(!stub.contains("docs.rs/csv"), "{stub}");
        // A small output keeps what fits in about a quarter of its tokens: here nothing.
        let small = reference_stub(Some(&grep), &result(text, false), 12);
        assert!(
            !small.contains("Files:") && !small.contains("Names:"),
            "{small}"
        );
        // A middling one keeps whole entries only, never a cut one.
        let middle = reference_stub(Some(&grep), &result(text, false), 40);
        assert!(middle.contains("Files: src/csv/reader.rs"), "{middle}");
        assert!(!middle.contains("tests/read_rows.rs"), "{middle}");
    }

    #[test]
    fn a_successful_output_keeps_no_error_lines() {
        let text = "warning: deprecated hook\n3 files changed\nExit code: 0";
        let stub = reference_stub(None, &result(text, false), 40);
        assert!(!stub.contains("failed"), "{stub}");
        assert!(!stub.contains("deprecated"), "{stub}");
    }
}
