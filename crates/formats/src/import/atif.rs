//! Harbor / Terminal-Bench trajectories in the Agent Trajectory Interchange Format (ATIF,
//! `trajectory.json`): one JSON object `{schema_version, session_id, agent, steps[], notes?,
//! final_metrics?, extra?}` whose steps are `{step_id, timestamp?, source, message, reasoning_content?,
//! tool_calls?[], observation?{results[]}, metrics?, ...}`.
//!
//! - A step's `message` (a string, or content parts `{type: text|image}` since ATIF-v1.6) becomes a
//!   system, user or assistant message by `source`; an empty message gives no item. An agent step's
//!   `reasoning_content` becomes a reasoning item before its message; its `tool_calls` become function
//!   calls (`tool_call_id`, `function_name`, `arguments`). The items of one agent step (one model
//!   response) share an envelope.
//! - The step's `observation.results` answer its calls: a result with `source_call_id` answers that
//!   call; results without one answer the calls still open, in order. A step with fewer unlabelled
//!   results than open calls (Terminus-2 records one terminal screen after a batch of keystrokes) gives
//!   its results to the last calls and an empty result to the earlier ones, which ran but have no output
//!   of their own. Results are placed in call order. A result with no call to answer (observations of
//!   steps without calls, system-step observations) is feedback the harness passes back to the model:
//!   a user message. A `source_call_id` that is not one of the step's calls stays a tool result with
//!   that id (a warning when no call so far has it).
//! - A result failed when it says so (`is_error`, or an `exit_code` / `returncode` that is not 0, in
//!   the result or its `extra`) or its content opens with mini-swe-agent's `<returncode>N</returncode>`
//!   with N not 0. ATIF has no status field of its own, so other results (Terminus-2's terminal
//!   screens) never count as errors.
//! - `agent.model_name` goes to `Conversation::extra["model"]` and `agent.tool_definitions` (OpenAI
//!   function definitions) to the declared tools. Unknown fields of tool calls, results and content
//!   parts are kept in their `extra`; `metrics`, the step's `model_name`, `reasoning_effort`,
//!   `is_copied_context` and `extra`, and the root's `session_id`, `notes` and `final_metrics`
//!   describe the run rather than what the model saw and are not carried (as Claude Code's `usage`).
//!
//! Item ids: `s<step_id>`, `.k` appended when a step yields several items (`p<position>` for a step
//! whose `step_id` is missing or repeated). A malformed step is an error naming the step's line and
//! column and the JSON pointer of the bad field (in lenient mode: a warning, the step is skipped).

use super::source::{strip_bom, Ctx, Locator};
use super::{item_ids, stamp, ImportError, Location};
use crate::wire::{decode_tools, type_name};
use compact_core::model::{
    Arguments, Conversation, Envelope, Extra, Format, Item, ItemBody, Media, MediaSource, Message,
    Part, PartKind, Reasoning, Role, ToolCall, ToolCallKind, ToolResult,
};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// Members of a tool call the importer models; the others are kept in [`ToolCall::extra`].
const CALL_FIELDS: [&str; 3] = ["tool_call_id", "function_name", "arguments"];
/// Members of an observation result the importer models; the others are kept in
/// [`ToolResult::extra`].
const RESULT_FIELDS: [&str; 2] = ["source_call_id", "content"];
/// Members of a text content part the importer models.
const TEXT_PART_FIELDS: [&str; 2] = ["type", "text"];
/// Keys under which writers record a command's exit status on a result or in its `extra`.
const EXIT_KEYS: [&str; 3] = ["exit_code", "returncode", "return_code"];
/// mini-swe-agent's observation template opens with the command's exit status in this tag.
const RETURNCODE_OPEN: &str = "<returncode>";
/// Closing tag of [`RETURNCODE_OPEN`].
const RETURNCODE_CLOSE: &str = "</returncode>";

/// True for an ATIF document: a `steps` array with a `schema_version` naming ATIF, or with an `agent`
/// object and steps that all have a `source`.
pub(crate) fn is_atif(o: &serde_json::Map<String, Value>) -> bool {
    let Some(Value::Array(steps)) = o.get("steps") else {
        return false;
    };
    let versioned = o
        .get("schema_version")
        .and_then(Value::as_str)
        .is_some_and(|v| v.starts_with("ATIF"));
    versioned
        || (o.get("agent").is_some_and(Value::is_object)
            && !steps.is_empty()
            && steps
                .iter()
                .all(|s| s.get("source").is_some_and(Value::is_string)))
}

/// Imports a trajectory.
pub(crate) fn import(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Conversation, ImportError> {
    let doc = ctx.parse_document(bytes)?;
    let start = ctx.at_offset(bytes, bytes.len() - strip_bom(bytes).len());
    let not_atif = |what: &str| ImportError::Malformed {
        at: start.clone(),
        what: format!("not an ATIF trajectory: {what}"),
    };
    let Value::Object(root) = &doc else {
        return Err(not_atif(&format!(
            "expected an object, got {}",
            type_name(&doc)
        )));
    };
    let steps = match root.get("steps") {
        Some(Value::Array(steps)) => steps,
        Some(other) => {
            return Err(not_atif(&format!(
                "`/steps`: expected an array, got {}",
                type_name(other)
            )))
        }
        None => return Err(not_atif("no `steps` array")),
    };
    let mut st = State::default();
    if let Some(agent) = root.get("agent") {
        if let Some(model) = agent.get("model_name").filter(|m| m.is_string()) {
            st.conv.extra.insert("model".to_owned(), model.clone());
        }
        if let Some(Value::Array(tools)) = agent.get("tool_definitions") {
            st.conv.tools = decode_tools(tools);
        }
    }
    ctx.stats.sessions = 1;
    let offsets = step_offsets(bytes);
    let mut locator = Locator::new(bytes);
    for (idx, step) in steps.iter().enumerate() {
        ctx.stats.records_read += 1;
        let at = offsets
            .get(idx)
            .map_or_else(|| start.clone(), |&o| locator.at(ctx.file, o));
        match parse_step(step, &format!("/steps/{idx}")) {
            Ok(parsed) => st.push(parsed, idx, at, ctx),
            Err(what) => ctx.problem(at, what)?,
        }
    }
    Ok(st.conv)
}

/// Byte offsets of the elements of the root's `steps` array (empty when the document does not have
/// that shape), so a problem names the line and column of its step.
fn step_offsets(bytes: &[u8]) -> Vec<usize> {
    let body = strip_bom(bytes);
    let Ok(root) = serde_json::from_slice::<HashMap<String, &RawValue>>(body) else {
        return Vec::new();
    };
    let Some(steps) = root.get("steps") else {
        return Vec::new();
    };
    let Ok(elements) = serde_json::from_str::<Vec<&RawValue>>(steps.get()) else {
        return Vec::new();
    };
    // Raw values borrow from `bytes`: their distance from its start is their offset.
    let base = bytes.as_ptr() as usize;
    elements
        .iter()
        .map(|e| (e.get().as_ptr() as usize).saturating_sub(base))
        .collect()
}

/// One step, checked and decoded, before any item is made from it.
struct Step<'v> {
    step_id: Option<u64>,
    timestamp: Option<&'v str>,
    role: Role,
    message: Vec<Part>,
    reasoning: Option<String>,
    calls: Vec<ToolCall>,
    results: Vec<Observed>,
}

/// One observation result.
struct Observed {
    call_id: Option<String>,
    parts: Vec<Part>,
    was_string: bool,
    failed: bool,
    extra: Extra,
}

/// Decodes step `v` at JSON pointer `ptr`; the error names the pointer of the bad field.
fn parse_step<'v>(v: &'v Value, ptr: &str) -> Result<Step<'v>, String> {
    let Value::Object(o) = v else {
        return Err(format!(
            "`{ptr}`: expected a step object, got {}",
            type_name(v)
        ));
    };
    let role = match o.get("source").and_then(Value::as_str) {
        Some("system") => Role::System,
        Some("user") => Role::User,
        Some("agent") => Role::Assistant,
        _ => {
            let got = o.get("source").map_or_else(
                || "nothing".to_owned(),
                |s| match s {
                    Value::String(s) => format!("\"{s}\""),
                    other => type_name(other).to_owned(),
                },
            );
            return Err(format!(
                "`{ptr}/source`: expected \"system\", \"user\" or \"agent\", got {got}"
            ));
        }
    };
    let (message, _) = content(o.get("message"), &format!("{ptr}/message"))?;
    let reasoning = match o.get("reasoning_content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
        Some(other) => return Err(expected(ptr, "reasoning_content", "a string", other)),
    };
    let calls = match o.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| tool_call(c, &format!("{ptr}/tool_calls/{i}")))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(expected(ptr, "tool_calls", "an array", other)),
    };
    let results = match o.get("observation") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(obs)) => match obs.get("results") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(results)) => results
                .iter()
                .enumerate()
                .map(|(i, r)| observed(r, &format!("{ptr}/observation/results/{i}")))
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(expected(
                    &format!("{ptr}/observation"),
                    "results",
                    "an array",
                    other,
                ))
            }
        },
        Some(other) => return Err(expected(ptr, "observation", "an object", other)),
    };
    Ok(Step {
        step_id: o.get("step_id").and_then(Value::as_u64),
        timestamp: o.get("timestamp").and_then(Value::as_str),
        role,
        message,
        reasoning,
        calls,
        results,
    })
}

/// The message for member `key` of the object at `ptr` that is not what was `wanted`.
fn expected(ptr: &str, key: &str, wanted: &str, got: &Value) -> String {
    format!("`{ptr}/{key}`: expected {wanted}, got {}", type_name(got))
}

/// A tool call object.
fn tool_call(v: &Value, ptr: &str) -> Result<ToolCall, String> {
    let Value::Object(o) = v else {
        return Err(format!(
            "`{ptr}`: expected a tool call object, got {}",
            type_name(v)
        ));
    };
    let string = |key: &str| match o.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(expected(ptr, key, "a string", other)),
        None => Err(format!("`{ptr}/{key}`: missing")),
    };
    let arguments = match o.get("arguments") {
        None | Some(Value::Null) => Arguments::Json(Value::Object(Extra::new())),
        Some(Value::String(s)) => Arguments::Text(s.clone()),
        Some(args @ Value::Object(_)) => Arguments::Json(args.clone()),
        Some(other) => return Err(expected(ptr, "arguments", "an object", other)),
    };
    Ok(ToolCall {
        call_id: string("tool_call_id")?,
        name: string("function_name")?,
        arguments,
        kind: ToolCallKind::Function,
        extra: rest(o, &CALL_FIELDS),
    })
}

/// An observation result object.
fn observed(v: &Value, ptr: &str) -> Result<Observed, String> {
    let Value::Object(o) = v else {
        return Err(format!(
            "`{ptr}`: expected a result object, got {}",
            type_name(v)
        ));
    };
    let call_id = match o.get("source_call_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(expected(ptr, "source_call_id", "a string", other)),
    };
    let (mut parts, was_string) = content(o.get("content"), &format!("{ptr}/content"))?;
    if parts.is_empty() {
        parts.push(Part::text(""));
    }
    Ok(Observed {
        call_id,
        failed: failed(o),
        parts,
        was_string,
        extra: rest(o, &RESULT_FIELDS),
    })
}

/// The members of `o` other than `known`.
fn rest(o: &serde_json::Map<String, Value>, known: &[&str]) -> Extra {
    o.iter()
        .filter(|(k, _)| !known.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Content: a string, or an array of content parts; nothing gives no parts. Also whether it was a
/// plain string.
fn content(v: Option<&Value>, ptr: &str) -> Result<(Vec<Part>, bool), String> {
    match v {
        None | Some(Value::Null) => Ok((Vec::new(), true)),
        Some(Value::String(s)) if s.is_empty() => Ok((Vec::new(), true)),
        Some(Value::String(s)) => Ok((vec![Part::text(s.clone())], true)),
        Some(Value::Array(parts)) => {
            let parts = parts
                .iter()
                .enumerate()
                .map(|(i, p)| content_part(p, &format!("{ptr}/{i}")))
                .collect::<Result<_, _>>()?;
            Ok((parts, false))
        }
        Some(other) => Err(format!(
            "`{ptr}`: expected a string or an array of content parts, got {}",
            type_name(other)
        )),
    }
}

/// One content part: `{type: "text", text}`, `{type: "image", source: {media_type, path}}`; a part
/// of another type is kept opaque.
fn content_part(v: &Value, ptr: &str) -> Result<Part, String> {
    let Value::Object(o) = v else {
        return match v {
            Value::String(s) => Ok(Part::text(s.clone())),
            other => Err(format!(
                "`{ptr}`: expected a content part object, got {}",
                type_name(other)
            )),
        };
    };
    match o.get("type").and_then(Value::as_str) {
        Some("text") => match o.get("text") {
            Some(Value::String(t)) => Ok(Part {
                kind: PartKind::Text(t.clone()),
                extra: rest(o, &TEXT_PART_FIELDS),
            }),
            Some(other) => Err(expected(ptr, "text", "a string", other)),
            None => Err(format!("`{ptr}/text`: missing")),
        },
        Some("image") => {
            let source = o.get("source");
            let field = |key: &str| {
                source
                    .and_then(|s| s.get(key))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let Some(path) = field("path").or_else(|| field("url")) else {
                return Err(format!("`{ptr}/source/path`: missing"));
            };
            let mut extra = rest(o, &["type", "source"]);
            if let Some(Value::Object(s)) = source {
                let more = rest(s, &["path", "url", "media_type"]);
                if !more.is_empty() {
                    extra.insert("source".to_owned(), Value::Object(more));
                }
            }
            Ok(Part {
                kind: PartKind::Image(Media {
                    source: MediaSource::Url(path),
                    mime: field("media_type"),
                    ..Media::default()
                }),
                extra,
            })
        }
        _ => Ok(Part {
            kind: PartKind::Opaque(v.clone()),
            extra: Extra::new(),
        }),
    }
}

/// Whether a result reports failure (see the module documentation).
fn failed(o: &serde_json::Map<String, Value>) -> bool {
    let extra = o.get("extra").and_then(Value::as_object);
    let member = |key: &str| o.get(key).or_else(|| extra.and_then(|x| x.get(key)));
    if let Some(flag) = member("is_error").and_then(Value::as_bool) {
        return flag;
    }
    if let Some(code) = EXIT_KEYS
        .iter()
        .find_map(|k| member(k).and_then(Value::as_i64))
    {
        return code != 0;
    }
    let Some(text) = o.get("content").and_then(Value::as_str) else {
        return false;
    };
    text.trim_start()
        .strip_prefix(RETURNCODE_OPEN)
        .and_then(|rest| rest.split_once(RETURNCODE_CLOSE))
        .and_then(|(code, _)| code.trim().parse::<i64>().ok())
        .is_some_and(|code| code != 0)
}

/// Importer state.
#[derive(Default)]
struct State {
    conv: Conversation,
    /// Item id bases given so far.
    bases: HashSet<String>,
    /// Call ids seen so far.
    calls: HashSet<String>,
    /// Envelope counter (one per agent step).
    messages: u32,
}

impl State {
    /// Makes the items of a decoded step.
    fn push(&mut self, step: Step<'_>, idx: usize, at: Location, ctx: &mut Ctx<'_>) {
        let mut bodies: Vec<ItemBody> = Vec::new();
        if let Some(text) = step.reasoning {
            bodies.push(ItemBody::Reasoning(Reasoning {
                text: Some(text),
                ..Reasoning::default()
            }));
        }
        if !step.message.is_empty() {
            bodies.push(ItemBody::Message(Message {
                role: step.role,
                parts: step.message,
            }));
        }
        // Reasoning, message and calls are the model's response; results are not.
        let response = bodies.len() + step.calls.len();
        for c in &step.calls {
            self.calls.insert(c.call_id.clone());
        }
        let answers = pair(&step.calls, &step.results);
        let mut results: Vec<Option<Observed>> = step.results.into_iter().map(Some).collect();
        let mut failures = 0usize;
        let mut answered: Vec<ItemBody> = Vec::new();
        for (call, answer) in step.calls.iter().zip(&answers) {
            let r = answer.and_then(|ri| results[ri].take());
            let (parts, was_string, failed, extra) = match r {
                Some(r) => (r.parts, r.was_string, r.failed, r.extra),
                None => (vec![Part::text("")], true, false, Extra::new()),
            };
            failures += usize::from(failed);
            answered.push(ItemBody::ToolResult(ToolResult {
                call_id: call.call_id.clone(),
                tool_name: None,
                parts,
                is_error: failed,
                kind: ToolCallKind::Function,
                content_was_string: was_string,
                extra,
            }));
        }
        bodies.extend(step.calls.into_iter().map(ItemBody::ToolCall));
        bodies.extend(answered);
        // What answers none of the step's calls, in file order.
        for r in results.into_iter().flatten() {
            failures += usize::from(r.failed);
            match r.call_id {
                Some(call_id) => {
                    if !self.calls.contains(&call_id) {
                        ctx.warn(
                            at.clone(),
                            format!("a result answers `{call_id}`, which no tool call has"),
                        );
                    }
                    bodies.push(ItemBody::ToolResult(ToolResult {
                        call_id,
                        tool_name: None,
                        parts: r.parts,
                        is_error: r.failed,
                        kind: ToolCallKind::Function,
                        content_was_string: r.was_string,
                        extra: r.extra,
                    }));
                }
                None => bodies.push(ItemBody::Message(Message {
                    role: Role::User,
                    parts: r.parts,
                })),
            }
        }
        ctx.stats.errors += failures;
        if bodies.is_empty() {
            ctx.skip("empty_step");
            return;
        }
        let base = self.base(step.step_id, idx, &at, ctx);
        let env = (step.role == Role::Assistant).then(|| {
            self.messages += 1;
            Arc::new(Envelope {
                message: self.messages - 1,
                ..Envelope::default()
            })
        });
        let ids = item_ids(&base, bodies.len());
        for (k, (body, id)) in bodies.into_iter().zip(ids).enumerate() {
            let mut item = Item::new(body);
            stamp(&mut item, id, step.timestamp, Format::Atif);
            if k < response {
                item.meta.envelope = env.clone();
            }
            self.conv.items.push(item);
        }
    }

    /// The id base of a step: `s<step_id>`, or `p<position>` when the id is missing or taken.
    fn base(
        &mut self,
        step_id: Option<u64>,
        idx: usize,
        at: &Location,
        ctx: &mut Ctx<'_>,
    ) -> String {
        let by_position = format!("p{}", idx + 1);
        let base = match step_id {
            Some(id) => {
                let base = format!("s{id}");
                if self.bases.contains(&base) {
                    ctx.warn(
                        at.clone(),
                        format!(
                            "step_id {id} repeats an earlier step's; its items are `{by_position}`"
                        ),
                    );
                    by_position
                } else {
                    base
                }
            }
            None => by_position,
        };
        self.bases.insert(base.clone());
        base
    }
}

/// For each call of a step, the index of the result that answers it (`None`: an empty result).
/// Labelled results answer their call; unlabelled ones answer the open calls in order, or the last of
/// them when there are fewer results than open calls.
fn pair(calls: &[ToolCall], results: &[Observed]) -> Vec<Option<usize>> {
    let mut answers: Vec<Option<usize>> = vec![None; calls.len()];
    // The calls of each id, in order: a labelled result answers the first one still open (an
    // index, so a step of many parallel calls stays linear).
    let mut open_by_id: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (ci, call) in calls.iter().enumerate() {
        open_by_id
            .entry(call.call_id.as_str())
            .or_default()
            .push_back(ci);
    }
    let mut unlabelled = Vec::new();
    for (ri, r) in results.iter().enumerate() {
        match &r.call_id {
            Some(id) => {
                if let Some(ci) = open_by_id
                    .get_mut(id.as_str())
                    .and_then(VecDeque::pop_front)
                {
                    answers[ci] = Some(ri);
                }
            }
            None => unlabelled.push(ri),
        }
    }
    let open: Vec<usize> = (0..calls.len())
        .filter(|&ci| answers[ci].is_none())
        .collect();
    let skip = open.len().saturating_sub(unlabelled.len());
    for (&ci, &ri) in open[skip..].iter().zip(&unlabelled) {
        answers[ci] = Some(ri);
    }
    answers
}
