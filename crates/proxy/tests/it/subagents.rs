//! Subagents through the proxy: a request naming its parent (`x-compact-parent-session`) runs in
//! its own session, linked to the parent's in the log; a link that would make a cycle, or move a
//! session to another parent, is refused in the client's error shape; a bad header is refused.

use crate::support::{Harness, Wire};
use compact_session::link::parent_of;
use compact_session::Store;
use compact_sim::ScriptedReply;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_runs_in_its_own_session_linked_to_its_parent() {
    let h = Harness::start().await;
    let wire = Wire::Chat;
    let send = |session: &'static str, parent: Option<&'static str>, text: &'static str| {
        let mut headers = vec![("x-compact-session", session)];
        if let Some(p) = parent {
            headers.push(("x-compact-parent-session", p));
        }
        let request = wire.first_request("sim-model", text, false);
        (headers, request)
    };
    h.sim.push_reply(ScriptedReply::text("Main agent here."));
    let (headers, request) = send("main", None, "Refactor the parser.");
    let reply = h.post(wire.path(), &headers, &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    for _ in 0..2 {
        // The same subagent twice: linked once.
        h.sim
            .push_reply(ScriptedReply::text("Subagent: found 3 call sites."));
        let (headers, request) = send("main/task-1", Some("main"), "Find the parser's call sites.");
        let reply = h.post(wire.path(), &headers, &request).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let store = h.store.clone();
    assert_eq!(
        parent_of(store.as_ref(), "main/task-1").unwrap().as_deref(),
        Some("main")
    );
    assert_eq!(parent_of(store.as_ref(), "main").unwrap(), None);
    let links = store
        .read_kind("main/task-1", 0, "event", usize::MAX)
        .unwrap()
        .into_iter()
        .filter(|s| {
            matches!(&s.record, compact_session::record::Record::Event(e)
                if e.kind == compact_session::EventKind::SessionLinked)
        })
        .count();
    assert_eq!(links, 1, "linked once");
    // Each has its own log: the subagent's items are not in the parent's.
    let main_items = store
        .read_kind("main", 0, "item", usize::MAX)
        .unwrap()
        .len();
    let sub_items = store
        .read_kind("main/task-1", 0, "item", usize::MAX)
        .unwrap()
        .len();
    assert!(main_items > 0 && sub_items > 0);

    // A cycle and a second parent are refused before anything goes upstream.
    let upstream = h.sim.requests().len();
    for (session, parent, why) in [
        ("main", "main/task-1", "cycle"),
        ("main/task-1", "other", "already linked"),
        ("main", "main", "own parent"),
    ] {
        let (headers, request) = send(session, Some(parent), "Again.");
        let reply = h.post(wire.path(), &headers, &request).await;
        assert_eq!(reply.status, 400, "{session} -> {parent}: {}", reply.text());
        assert!(reply.text().contains(why), "{}", reply.text());
    }
    let (headers, request) = send("main/task-2", Some(" "), "Bad header.");
    let reply = h.post(wire.path(), &headers, &request).await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert!(reply.text().contains("x-compact-parent-session"));
    assert_eq!(
        h.sim.requests().len(),
        upstream,
        "nothing refused went upstream"
    );
    h.stop().await;
}
