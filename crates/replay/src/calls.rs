//! Where the agent called the model: before each maximal run of assistant-side items.

use compact_core::model::{Item, ItemBody, Role};

/// True for the items a model call produces: assistant messages, tool calls and reasoning.
pub fn is_assistant_side(item: &Item) -> bool {
    match item.body() {
        ItemBody::Message(m) => m.role == Role::Assistant,
        ItemBody::ToolCall(_) | ItemBody::Reasoning(_) => true,
        // A compaction is the provider's output; a trigger is the client's request.
        ItemBody::ProviderCompaction(p) => !p.is_trigger(),
        ItemBody::ToolResult(_) | ItemBody::Checkpoint(_) | ItemBody::Opaque(_) => false,
    }
}

/// Indices of the items at which the agent called the model: the first item of each maximal run of
/// assistant-side items. The history of the call at index `i` is `items[..i]`.
pub fn call_points(items: &[Item]) -> Vec<usize> {
    let mut points = Vec::new();
    let mut previous_was_assistant = false;
    for (idx, item) in items.iter().enumerate() {
        let assistant = is_assistant_side(item);
        if assistant && !previous_was_assistant {
            points.push(idx);
        }
        previous_was_assistant = assistant;
    }
    points
}

/// End (exclusive) of the run of assistant-side items starting at `start`: what that call returned.
pub fn run_end(items: &[Item], start: usize) -> usize {
    let mut end = start;
    while end < items.len() && is_assistant_side(&items[end]) {
        end += 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use compact_core::model::{Arguments, ToolCall, ToolCallKind};

    fn call() -> Item {
        Item::new(ItemBody::ToolCall(ToolCall {
            call_id: "c".into(),
            name: "shell".into(),
            arguments: Arguments::Text("{}".into()),
            kind: ToolCallKind::Function,
            extra: Default::default(),
        }))
    }

    #[test]
    fn runs_of_assistant_items_are_one_call() {
        let items = vec![
            Item::text(Role::System, "s"),
            Item::text(Role::User, "u"),
            Item::text(Role::Assistant, "a"),
            call(),
            Item::text(Role::User, "u2"),
            Item::text(Role::Assistant, "a2"),
        ];
        assert_eq!(call_points(&items), vec![2, 5]);
        assert_eq!(run_end(&items, 2), 4);
        assert_eq!(run_end(&items, 5), 6);
    }
}
