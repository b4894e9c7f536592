//! The `compact_recall` tool in each wire format's own shape (Chat Completions
//! `tools[].function`, a Responses function tool, an Anthropic tool with `input_schema`), and
//! adding it to a request the client's tools and `tool_choice` untouched.

use super::TOOL_NAME;
use crate::route::Route;
use serde_json::{json, Value};

/// What the model reads about the tool: what stubs are, when to call it, what it returns.
pub const DESCRIPTION: &str = "Returns the original of an earlier item that was moved out of \
this conversation to save context: a tool output replaced by a short stub that starts with \
`[compact:ref <id>]` (naming the tool, its arguments and the output's size), an output cut around \
a marker that says `recall <id>` or `compactctl recall <id>`, or an item that a \
`<compact-checkpoint>` record cites by its id in brackets. Call this with that id, in place of \
running `compactctl recall`, when you need the exact content and it is not elsewhere in the \
conversation: it is cheaper and safer than running the tool again, whose result may have changed \
since. The result is the original, unchanged and whole.";

/// What the `id` argument is.
const ID_DESCRIPTION: &str = "The id shown in the stub, marker or citation, e.g. `i0123456789` \
for `[compact:ref i0123456789]`.";

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"id": {"type": "string", "description": ID_DESCRIPTION}},
        "required": ["id"],
        "additionalProperties": false
    })
}

/// The tool's definition for `route`'s wire format (none for other routes).
pub fn definition(route: Route) -> Option<Value> {
    match route {
        Route::ChatCompletions => Some(json!({
            "type": "function",
            "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": schema()}
        })),
        Route::Responses => Some(json!({
            "type": "function", "name": TOOL_NAME, "description": DESCRIPTION,
            "parameters": schema()
        })),
        Route::Messages => Some(json!({
            "name": TOOL_NAME, "description": DESCRIPTION, "input_schema": schema()
        })),
        Route::CountTokens | Route::Other => None,
    }
}

/// The name of one entry of a request's `tools`, in any of the three shapes.
fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("name")
        .or_else(|| tool.get("function").and_then(|f| f.get("name")))
        .and_then(Value::as_str)
}

/// Whether the request already declares a tool named `compact_recall` (the client's own, or
/// ours).
pub fn declared(request: &Value) -> bool {
    request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| tool_name(t) == Some(TOOL_NAME)))
}

/// Adds the tool to `request` (after the client's tools). Does nothing when it is declared
/// already or when `tools` is there but not a list (the upstream judges that request as sent).
/// Returns whether it was added.
pub fn inject(route: Route, request: &mut Value) -> bool {
    let Some(definition) = definition(route) else {
        return false;
    };
    if declared(request) {
        return false;
    }
    let Some(object) = request.as_object_mut() else {
        return false;
    };
    let tools = object
        .entry("tools")
        .or_insert_with(|| Value::Array(Vec::new()));
    match tools.as_array_mut() {
        Some(list) => {
            list.push(definition);
            true
        }
        None => false,
    }
}

/// Takes the tool out of `request` again (every entry of that name: the proxy adds it only when
/// the client has none), and `tools` too when `created` (the client sent none).
pub fn remove(request: &mut Value, created: bool) {
    let Some(object) = request.as_object_mut() else {
        return;
    };
    if let Some(tools) = object.get_mut("tools").and_then(Value::as_array_mut) {
        tools.retain(|t| tool_name(t) != Some(TOOL_NAME));
    }
    if created {
        object.remove("tools");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_format_gets_its_own_shape_once_and_keeps_the_clients_tools() {
        let mut chat = json!({"tools": [{"type": "function", "function": {"name": "read"}}],
                              "tool_choice": "auto"});
        assert!(inject(Route::ChatCompletions, &mut chat));
        assert!(!inject(Route::ChatCompletions, &mut chat));
        assert_eq!(chat["tools"].as_array().unwrap().len(), 2);
        assert_eq!(chat["tools"][0]["function"]["name"], "read");
        assert_eq!(chat["tools"][1]["function"]["name"], TOOL_NAME);
        assert_eq!(
            chat["tools"][1]["function"]["parameters"]["required"],
            json!(["id"])
        );
        assert_eq!(chat["tool_choice"], "auto");

        let mut responses = json!({"input": []});
        assert!(inject(Route::Responses, &mut responses));
        assert_eq!(responses["tools"][0]["name"], TOOL_NAME);
        assert_eq!(responses["tools"][0]["type"], "function");

        let mut messages = json!({"tools": [{"name": TOOL_NAME, "input_schema": {}}]});
        assert!(declared(&messages));
        assert!(!inject(Route::Messages, &mut messages));
        let mut messages = json!({"messages": []});
        assert!(inject(Route::Messages, &mut messages));
        assert_eq!(
            messages["tools"][0]["input_schema"]["properties"]["id"]["type"],
            "string"
        );
        assert!(!inject(Route::Other, &mut json!({})));
        let before = json!({"messages": [], "tools": [{"name": "read"}]});
        let mut after = before.clone();
        assert!(inject(Route::Messages, &mut after));
        remove(&mut after, false);
        assert_eq!(after, before);
        remove(&mut messages, true);
        assert_eq!(messages, json!({"messages": []}));
        assert!(!inject(Route::Messages, &mut json!({"tools": "odd"})));
    }
}
