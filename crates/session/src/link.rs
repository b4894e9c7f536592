//! Subagent sessions: a subagent (Claude Code's Task tool, an Agents SDK handoff, a LangGraph
//! subgraph) is its own session, with its own log, model, window and compactions, linked to the
//! session that started it by a `compact.session_linked` event (`parent`). Its result enters the
//! parent as a tool result, which write-time truncation handles like any other. The link is read
//! back from the log ([`parent_of`]), so every store and every process sees the same tree.

use crate::event::{EventData, EventKind, LinkedEvent};
use crate::record::Record;
use crate::{CompactManager, SessionError, Store, StoreError};

/// Links deeper than this are refused (and a walk up the tree stops there): no agent nests
/// subagents this deep, and a bound keeps a damaged log from looping.
pub const MAX_DEPTH: usize = 32;

/// The parent `session` is linked to, if any (its first `compact.session_linked` event).
pub fn parent_of(store: &dyn Store, session: &str) -> Result<Option<String>, StoreError> {
    Ok(store
        .read_kind(session, 0, "event", usize::MAX)?
        .into_iter()
        .find_map(|s| match s.record {
            Record::Event(e) if e.kind == EventKind::SessionLinked => {
                LinkedEvent::from_event(&e).map(|l| l.parent)
            }
            _ => None,
        }))
}

/// `nodes` (sessions, rows...) in tree order: each right below its parent, roots and orphans (whose
/// parent is not among them) in the given order, each with its depth. A loop a damaged log could
/// hold is listed at the end, at depth 0, and no walk goes deeper than [`MAX_DEPTH`].
pub fn tree_order<T>(
    nodes: &[T],
    id: impl Fn(&T) -> &str,
    parent: impl Fn(&T) -> Option<&str>,
) -> Vec<(&T, usize)> {
    let index: std::collections::HashMap<&str, usize> =
        nodes.iter().enumerate().map(|(i, n)| (id(n), i)).collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut roots = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        match parent(n).and_then(|p| index.get(p)) {
            Some(&p) if p != i => children[p].push(i),
            _ => roots.push(i),
        }
    }
    let mut seen = vec![false; nodes.len()];
    let mut out = Vec::with_capacity(nodes.len());
    let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        out.push((&nodes[i], depth));
        if depth < MAX_DEPTH {
            stack.extend(children[i].iter().rev().map(|&c| (c, depth + 1)));
        }
    }
    out.extend(
        nodes
            .iter()
            .zip(&seen)
            .filter(|(_, seen)| !**seen)
            .map(|(n, _)| (n, 0)),
    );
    out
}

impl CompactManager {
    /// Links `session` (a subagent's, created if new) to `parent`; true when the link was logged
    /// now, false when it already was. Refused with [`SessionError::InvalidParent`] for the session
    /// itself, a parent below it (a cycle), a tree deeper than [`MAX_DEPTH`], or a session already
    /// linked to another parent. The parent need not exist yet (a subagent may call first).
    pub fn link_parent(&self, session: &str, parent: &str) -> Result<bool, SessionError> {
        crate::limits::check_session_id(session)?;
        crate::limits::check_session_id(parent)?;
        let refuse = |why: &str| SessionError::InvalidParent {
            session: session.to_owned(),
            parent: parent.to_owned(),
            why: why.to_owned(),
        };
        if session == parent {
            return Err(refuse("a session cannot be its own parent"));
        }
        // Walk up from the parent: the session must not be among its ancestors.
        let mut at = parent.to_owned();
        for _ in 0..MAX_DEPTH {
            match parent_of(self.store().as_ref(), &at) {
                Ok(Some(up)) if up == session => {
                    return Err(refuse("the parent is a subagent of this session (a cycle)"))
                }
                Ok(Some(up)) => at = up,
                Ok(None) | Err(StoreError::UnknownSession(_)) => break,
                Err(e) => return Err(e.into()),
            }
        }
        if parent_of(self.store().as_ref(), &at).is_ok_and(|p| p.is_some()) {
            return Err(refuse(
                "the tree above the parent is deeper than 32 sessions",
            ));
        }
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        if slot.is_none() {
            self.store().create(session)?;
        }
        match parent_of(self.store().as_ref(), session)? {
            Some(p) if p == parent => return Ok(false),
            Some(p) => return Err(refuse(&format!("it is already linked to `{p}`"))),
            None => {}
        }
        let state = self.existing(session, &mut slot)?;
        let mut event = LinkedEvent {
            parent: parent.to_owned(),
        }
        .to_event();
        self.redact_events(session, state, std::slice::from_mut(&mut event));
        self.append(session, state, vec![Record::Event(event)])?;
        Ok(true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::{MemoryStore, SessionConfig};
    use compact_core::policy::Policy;
    use compact_core::tokens::{Encoding, TokenCounter};
    use std::sync::Arc;

    fn manager() -> CompactManager {
        let config = SessionConfig::new(
            Policy::for_window(32_000),
            TokenCounter::new(Encoding::O200kBase),
        );
        CompactManager::open(config, Arc::new(MemoryStore::new())).unwrap()
    }

    #[test]
    fn a_subagent_links_once_to_one_parent_and_never_in_a_cycle() {
        let m = manager();
        assert!(m.link_parent("task-1", "main").unwrap());
        assert!(!m.link_parent("task-1", "main").unwrap(), "already linked");
        assert_eq!(
            parent_of(m.store().as_ref(), "task-1").unwrap().as_deref(),
            Some("main")
        );
        assert_eq!(parent_of(m.store().as_ref(), "main").ok().flatten(), None);
        // A grandchild.
        assert!(m.link_parent("task-1a", "task-1").unwrap());
        for (child, parent, why) in [
            ("main", "main", "own parent"),
            ("main", "task-1a", "cycle"),
            ("task-1", "other", "already linked"),
        ] {
            match m.link_parent(child, parent) {
                Err(SessionError::InvalidParent { why: w, .. }) => {
                    assert!(w.contains(why), "{child} -> {parent}: {w}")
                }
                other => panic!("{child} -> {parent}: {other:?}"),
            }
        }
        // Listed as a tree: children below their parent, a loop at the end.
        let nodes = [
            ("b", Some("a")),
            ("a", None),
            ("x", Some("y")),
            ("y", Some("x")),
        ];
        let order: Vec<(&str, usize)> = tree_order(&nodes, |n| n.0, |n| n.1)
            .into_iter()
            .map(|(n, d)| (n.0, d))
            .collect();
        assert_eq!(order, [("a", 0), ("b", 1), ("x", 0), ("y", 0)]);
        // The link is one event in the child's log, nothing in the parent's.
        let events: Vec<_> = m
            .store()
            .read_kind("task-1", 0, "event", usize::MAX)
            .unwrap();
        assert_eq!(events.len(), 1);
    }
}
