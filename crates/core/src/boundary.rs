//! Natural boundaries: points of a conversation where a piece of work has just ended, so that a
//! compaction there summarises finished work instead of cutting a tool chain in the middle.
//!
//! A request is at a natural boundary when its last item is:
//! - **a user message after the assistant's answer** ([`Boundary::TurnEnd`]): the previous turn is
//!   over and a new one starts;
//! - **the result of a plan / todo update that marks one more step done** ([`Boundary::StepDone`])
//!   than the previous update did;
//! - **the successful result of a check** (a test, build, type-check or lint command, see
//!   [`is_check_command`]) **run after files were changed** ([`Boundary::ChecksPassed`]).
//!
//! Read from the conversation alone, backwards from its end: one item for a turn's end; back to the
//! previous plan update, or to the previous run of the same check or the last change, only when the
//! request ends with a plan update or a passing check.

use crate::facts::{classify, command_key, failure_of, Action, StepStatus};
use crate::model::{Conversation, Item, ItemBody, Role, ToolCall};
use crate::partition::is_user_message;
use std::fmt;

/// Which natural boundary a request is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Boundary {
    /// A user message follows the assistant's finished turn.
    TurnEnd,
    /// A plan or todo update marked one more step done.
    StepDone,
    /// A check (tests, build, lint) passed after files were changed.
    ChecksPassed,
}

impl Boundary {
    /// Short name for reports and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Boundary::TurnEnd => "turn_end",
            Boundary::StepDone => "step_done",
            Boundary::ChecksPassed => "checks_passed",
        }
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Words of a command line that make it a check: it tests, builds, type-checks or lints the code.
const CHECK_WORDS: &[&str] = &[
    "test",
    "tests",
    "pytest",
    "build",
    "check",
    "clippy",
    "lint",
    "vet",
    "tsc",
    "mypy",
    "pyright",
    "ruff",
    "eslint",
    "jest",
    "vitest",
    "mocha",
    "rspec",
    "phpunit",
    "tox",
    "nox",
    "ctest",
    "typecheck",
];

/// Commands that only look at things, whatever words follow them (`grep -rn test src`).
const LOOKING: &[&str] = &[
    "grep", "rg", "cat", "less", "head", "tail", "ls", "find", "echo", "git", "sed", "awk", "wc",
];

/// True when `command` runs a check: one of its words (split on spaces, `:` and `/`, so `npm run
/// test:unit` and `./gradlew build` count) is a test, build, type-check or lint word, and it does not
/// start with a command that only looks at files (`grep`, `cat`, `git`...).
pub fn is_check_command(command: &str) -> bool {
    let key = command_key(command);
    let mut words = key
        .split(|c: char| c.is_whitespace() || c == ':' || c == '/')
        .filter(|w| !w.is_empty());
    match words.next() {
        Some(first) if LOOKING.contains(&first) => false,
        Some(first) => CHECK_WORDS.contains(&first) || words.any(|w| CHECK_WORDS.contains(&w)),
        None => false,
    }
}

fn is_assistant_side(item: &Item) -> bool {
    matches!(
        item.body(),
        ItemBody::Message(m) if m.role == Role::Assistant
    ) || matches!(item.body(), ItemBody::ToolResult(_) | ItemBody::ToolCall(_))
}

/// Items as two slices one after the other (a session's held view and the items new in a request),
/// read without joining them.
#[derive(Clone, Copy)]
struct Joined<'a> {
    head: &'a [Item],
    tail: &'a [Item],
}

impl<'a> Joined<'a> {
    fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    fn get(&self, i: usize) -> &'a Item {
        match i.checked_sub(self.head.len()) {
            Some(j) => &self.tail[j],
            None => &self.head[i],
        }
    }

    /// The items before `end`, newest first.
    fn before(self, end: usize) -> impl Iterator<Item = &'a Item> {
        (0..end).rev().map(move |i| self.get(i))
    }
}

/// The call `call_id` answers, searched backwards from `before`.
fn call_of<'a>(items: Joined<'a>, before: usize, call_id: &str) -> Option<&'a ToolCall> {
    items
        .before(before)
        .find_map(|i| i.as_tool_call().filter(|c| c.call_id == call_id))
}

fn done_steps(call: &ToolCall) -> Option<usize> {
    classify(call).into_iter().find_map(|a| match a {
        Action::Plan(steps, _) => Some(
            steps
                .iter()
                .filter(|s| s.status == StepStatus::Done)
                .count(),
        ),
        _ => None,
    })
}

fn command_in(actions: &[Action]) -> Option<&str> {
    actions.iter().find_map(|a| match a {
        Action::Command(c) => Some(c.as_str()),
        _ => None,
    })
}

/// The natural boundary `conv` ends at, if any (see the module documentation). Items the model does
/// not see are skipped.
pub fn natural_boundary(conv: &Conversation) -> Option<Boundary> {
    natural_boundary_after(&conv.items, &[])
}

/// [`natural_boundary`] of the items of `head` followed by those of `tail` (a session's held view and
/// a request's new items), without joining them.
pub fn natural_boundary_after(head: &[Item], tail: &[Item]) -> Option<Boundary> {
    let items = Joined { head, tail };
    let last = (0..items.len())
        .rev()
        .find(|&i| items.get(i).meta.visibility.model)?;
    let item = items.get(last);
    if is_user_message(item) {
        let before = items
            .before(last)
            .find(|i| i.meta.visibility.model && !is_user_message(i))?;
        return is_assistant_side(before).then_some(Boundary::TurnEnd);
    }
    let ItemBody::ToolResult(result) = item.body() else {
        return None;
    };
    let call = call_of(items, last, &result.call_id)?;
    if let Some(done) = done_steps(call) {
        // The previous plan update (any, even in an earlier turn) had fewer steps done.
        let previous = items
            .before(last)
            .filter_map(|i| i.as_tool_call())
            .filter(|c| c.call_id != call.call_id)
            .find_map(done_steps)
            .unwrap_or(0);
        return (done > previous).then_some(Boundary::StepDone);
    }
    let actions = classify(call);
    let command = command_in(&actions)?;
    if !is_check_command(command) || result.is_error || failure_of(item).is_some() {
        return None;
    }
    // Files changed since the previous run of a check (or since the start).
    let key = command_key(command);
    let mut changed = false;
    for i in items.before(last) {
        let Some(c) = i.as_tool_call() else { continue };
        if c.call_id == call.call_id {
            continue;
        }
        let actions = classify(c);
        if command_in(&actions).is_some_and(|k| command_key(k) == key) {
            break;
        }
        if actions.iter().any(|a| matches!(a, Action::Modify(_))) {
            changed = true;
            break;
        }
    }
    changed.then_some(Boundary::ChecksPassed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Item, ToolResult};
    use serde_json::json;

    fn call(id: &str, name: &str, args: serde_json::Value) -> Item {
        Item::new(ItemBody::ToolCall(ToolCall::function(id, name, args)))
    }
    fn result(id: &str, text: &str, is_error: bool) -> Item {
        let mut r = ToolResult::text(id, text);
        r.is_error = is_error;
        Item::new(ItemBody::ToolResult(r))
    }
    fn conv(items: Vec<Item>) -> Conversation {
        let mut c = Conversation::default();
        for i in items {
            c.push(i);
        }
        c
    }
    fn todo(id: &str, statuses: &[&str]) -> Item {
        let todos: Vec<_> = statuses
            .iter()
            .enumerate()
            .map(|(n, s)| json!({"content": format!("step {n}"), "status": s}))
            .collect();
        call(id, "TodoWrite", json!({ "todos": todos }))
    }

    #[test]
    fn a_user_message_after_the_answer_ends_a_turn() {
        let c = conv(vec![
            Item::text(Role::User, "fix the parser"),
            Item::text(Role::Assistant, "done: the parser accepts empty input"),
            Item::text(Role::User, "now the lexer"),
        ]);
        assert_eq!(natural_boundary(&c), Some(Boundary::TurnEnd));
        // Split anywhere between a held view and new items, the answer is the same.
        for at in 0..=c.items.len() {
            let (head, tail) = c.items.split_at(at);
            assert_eq!(natural_boundary_after(head, tail), Some(Boundary::TurnEnd));
        }
        // The first message of a session is no boundary: nothing was done yet.
        assert_eq!(
            natural_boundary(&conv(vec![Item::text(Role::User, "hi")])),
            None
        );
        // An assistant text in the middle of a chain is no boundary either.
        let mid = conv(vec![
            Item::text(Role::User, "fix it"),
            call("a", "Bash", json!({"command": "ls"})),
            result("a", "src", false),
        ]);
        assert_eq!(natural_boundary(&mid), None);
    }

    #[test]
    fn a_todo_update_that_completes_a_step_is_a_boundary() {
        let c = conv(vec![
            Item::text(Role::User, "do three things"),
            todo("t1", &["in_progress", "pending", "pending"]),
            result("t1", "ok", false),
            todo("t2", &["completed", "in_progress", "pending"]),
            result("t2", "ok", false),
        ]);
        assert_eq!(natural_boundary(&c), Some(Boundary::StepDone));
        // Re-stating the same progress is not.
        let mut again = c.clone();
        again.push(todo("t3", &["completed", "in_progress", "pending"]));
        again.push(result("t3", "ok", false));
        assert_eq!(natural_boundary(&again), None);
    }

    #[test]
    fn a_passing_check_after_an_edit_is_a_boundary() {
        let edit = call(
            "e",
            "Edit",
            json!({"file_path": "src/lib.rs", "old_string": "a", "new_string": "b"}),
        );
        let c = conv(vec![
            Item::text(Role::User, "fix the test"),
            edit.clone(),
            result("e", "updated", false),
            call(
                "t",
                "Bash",
                json!({"command": "cd /repo && cargo test -p core 2>&1 | tail -5"}),
            ),
            result("t", "test result: ok. 12 passed", false),
        ]);
        assert_eq!(natural_boundary(&c), Some(Boundary::ChecksPassed));
        for at in 0..=c.items.len() {
            let (head, tail) = c.items.split_at(at);
            assert_eq!(
                natural_boundary_after(head, tail),
                Some(Boundary::ChecksPassed)
            );
        }
        // A failing run is not.
        let mut failed = c.clone();
        failed.items.pop();
        failed.push(result("t", "error[E0308]: mismatched types", true));
        assert_eq!(natural_boundary(&failed), None);
        // Nor a passing run with nothing changed since the previous run of the same check.
        let mut rerun = c.clone();
        rerun.push(call("t2", "Bash", json!({"command": "cargo test -p core"})));
        rerun.push(result("t2", "test result: ok. 12 passed", false));
        assert_eq!(natural_boundary(&rerun), None);
        // Nor a command that is not a check.
        let listing = conv(vec![
            Item::text(Role::User, "look"),
            edit,
            result("e", "updated", false),
            call("l", "Bash", json!({"command": "ls -la"})),
            result("l", "src", false),
        ]);
        assert_eq!(natural_boundary(&listing), None);
    }

    #[test]
    fn check_commands_are_recognised_by_their_words() {
        for cmd in [
            "cargo test",
            "npm run test:unit",
            "./gradlew build",
            "python -m pytest -q tests/",
            "cd web && npx tsc --noEmit",
            "go vet ./...",
            "cargo clippy --all-targets",
        ] {
            assert!(is_check_command(cmd), "{cmd}");
        }
        for cmd in [
            "ls -la",
            "git status",
            "cat tests.txt",
            "grep -rn test src",
            "rg build",
        ] {
            assert!(!is_check_command(cmd), "{cmd}");
        }
    }
}
