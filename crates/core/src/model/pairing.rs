//! Tool call / result pairing by call id: which calls are answered, which calls and results are orphans.

use super::Item;
use std::collections::HashMap;

/// The pairing of tool calls with their results, by call id, as item indices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairing {
    /// `(call index, result index)` for every answered call, in call order.
    pub pairs: Vec<(usize, usize)>,
    /// Calls with no result anywhere after them.
    pub orphan_calls: Vec<usize>,
    /// Results whose call does not appear before them.
    pub orphan_results: Vec<usize>,
}

impl Pairing {
    /// Computes the pairing of `items`. A result pairs with the most recent unanswered call with the
    /// same id that precedes it; a second result for an already answered call is an orphan.
    pub fn of(items: &[Item]) -> Pairing {
        let mut open: HashMap<&str, usize> = HashMap::new();
        let mut out = Pairing::default();
        for (idx, item) in items.iter().enumerate() {
            if let Some(call) = item.as_tool_call() {
                if let Some(prev) = open.insert(call.call_id.as_str(), idx) {
                    // A duplicate id: the earlier call can no longer be answered unambiguously.
                    out.orphan_calls.push(prev);
                }
            } else if let Some(result) = item.as_tool_result() {
                match open.remove(result.call_id.as_str()) {
                    Some(call_idx) => out.pairs.push((call_idx, idx)),
                    None => out.orphan_results.push(idx),
                }
            }
        }
        out.orphan_calls.extend(open.into_values());
        out.orphan_calls.sort_unstable();
        out.pairs.sort_unstable();
        out
    }

    /// Number of orphans of either side.
    pub fn orphan_count(&self) -> usize {
        self.orphan_calls.len() + self.orphan_results.len()
    }

    /// The index of the partner of item `idx` (call -> result, result -> call), if paired.
    pub fn partner(&self, idx: usize) -> Option<usize> {
        self.pairs.iter().find_map(|&(c, r)| {
            if c == idx {
                Some(r)
            } else if r == idx {
                Some(c)
            } else {
                None
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Arguments, ItemBody, ToolCall, ToolCallKind, ToolResult};

    fn call(id: &str) -> Item {
        Item::new(ItemBody::ToolCall(ToolCall {
            call_id: id.into(),
            name: "bash".into(),
            arguments: Arguments::Text("{}".into()),
            kind: ToolCallKind::Function,
            extra: Default::default(),
        }))
    }
    fn result(id: &str) -> Item {
        Item::new(ItemBody::ToolResult(ToolResult {
            call_id: id.into(),
            tool_name: None,
            parts: vec![],
            is_error: false,
            kind: ToolCallKind::Function,
            content_was_string: true,
            extra: Default::default(),
        }))
    }

    #[test]
    fn pairs_and_orphans() {
        let items = vec![call("a"), result("x"), call("b"), result("a"), result("a")];
        let p = Pairing::of(&items);
        assert_eq!(p.pairs, vec![(0, 3)]);
        assert_eq!(p.orphan_calls, vec![2]);
        assert_eq!(p.orphan_results, vec![1, 4]);
        assert_eq!(p.partner(3), Some(0));
        assert_eq!(p.orphan_count(), 3);
    }
}
