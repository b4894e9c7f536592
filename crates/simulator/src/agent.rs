//! The scripted agent: a model that runs a task of shell commands through the client's own shell
//! tool, one command per turn, so that a real agent CLI (Claude Code, the Codex CLI) can be driven
//! through a multi-step tool session headless.
//!
//! It is stateless: which step comes next is read from the request. A turn that answers the model's
//! previous call (the last message is the result of a call whose id the simulator made) goes on with
//! the step after the one that call ran; a prompt that holds the script's trigger starts at step 0.
//! Anything else (a title request, the client's own compaction call, a request without the shell
//! tool) gets the ordinary reply. A step's number travels inside the call id the simulator issues
//! (`toolu_simstep<N>_<seq>`, `call_simstep<N>_<seq>`), so the client's retries, a proxy's
//! compaction of older turns and concurrent sessions all leave the sequence intact.
//!
//! A client that compacts on its own (Codex, Claude Code's `/compact`) asks the simulator for a
//! summary: the ordinary reply it gets carries a progress note ([`progress_note`]: the last step
//! whose call the request shows), and a turn whose latest user message holds that note (the
//! client's hand-off after its compaction) goes on with the step after it.
//!
//! Three steps are not commands: `@recall-stub`, `@recall-run` and `@recall-cited` recall the
//! first id a compaction's stub (`[compact:ref <id>]`), a `compactctl run` marker (`compactctl
//! recall <id>`), respectively a compaction's checkpoint (`[i0123456789]`; without one, a stub or
//! a reversible marker) of the request names: with the proxy's `compact_recall` tool when the request offers it, else
//! by running `compactctl recall <id>` through the shell tool.
//!
//! With `thinking` enabled in an Anthropic request, each reply opens with a `thinking` block whose
//! `signature` is a keyed hash of its text ([`signature`]); [`check_thinking`] refuses a request
//! that sends a block back changed, as the API does.

use crate::script::ScriptedReply;
use serde_json::{json, Value};

/// What the scripted agent does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentScript {
    /// Text whose presence in the latest user prompt starts the task.
    pub trigger: String,
    /// The shell commands run, one per turn.
    pub steps: Vec<String>,
    /// The final answer once every step ran.
    pub done: String,
}

/// Marker inside the call ids the simulator issues, followed by the step number.
pub const STEP_MARKER: &str = "simstep";

/// The shell tool a request offers, by client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellTool {
    /// Claude Code's `Bash {command, description}`.
    Bash,
    /// Codex's `exec_command {cmd}`.
    ExecCommand,
    /// The older Codex `shell {command: [argv]}`.
    Argv,
}

impl ShellTool {
    fn of(body: &Value) -> Option<ShellTool> {
        let tools = body.get("tools")?.as_array()?;
        let names = || {
            tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
        };
        if names().any(|n| n == "Bash") {
            Some(ShellTool::Bash)
        } else if names().any(|n| n == "exec_command") {
            Some(ShellTool::ExecCommand)
        } else if names().any(|n| n == "shell") {
            Some(ShellTool::Argv)
        } else {
            None
        }
    }

    fn call(self, step: usize, command: &str) -> (String, Value) {
        match self {
            ShellTool::Bash => (
                "Bash".to_owned(),
                json!({"command": command, "description": format!("Step {} of the task", step + 1)}),
            ),
            ShellTool::ExecCommand => ("exec_command".to_owned(), json!({"cmd": command})),
            ShellTool::Argv => (
                "shell".to_owned(),
                json!({"command": ["bash", "-lc", command]}),
            ),
        }
    }
}

/// The step number a call id issued by the simulator carries.
pub fn step_of_call_id(id: &str) -> Option<usize> {
    let at = id.find(STEP_MARKER)? + STEP_MARKER.len();
    let digits: String = id[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Where the agent is, from the request: `Some(n)` when step `n` is the one to run now.
fn next_step(script: &AgentScript, body: &Value) -> Option<usize> {
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        // Claude Code puts a `system` message after the first prompt: the turn is the last
        // message of the conversation's own roles.
        let last = messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) != Some("system"))?;
        if last.get("role").and_then(Value::as_str) != Some("user") {
            return None;
        }
        let blocks = last.get("content").and_then(Value::as_array);
        let answered = blocks
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
            .filter_map(step_of_call_id)
            .max();
        if let Some(step) = answered {
            return Some(step + 1);
        }
        return resumed(&last["content"])
            .or_else(|| prompt_starts(script, &last["content"]).then_some(0));
    }
    let input = body.get("input")?.as_array()?;
    // The newest output answering a call of ours, unless a user prompt came after it.
    for item in input.iter().rev() {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call_output" | "custom_tool_call_output") => {
                let id = item.get("call_id").and_then(Value::as_str)?;
                return step_of_call_id(id).map(|s| s + 1);
            }
            Some("message") | None if item.get("role").and_then(Value::as_str) == Some("user") => {
                return resumed(&item["content"])
                    .or_else(|| prompt_starts(script, &item["content"]).then_some(0));
            }
            _ => {}
        }
    }
    None
}

/// The step that recalls a stub's id (`@recall-stub`).
pub const RECALL_STUB_STEP: &str = "@recall-stub";
/// The step that recalls a `compactctl run` marker's id (`@recall-run`).
pub const RECALL_RUN_STEP: &str = "@recall-run";
/// The step that recalls the first id a compaction's checkpoint cites (`@recall-cited`).
pub const RECALL_CITED_STEP: &str = "@recall-cited";

/// For a recall step: the id to recall, and whether the request offers the recall tool.
fn recall_step(command: &str, body: &Value) -> Option<(String, bool)> {
    // The conversation only: the recall tool's own description names the markers too.
    let list = body.get("messages").or_else(|| body.get("input"));
    let text = list.map(Value::to_string).unwrap_or_default();
    let start = match command {
        RECALL_STUB_STEP => text.find("[compact:ref ")? + "[compact:ref ".len(),
        RECALL_RUN_STEP => text.find("compactctl recall ")? + "compactctl recall ".len(),
        // A checkpoint cites items by id in brackets (`[i0123456789]`, `[i01…, i02…]`); a
        // compaction that wrote none names ids in its stubs and markers (``recall `<id>` ``).
        RECALL_CITED_STEP => text
            .find("<compact-checkpoint")
            .and_then(|record| text[record..].find("[i").map(|at| record + at + 1))
            .or_else(|| {
                text.find("[compact:ref ")
                    .map(|at| at + "[compact:ref ".len())
            })
            .or_else(|| text.find("recall `").map(|at| at + "recall `".len()))?,
        _ => return None,
    };
    let id: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    let offered = body["tools"].as_array().is_some_and(|tools| {
        tools
            .iter()
            .any(|t| t["name"] == crate::script::RECALL_TOOL)
    });
    (!id.is_empty()).then_some((id, offered))
}

/// Opens the progress note of an ordinary reply while a task is under way.
pub const PROGRESS_OPEN: &str = "[scripted task: last step done ";

/// The progress note for a request that shows calls of the task: the highest step whose call id it
/// holds (in a call, a result or a note of an earlier summary).
pub fn progress_note(body: &Value) -> Option<String> {
    let text = body.to_string();
    let highest = text
        .match_indices(STEP_MARKER)
        .filter_map(|(at, _)| step_of_call_id(&text[at..]))
        .max();
    highest.map(|step| format!("{PROGRESS_OPEN}{STEP_MARKER}{step}]"))
}

/// The step after the one a progress note in `content` names.
fn resumed(content: &Value) -> Option<usize> {
    let text = match content {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let at = text.rfind(PROGRESS_OPEN)? + PROGRESS_OPEN.len();
    step_of_call_id(&text[at..]).map(|s| s + 1)
}

/// The prompt (a string or text parts) holds the trigger.
fn prompt_starts(script: &AgentScript, content: &Value) -> bool {
    if script.trigger.is_empty() {
        return false;
    }
    match content {
        Value::String(s) => s.contains(&script.trigger),
        Value::Array(parts) => parts.iter().any(|p| {
            p.get("text")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains(&script.trigger))
        }),
        _ => false,
    }
}

/// The thinking requested by an Anthropic request (`thinking.type` other than `disabled`).
fn wants_thinking(body: &Value) -> bool {
    body.get("messages").is_some()
        && body
            .get("thinking")
            .and_then(|t| t.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| t != "disabled")
}

/// The agent's reply to a request (its `step` set when it runs one), or `None` when the request is
/// not a step of its task.
pub fn reply(script: &AgentScript, body: &Value) -> Option<ScriptedReply> {
    let shell = ShellTool::of(body)?;
    let step = next_step(script, body)?;
    let thinking = wants_thinking(body);
    let Some(command) = script.steps.get(step) else {
        let mut done = ScriptedReply::text(script.done.clone());
        if thinking {
            done.thinking = Some(format!("Every step of the task ran ({step} in all)."));
        }
        return Some(done);
    };
    let recall = recall_step(command, body);
    let (name, arguments) = match &recall {
        Some((id, true)) => (crate::script::RECALL_TOOL.to_owned(), json!({ "id": id })),
        Some((id, false)) => shell.call(step, &format!("compactctl recall {id}")),
        None => shell.call(step, command),
    };
    // A model that calls the recall tool says nothing to the user meanwhile: the proxy answers
    // such a turn itself.
    let text = match recall {
        Some((_, true)) => String::new(),
        _ => format!("Step {}: `{command}`", step + 1),
    };
    let mut reply = ScriptedReply::text(text).with_tool_call(name, arguments);
    if thinking {
        reply.thinking = Some(format!(
            "Step {} of {}: the next command is `{command}`.",
            step + 1,
            script.steps.len()
        ));
    }
    reply.step = Some(step);
    Some(reply)
}

/// Key of the thinking signatures (fixed: a signature must check across simulator restarts).
const SIGNATURE_KEY: &[u8] = b"compact-sim thinking v1";

/// The signature of a thinking text: 128-bit FNV-1a of the key and the text, in hex.
pub fn signature(thinking: &str) -> String {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in SIGNATURE_KEY.iter().chain(thinking.as_bytes()) {
        h ^= u128::from(*b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    format!("simsig{h:032x}")
}

/// The first `thinking` block of an Anthropic request whose signature does not match its text, as
/// the API words it (`messages.N.content.M: ...`).
pub fn check_thinking(body: &Value) -> Option<String> {
    let messages = body.get("messages")?.as_array()?;
    for (m, msg) in messages.iter().enumerate() {
        let Some(blocks) = msg.get("content").and_then(Value::as_array) else {
            continue;
        };
        for (b, block) in blocks.iter().enumerate() {
            if block.get("type").and_then(Value::as_str) != Some("thinking") {
                continue;
            }
            let text = block.get("thinking").and_then(Value::as_str).unwrap_or("");
            let sig = block.get("signature").and_then(Value::as_str).unwrap_or("");
            if sig != signature(text) {
                return Some(format!(
                    "messages.{m}.content.{b}: Invalid `signature` in `thinking` block"
                ));
            }
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn script() -> AgentScript {
        AgentScript {
            trigger: "RUN-TASK".into(),
            steps: vec!["echo one".into(), "echo two".into()],
            done: "All done.".into(),
        }
    }

    fn bash_tools() -> Value {
        json!([{"name": "Bash", "input_schema": {}}, {"name": "Read", "input_schema": {}}])
    }

    #[test]
    fn an_anthropic_task_starts_at_the_trigger_and_follows_its_call_ids() {
        let start = json!({"tools": bash_tools(), "thinking": {"type": "adaptive"},
            "messages": [{"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": "please RUN-TASK"}]},
                         {"role": "system", "content": [{"type": "text", "text": "# Environment"}]}]});
        let first = reply(&script(), &start).unwrap();
        let step = first.step;
        assert_eq!(step, Some(0));
        assert_eq!(first.tool_calls[0].name, "Bash");
        assert_eq!(first.tool_calls[0].arguments["command"], "echo one");
        assert!(first.thinking.is_some());
        let next = json!({"tools": bash_tools(), "messages": [
            {"role": "user", "content": "please RUN-TASK"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_simstep0_4", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_simstep0_4", "content": "one"}]}]});
        let second = reply(&script(), &next).unwrap();
        let step = second.step;
        assert_eq!(step, Some(1));
        assert_eq!(second.tool_calls[0].arguments["command"], "echo two");
        assert!(second.thinking.is_none(), "no thinking asked for");
        let last = json!({"tools": bash_tools(), "messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_simstep1_9", "content": "two"}]}]});
        let done = reply(&script(), &last).unwrap();
        let step = done.step;
        assert_eq!((done.text.as_str(), step), ("All done.", None));
        assert!(done.tool_calls.is_empty());
    }

    #[test]
    fn requests_outside_the_task_get_no_agent_reply() {
        let title = json!({"messages": [{"role": "user", "content": "please RUN-TASK"}]});
        assert!(reply(&script(), &title).is_none(), "no shell tool");
        let other = json!({"tools": bash_tools(), "messages": [{"role": "user", "content": "Summarise the conversation"}]});
        assert!(reply(&script(), &other).is_none(), "no trigger");
        let foreign = json!({"tools": bash_tools(), "messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01abc", "content": "x"}]}]});
        assert!(
            reply(&script(), &foreign).is_none(),
            "a call the simulator did not make"
        );
    }

    #[test]
    fn a_responses_task_uses_exec_command_and_call_ids() {
        let tools = json!([{"type": "function", "name": "exec_command"}]);
        let start = json!({"tools": tools, "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "RUN-TASK now"}]}]});
        let first = reply(&script(), &start).unwrap();
        let step = first.step;
        assert_eq!(step, Some(0));
        assert_eq!(first.tool_calls[0].name, "exec_command");
        assert_eq!(first.tool_calls[0].arguments, json!({"cmd": "echo one"}));
        let next = json!({"tools": tools, "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "RUN-TASK now"}]},
            {"type": "function_call", "call_id": "call_simstep0_3", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_simstep0_3", "output": "one"}]});
        assert_eq!(reply(&script(), &next).unwrap().step, Some(1));
        let compacting = json!({"tools": [], "input": [{"type": "message", "role": "user", "content": "RUN-TASK now"}]});
        assert!(
            reply(&script(), &compacting).is_none(),
            "no tools: the client's own summary call"
        );
    }

    #[test]
    fn a_recall_step_uses_the_recall_tool_when_offered_and_the_cli_otherwise() {
        let script = AgentScript {
            trigger: "RUN-TASK".into(),
            steps: vec![RECALL_RUN_STEP.into(), RECALL_STUB_STEP.into()],
            done: "done".into(),
        };
        let body = |tools: Value| {
            json!({"tools": tools, "messages": [
                {"role": "user", "content": "RUN-TASK"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_simstep0_1_0", "name": "Bash", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_simstep0_1_0",
                    "content": "[… 900 tokens truncated; full output: compactctl recall r1a2b3c4d5]\n[compact:ref i9f8e7d6c5] Output\n<compact-checkpoint generation=\"1\">\n- Ran the tests [i1234abcd00, i5678]"}]}]})
        };
        let first =
            json!({"tools": bash_tools(), "messages": [{"role": "user", "content": "RUN-TASK"}]});
        let plain = reply(&script, &first).unwrap();
        assert_eq!(
            plain.tool_calls[0].arguments["command"], RECALL_RUN_STEP,
            "no marker yet: as a command"
        );
        let cli = reply(&script, &body(bash_tools())).unwrap();
        let step = cli.step;
        assert_eq!(step, Some(1));
        assert_eq!(
            cli.tool_calls[0].arguments["command"],
            "compactctl recall i9f8e7d6c5"
        );
        let mut tools = bash_tools();
        tools
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "compact_recall"}));
        let tool = reply(&script, &body(tools)).unwrap();
        assert_eq!(tool.tool_calls[0].name, "compact_recall");
        assert_eq!(tool.tool_calls[0].arguments, json!({"id": "i9f8e7d6c5"}));
        assert!(tool.text.is_empty(), "a recall-only turn");
        let cited = AgentScript {
            steps: vec![RECALL_CITED_STEP.into(), RECALL_CITED_STEP.into()],
            ..script.clone()
        };
        let cite = reply(&cited, &body(bash_tools())).unwrap();
        assert_eq!(
            cite.tool_calls[0].arguments["command"],
            "compactctl recall i1234abcd00"
        );
    }

    #[test]
    fn a_task_goes_on_after_the_clients_own_compaction() {
        let tools = json!([{"type": "function", "name": "exec_command"}]);
        let before = json!({"tools": [], "input": [
            {"type": "message", "role": "user", "content": "RUN-TASK"},
            {"type": "function_call", "call_id": "call_simstep0_3_0", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_simstep0_3_0", "output": "one"},
            {"type": "message", "role": "user", "content": "Summarise the conversation."}]});
        let note = progress_note(&before).unwrap();
        assert_eq!(note, "[scripted task: last step done simstep0]");
        let handoff = json!({"tools": tools, "input": [
            {"type": "message", "role": "user", "content": format!("A summary of the work so far: ... {note}")}]});
        let next = reply(&script(), &handoff).unwrap();
        let step = next.step;
        assert_eq!(step, Some(1));
        assert_eq!(next.tool_calls[0].arguments, json!({"cmd": "echo two"}));
        assert_eq!(progress_note(&json!({"input": []})), None);
    }

    #[test]
    fn a_changed_thinking_block_is_refused() {
        let text = "Step 1 of 2";
        let good = json!({"messages": [{"role": "assistant", "content": [
            {"type": "thinking", "thinking": text, "signature": signature(text)}]}]});
        assert_eq!(check_thinking(&good), None);
        let changed = json!({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [
            {"type": "text", "text": "t"},
            {"type": "thinking", "thinking": "Step 1 of 3", "signature": signature(text)}]}]});
        assert_eq!(
            check_thinking(&changed).as_deref(),
            Some("messages.1.content.1: Invalid `signature` in `thinking` block")
        );
        assert_eq!(step_of_call_id("toolu_simstep12_40"), Some(12));
        assert_eq!(step_of_call_id("toolu_01"), None);
    }
}
