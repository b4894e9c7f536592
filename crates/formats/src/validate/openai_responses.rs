//! OpenAI Responses rules: every client tool call in `input` has exactly one output of its kind after
//! it, and every output has a call before it. Other items are opaque.

use super::{id_field, type_name, Found, Rule};
use serde_json::Value;
use std::collections::HashMap;

/// Call item types and the output type that answers each.
const CALLS: [(&str, &str); 3] = [
    ("function_call", "function_call_output"),
    ("custom_tool_call", "custom_tool_call_output"),
    ("local_shell_call", "local_shell_call_output"),
];

/// Message roles the Responses API accepts in `input`.
const ROLES: [&str; 4] = ["user", "assistant", "system", "developer"];

/// A call seen so far.
struct Call {
    /// Its item type.
    kind: &'static str,
    /// Path of the call item.
    path: String,
    /// Outputs seen for it.
    outputs: usize,
}

/// Checks a Responses request.
pub(super) fn check(request: &Value, found: &mut Found) {
    let Some(request) = super::request_object(request, found) else {
        return;
    };
    let items = match request.get("input") {
        // No input (a continuation by `previous_response_id`) or a plain string: nothing to pair.
        None | Some(Value::String(_)) => return,
        Some(Value::Array(items)) => items,
        Some(other) => {
            found.push(
                "/input",
                Rule::Malformed,
                format!("`input` is {}, not a string or a list", type_name(other)),
            );
            return;
        }
    };
    let mut calls: HashMap<&str, Call> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut triggers = 0;
    for (i, item) in items.iter().enumerate() {
        let path = format!("/input/{i}");
        let Some(o) = super::object_at(item, &path, "an input item", found) else {
            continue;
        };
        let ty = match o.get("type") {
            Some(Value::String(t)) => t.as_str(),
            // The short message form `{role, content}` has no type.
            None if o.contains_key("role") => "message",
            Some(other) => {
                found.push(
                    format!("{path}/type"),
                    Rule::Malformed,
                    format!("`type` is {}, not a string", type_name(other)),
                );
                continue;
            }
            None => {
                found.push(
                    &path,
                    Rule::Malformed,
                    "the item has neither `type` nor `role`",
                );
                continue;
            }
        };
        if ty == "message" {
            role(o.get("role"), &path, found);
            continue;
        }
        if ty == "compaction" || ty == "compaction_trigger" {
            super::compaction::responses_item(ty, o, &path, i, items.len(), triggers, found);
            triggers += usize::from(ty == "compaction_trigger");
            continue;
        }
        if let Some(&(kind, _)) = CALLS.iter().find(|(call, _)| *call == ty) {
            let id = match id_field(o, "call_id") {
                Ok(id) => id,
                Err(why) => {
                    found.push(&path, Rule::Malformed, format!("`{ty}` item: {why}"));
                    continue;
                }
            };
            if let Some(first) = calls.get(id) {
                found.push(
                    &path,
                    Rule::DuplicateCallId,
                    format!("call id `{id}` is already used at {}", first.path),
                );
                continue;
            }
            calls.insert(
                id,
                Call {
                    kind,
                    path,
                    outputs: 0,
                },
            );
            order.push(id);
            continue;
        }
        if let Some(&(call_kind, _)) = CALLS.iter().find(|(_, output)| *output == ty) {
            let id = match id_field(o, "call_id") {
                Ok(id) => id,
                Err(why) => {
                    found.push(&path, Rule::Malformed, format!("`{ty}` item: {why}"));
                    continue;
                }
            };
            match calls.get_mut(id) {
                None => found.push(
                    &path,
                    Rule::OrphanResult,
                    format!("`{ty}` for `{id}` has no call before it"),
                ),
                Some(call) if call.kind != call_kind => found.push(
                    &path,
                    Rule::OrphanResult,
                    format!(
                        "`{ty}` for `{id}` answers a `{}` (at {}), which needs a `{call_kind}_output`",
                        call.kind, call.path
                    ),
                ),
                Some(call) => {
                    call.outputs += 1;
                    if call.outputs > 1 {
                        found.push(
                            &path,
                            Rule::DuplicateResult,
                            format!("call `{id}` (at {}) is answered more than once", call.path),
                        );
                    }
                }
            }
        }
        // Anything else (reasoning, web_search_call, unknown types) is opaque.
    }
    for id in order {
        if let Some(call) = calls.get(id).filter(|c| c.outputs == 0) {
            found.push(
                &call.path,
                Rule::UnansweredCall,
                format!("`{}` `{id}` has no output after it", call.kind),
            );
        }
    }
}

/// A message's role must be one the API knows.
fn role(role: Option<&Value>, path: &str, found: &mut Found) {
    match role {
        Some(Value::String(r)) if ROLES.contains(&r.as_str()) => {}
        Some(Value::String(r)) => found.push(
            format!("{path}/role"),
            Rule::InvalidRole,
            format!("role `{r}` is not one of {}", ROLES.join(", ")),
        ),
        Some(other) => found.push(
            format!("{path}/role"),
            Rule::InvalidRole,
            format!("the role is {}, not a string", type_name(other)),
        ),
        None => found.push(path, Rule::InvalidRole, "the message has no `role`"),
    }
}
