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

/// The stub text for `result` (answering `call`, if known), which cost `tokens` tokens.
pub fn reference_stub(call: Option<&ToolCall>, result: &Item, tokens: usize) -> String {
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
    let mut stub = format!(
        "{REFERENCE_PREFIX}{id}] Output of `{tool}` {args} ({tokens} tokens, {lines} lines) moved out of the context, unchanged in the session log; recall `{id}` if needed.",
        id = result.meta.id,
    );
    // A file read keeps its outline: the names it defines, so the agent still knows where things are.
    if let Some(path) = call.and_then(read_path) {
        let text = result.plain_text();
        let defined = crate::facts::symbols::definitions(&path, &text, OUTLINE_SYMBOLS);
        if !defined.is_empty() {
            stub.push_str(&format!("\nDefines: {}", defined.join(", ")));
        }
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
    fn a_successful_output_keeps_no_error_lines() {
        let text = "warning: deprecated hook\n3 files changed\nExit code: 0";
        let stub = reference_stub(None, &result(text, false), 40);
        assert!(!stub.contains("failed"), "{stub}");
        assert!(!stub.contains("deprecated"), "{stub}");
    }
}
