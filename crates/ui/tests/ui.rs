//! The router over a store the session runtime filled: pages, escaping of planted markup, the diff
//! of a compaction, recall, search, bounds and errors, and the server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Conversation, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::{CompactManager, MemoryStore, SessionConfig, Store};
use compact_ui::{Ui, CONTENT_SECURITY_POLICY, MAX_QUERY_CHARS, MAX_TARGET_BYTES};
use serde_json::json;
use std::sync::Arc;

/// What an attacker plants in a transcript.
const HOSTILE: [&str; 4] = [
    "<script>window.__pwned=1</script>",
    "<img src=x onerror=\"window.__pwned=1\">",
    "\"><svg onload=window.__pwned=1>",
    "<a href=\"javascript:window.__pwned=1\">click</a>",
];

/// A session id that is itself markup.
const HOSTILE_ID: &str = "s<script>alert(1)</script>";

/// A store with one tool-using session (`tools`) compacted several times at a small window, and
/// every hostile string planted in its user messages, tool arguments and outputs, and in another
/// session's id.
fn store() -> Arc<MemoryStore> {
    filled().0
}

/// [`store`] and the manager that filled it (it holds the sessions in memory).
fn filled() -> (Arc<MemoryStore>, Arc<CompactManager>) {
    let store = Arc::new(MemoryStore::new());
    let config = SessionConfig::new(
        Policy::for_window(8_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store.clone()).unwrap();
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a coding agent."));
    conv.push(Item::text(
        Role::User,
        format!("Fix the build. {}", HOSTILE.join(" ")),
    ));
    for i in 0..24 {
        manager.preflight("tools", &conv).unwrap();
        let call = format!("call_{i}");
        conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
            &call,
            "bash",
            json!({"command": format!("cat src/file_{i}.rs {}", HOSTILE[i % 4])}),
        ))));
        let output: String = (0..60)
            .map(|l| {
                format!(
                    "line {l} of file_{i}: fn f_{i}_{l}() {{ {} }}\n",
                    HOSTILE[l % 4]
                )
            })
            .collect();
        conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(
            &call, output,
        ))));
        // What the agent says between calls (only a summary makes room for it: a review plans a
        // checkpoint).
        conv.push(Item::text(
            Role::Assistant,
            format!(
                "Read file {i}. {}",
                "Its handlers route each request through the shared router and return errors unchanged. "
                    .repeat(4)
            ),
        ));
    }
    manager.preflight("tools", &conv).unwrap();
    let mut other = Conversation::default();
    other.push(Item::text(Role::User, HOSTILE[0]));
    manager.preflight(HOSTILE_ID, &other).unwrap();
    (store, Arc::new(manager))
}

/// Asserts that no planted string reaches `page` as markup.
fn inert(page: &str) {
    for planted in HOSTILE.iter().chain([&HOSTILE_ID]) {
        assert!(!page.contains(planted), "`{planted}` reached the page raw");
    }
    for raw in [
        "<script>",
        "<img src=x",
        "<svg onload",
        "href=\"javascript:",
    ] {
        assert!(!page.contains(raw), "`{raw}` is in the page");
    }
}

fn ok(ui: &Ui, store: &dyn Store, path: &str, query: &str) -> String {
    let r = ui.handle(store, path, query);
    assert_eq!(r.status, 200, "{path}?{query}: {}", r.body);
    assert_eq!(r.content_type, "text/html; charset=utf-8");
    r.body
}

/// The compaction links of a session page (`/s/tools/compaction/N`).
fn compactions(page: &str) -> Vec<String> {
    let mut out: Vec<String> = page
        .split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .filter(|h| h.contains("/compaction/"))
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn every_page_shows_planted_markup_as_text() {
    let store = store();
    let ui = Ui::new("");
    let list = ok(&ui, store.as_ref(), "/", "");
    inert(&list);
    assert!(list.contains("s&lt;script&gt;alert(1)&lt;/script&gt;"));
    // The hostile id's link is percent-encoded.
    assert!(list.contains("/s/s%3Cscript%3Ealert%281%29%3C%2Fscript%3E"));
    inert(&ok(
        &ui,
        store.as_ref(),
        "/s/s%3Cscript%3Ealert%281%29%3C%2Fscript%3E",
        "",
    ));
    let session = ok(&ui, store.as_ref(), "/s/tools", "");
    inert(&session);
    let links = compactions(&session);
    assert!(!links.is_empty(), "the session compacted");
    for link in &links {
        let page = ok(&ui, store.as_ref(), link, "");
        inert(&page);
        assert!(page.contains("&lt;script&gt;") || page.contains("&lt;img"));
    }
    let search = ok(&ui, store.as_ref(), "/s/tools/search", "q=%3Cscript%3E");
    inert(&search);
    assert!(search.contains("<mark>&lt;script&gt;</mark>"));
}

#[test]
fn the_session_page_draws_the_sawtooth_and_the_diff_classifies_items() {
    let store = store();
    let ui = Ui::new("/admin/ui");
    let list = ok(&ui, store.as_ref(), "/", "");
    assert!(list.contains(r#"<a href="/admin/ui/s/tools">tools</a>"#));
    let session = ok(&ui, store.as_ref(), "/s/tools", "");
    assert!(session.contains(r#"class="chart sawtooth""#));
    assert!(
        session.contains(r#"data-points="25""#),
        "one point per call"
    );
    assert!(session.contains("window 8,000"));
    assert!(session.contains("trigger "));
    let markers = session.matches(r#"<g class="compaction""#).count();
    assert!(markers >= 1);
    assert_eq!(markers, compactions(&session).len());
    assert!(session.contains(r#"class="chart cache""#));
    let link = &compactions(&session)[0];
    assert!(link.starts_with("/admin/ui/s/tools/compaction/"));
    let diff = ok(
        &ui,
        store.as_ref(),
        link.trim_start_matches("/admin/ui"),
        "",
    );
    assert!(diff.contains(r#"id="diff""#));
    let kept = diff.matches(r#"data-fate="keep""#).count();
    let changed = diff.matches(r#"data-fate="reference""#).count()
        + diff.matches(r#"data-fate="summarize""#).count()
        + diff.matches(r#"data-fate="truncate""#).count()
        + diff.matches(r#"data-fate="drop""#).count();
    assert!(kept > 0 && changed > 0, "kept {kept}, changed {changed}");
    // Sizes are tokens: a truncated or referenced output is smaller after than before.
    assert!(diff.contains(r#"<th class="n">tokens before</th>"#));
    let sizes: Vec<(u64, u64)> = diff
        .split("<tr class=\"fate ")
        .skip(1)
        .filter(|row| row.starts_with("reference") || row.starts_with("truncate"))
        .filter_map(|row| {
            let cells: Vec<&str> = row.split(r#"<td class="n">"#).skip(1).collect();
            let number = |c: &str| c.split('<').next()?.replace(',', "").parse::<u64>().ok();
            Some((number(cells.first()?)?, number(cells.get(1)?)?))
        })
        .collect();
    assert!(!sizes.is_empty(), "some output was referenced or truncated");
    assert!(
        sizes.iter().all(|(before, after)| after < before),
        "{sizes:?}"
    );
    if diff.contains(r#"data-fate="reference""#) {
        // A stub's id links to the original.
        assert!(diff.contains(r#"<a class="recall" href="/admin/ui/s/tools/item/"#));
    }
    if diff.contains(r#"class="checkpoint""#) {
        assert!(diff.contains("generation "));
    }
}

#[test]
fn a_stub_opens_its_original() {
    let store = store();
    let ui = Ui::new("");
    let session = ok(&ui, store.as_ref(), "/s/tools", "");
    let mut recalls = Vec::new();
    for link in compactions(&session) {
        let page = ok(&ui, store.as_ref(), &link, "");
        recalls.extend(
            page.split(r#"<a class="recall" href=""#)
                .skip(1)
                .filter_map(|s| s.split('"').next())
                .map(str::to_owned),
        );
    }
    assert!(
        !recalls.is_empty(),
        "some output was referenced or truncated"
    );
    let original = ok(&ui, store.as_ref(), &recalls[0], "");
    assert!(original.contains(r#"id="original""#));
    assert!(original.contains("line 0 of file_"));
    inert(&original);
}

#[test]
fn errors_and_bounds() {
    let store = store();
    let ui = Ui::new("");
    assert_eq!(ui.handle(store.as_ref(), "/s/nope", "").status, 404);
    assert_eq!(
        ui.handle(store.as_ref(), "/s/tools/item/nope", "").status,
        404
    );
    assert_eq!(
        ui.handle(store.as_ref(), "/s/tools/compaction/99999", "")
            .status,
        404
    );
    assert_eq!(
        ui.handle(store.as_ref(), "/s/tools/compaction/x", "")
            .status,
        404
    );
    assert_eq!(ui.handle(store.as_ref(), "/nowhere", "").status, 404);
    assert_eq!(ui.handle(store.as_ref(), "/s/bad%2", "").status, 400);
    let long = "a".repeat(MAX_TARGET_BYTES + 1);
    assert_eq!(
        ui.handle(store.as_ref(), &format!("/s/{long}"), "").status,
        414
    );
    let query = format!("q={}", "x".repeat(MAX_QUERY_CHARS + 1));
    assert_eq!(
        ui.handle(store.as_ref(), "/s/tools/search", &query).status,
        400
    );
    // The live search's fragment holds the results alone.
    let part = ok(
        &ui,
        store.as_ref(),
        "/s/tools/search",
        "q=line&part=results",
    );
    assert!(part.starts_with(r#"<ol id="results">"#) && !part.contains("<html"));
    // Search results are capped.
    let search = ok(&ui, store.as_ref(), "/s/tools/search", "q=line");
    assert!(search.matches("<li>").count() <= compact_ui::pages::MAX_RESULTS);
    // The list filter is applied on the server too.
    let filtered = ok(&ui, store.as_ref(), "/", "q=tool");
    assert!(filtered.contains("1 of 2 sessions"));
    // Assets are built in.
    let js = ui.handle(store.as_ref(), "/assets/ui.js", "");
    assert_eq!(js.status, 200);
    assert!(js.content_type.starts_with("text/javascript"));
    assert!(js
        .headers()
        .contains(&("content-security-policy", CONTENT_SECURITY_POLICY)));
    assert!(!CONTENT_SECURITY_POLICY.contains("unsafe-inline"));
}

#[test]
fn the_server_answers_get_with_the_policy_and_refuses_other_methods() {
    let store: Arc<dyn Store> = store();
    runtime().block_on(async move {
        let server = Served::start(Ui::new(""), store).await;
        let ask = |request: String| server.ask(request);
        let page =
            ask("GET /s/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".into())
                .await;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page
            .to_ascii_lowercase()
            .contains("content-security-policy: default-src 'none'"));
        assert!(page.contains("class=\"chart sawtooth\""));
        let post = ask(
            "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .into(),
        )
        .await;
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        // A name rebound to 127.0.0.1 by another site gets nothing.
        let rebound = ask(
            "GET /s/tools HTTP/1.1\r\nHost: evil.example:8788\r\nConnection: close\r\n\r\n".into(),
        )
        .await;
        assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");
        assert!(!rebound.contains("sawtooth"));
        server.stop().await;
    });
}

#[test]
fn subagents_are_listed_below_their_parent_and_link_to_it() {
    let store = Arc::new(MemoryStore::new());
    let config = SessionConfig::new(
        Policy::for_window(32_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store.clone()).unwrap();
    for id in ["zz-main", "aa-task", "mm-other"] {
        let mut conv = Conversation::default();
        conv.push(Item::text(Role::User, format!("work of {id}")));
        manager.preflight(id, &conv).unwrap();
    }
    // A parent id that is markup is shown as text.
    manager.link_parent("aa-task", "zz-main").unwrap();
    manager.link_parent("mm-other", HOSTILE_ID).unwrap();
    let ui = Ui::new("");
    let list = ok(&ui, store.as_ref(), "/", "");
    inert(&list);
    let row = |id: &str| list.find(&format!(">{id}</a>")).unwrap();
    // The subagent's row comes right after its parent's, marked, with a link to the parent.
    assert!(row("zz-main") < row("aa-task"), "{list}");
    let between = &list[row("zz-main")..row("aa-task")];
    assert_eq!(between.matches("<tr").count(), 1, "{between}");
    assert!(between.contains("↳ "));
    assert!(list.contains(r#"<a class="parent" href="/s/zz-main">zz-main</a>"#));
    let page = ok(&ui, store.as_ref(), "/s/aa-task", "");
    assert!(page.contains("subagent of"), "{page}");
    let other = ok(&ui, store.as_ref(), "/s/mm-other", "");
    inert(&other);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// `compact_ui::serve` of a UI on a free loopback port.
struct Served {
    addr: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), compact_ui::ServeError>>,
}

impl Served {
    async fn start(ui: Ui, store: Arc<dyn Store>) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(compact_ui::serve(listener, ui, store, async {
            let _ = stopped.await;
        }));
        Served { addr, stop, task }
    }

    /// Sends one raw request (`Connection: close`) and reads the whole answer.
    async fn ask(&self, request: String) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }
}

/// A UI with a review desk over [`filled`]'s store, compacting with the manager that holds the
/// sessions.
fn reviewing() -> (Arc<MemoryStore>, Arc<CompactManager>, Ui) {
    let (store, manager) = filled();
    let desk = {
        let manager = Arc::clone(&manager);
        compact_ui::Review::new(move |_: &str| Ok(Arc::clone(&manager)))
    };
    let ui = Ui::new("").with_review(Arc::new(desk));
    (store, manager, ui)
}

/// The proposal key of a review page.
fn proposal_key(page: &str) -> String {
    page.split("name=\"proposal\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the review page holds a proposal key")
        .to_owned()
}

fn form(key: &str, checkpoint: &str) -> String {
    format!(
        "proposal={}&checkpoint={}",
        compact_ui::html::encode_segment(key),
        compact_ui::html::encode_segment(checkpoint)
    )
}

/// The checkpoint texts of the session's logged views, latest last.
fn logged_checkpoints(store: &dyn Store, id: &str) -> Vec<String> {
    use compact_session::record::Record;
    let mut out = Vec::new();
    for s in store.read(id, 0).unwrap() {
        if let Record::View(v) = &s.record {
            for entry in &v.entries {
                if let compact_session::record::ViewEntry::Inline(item) = entry {
                    if let ItemBody::Checkpoint(c) = item.body() {
                        out.push(c.text.clone());
                    }
                }
            }
        }
    }
    out
}

#[test]
fn a_reviewed_compaction_applies_the_checkpoint_as_edited_and_leads_to_its_diff() {
    let (store, _manager, ui) = reviewing();
    let session = ok(&ui, store.as_ref(), "/s/tools", "");
    assert!(session.contains("id=\"review-link\" href=\"/s/tools/review\""));
    let before = compactions(&session).len();

    let review = ok(&ui, store.as_ref(), "/s/tools/review", "");
    inert(&review);
    assert!(
        review.contains("<textarea id=\"checkpoint\" name=\"checkpoint\""),
        "{review}"
    );
    assert!(review.contains("<table id=\"plan\">"));
    assert!(
        review.contains("class=\"fate summarize\""),
        "the plan summarises"
    );
    let key = proposal_key(&review);
    assert_eq!(key.len(), 32);
    // Proposing changes nothing.
    assert_eq!(
        compactions(&ok(&ui, store.as_ref(), "/s/tools", "")).len(),
        before
    );

    // The browser sends the text area with CRLF line ends.
    let edited = "# Reviewed\r\n- The build is fixed; next: run the tests.\r\n";
    let applied = ui.handle_post(store.as_ref(), "/s/tools/review", &form(&key, edited));
    assert_eq!(applied.status, 303, "{}", applied.body);
    let location = applied.location.clone().unwrap();
    assert!(location.starts_with("/s/tools/compaction/"), "{location}");
    assert_eq!(
        logged_checkpoints(store.as_ref(), "tools")
            .last()
            .map(String::as_str),
        Some("# Reviewed\n- The build is fixed; next: run the tests.")
    );
    let diff = ok(&ui, store.as_ref(), &location, "");
    assert!(diff.contains("The build is fixed; next: run the tests."));
    assert!(diff.contains("review"), "the diff names the trigger");
    // The session page lists it, linked to its diff.
    let listed = compactions(&ok(&ui, store.as_ref(), "/s/tools", ""));
    assert_eq!(listed.len(), before + 1);
    assert!(listed.contains(&location), "{listed:?}");

    // A proposal applies once.
    let again = ui.handle_post(store.as_ref(), "/s/tools/review", &form(&key, edited));
    assert_eq!(again.status, 410, "{}", again.body);
}

#[test]
fn a_review_is_refused_once_the_session_moved_on_and_a_bad_edit_can_be_corrected() {
    let (store, manager, ui) = reviewing();
    let key = proposal_key(&ok(&ui, store.as_ref(), "/s/tools/review", ""));
    // Another session's page cannot apply it.
    let elsewhere = ui.handle_post(
        store.as_ref(),
        &format!("/s/{}/review", compact_ui::html::encode_segment(HOSTILE_ID)),
        &form(&key, "x"),
    );
    assert_eq!(elsewhere.status, 410);
    // An empty edit is refused, and the proposal waits to be corrected.
    let empty = ui.handle_post(store.as_ref(), "/s/tools/review", &form(&key, " \r\n "));
    assert_eq!(empty.status, 422, "{}", empty.body);
    assert!(empty.body.contains("empty"));
    // A forged key is not a proposal.
    let forged = ui.handle_post(
        store.as_ref(),
        "/s/tools/review",
        &form(&"0".repeat(32), "x"),
    );
    assert_eq!(forged.status, 410);

    // A call reaches the session first.
    let mut conv = (*manager.view("tools").unwrap()).clone();
    conv.push(Item::text(Role::User, "One more thing."));
    manager.preflight("tools", &conv).unwrap();
    let checkpoints = logged_checkpoints(store.as_ref(), "tools").len();
    let outdated = ui.handle_post(store.as_ref(), "/s/tools/review", &form(&key, "# Late"));
    assert_eq!(outdated.status, 409, "{}", outdated.body);
    assert!(outdated.body.contains("href=\"/s/tools/review\""));
    assert_eq!(
        logged_checkpoints(store.as_ref(), "tools").len(),
        checkpoints
    );

    // Without a desk there is no review.
    let plain = Ui::new("");
    assert_eq!(
        plain.handle(store.as_ref(), "/s/tools/review", "").status,
        404
    );
    assert_eq!(
        plain
            .handle_post(store.as_ref(), "/s/tools/review", &form(&key, "x"))
            .status,
        405
    );
    assert!(!ok(&plain, store.as_ref(), "/s/tools", "").contains("review-link"));
}

#[test]
fn the_server_applies_a_review_form_from_its_own_origin_only() {
    let (store, _manager, ui) = reviewing();
    let store: Arc<dyn Store> = store;
    runtime().block_on(async move {
        let server = Served::start(ui, store).await;
        let ask = |request: String| server.ask(request);
        let host = format!("127.0.0.1:{}", server.addr.port());
        let page = ask(format!(
            "GET /s/tools/review HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        ))
        .await;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        let body = form(&proposal_key(&page), "# From the page");
        let post = |origin: String, content_type: &'static str| {
            let body = body.clone();
            let host = host.clone();
            async move {
                ask(format!(
                    "POST /s/tools/review HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                ))
                .await
            }
        };
        // Another site cannot make the browser plan one (it may call an LLM summariser).
        let planted = ask(format!(
            "GET /s/tools/review HTTP/1.1\r\nHost: {host}\r\nSec-Fetch-Site: cross-site\r\nConnection: close\r\n\r\n"
        ))
        .await;
        assert!(planted.starts_with("HTTP/1.1 403"), "{planted}");
        let foreign = post("https://evil.example".into(), "application/x-www-form-urlencoded").await;
        assert!(foreign.starts_with("HTTP/1.1 403"), "{foreign}");
        let json = post(format!("http://{host}"), "application/json").await;
        assert!(json.starts_with("HTTP/1.1 415"), "{json}");
        let done = post(format!("http://{host}"), "application/x-www-form-urlencoded").await;
        assert!(done.starts_with("HTTP/1.1 303"), "{done}");
        assert!(
            done.to_ascii_lowercase().contains("location: /s/tools/compaction/"),
            "{done}"
        );
        server.stop().await;
    });
}

/// A store that counts the reads of records (`read` and `read_kind`).
struct Counting {
    inner: Arc<MemoryStore>,
    reads: std::sync::atomic::AtomicUsize,
}

impl Counting {
    fn reads(&self) -> usize {
        self.reads.swap(0, std::sync::atomic::Ordering::SeqCst)
    }
    fn count(&self) {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Store for Counting {
    fn create(&self, session: &str) -> Result<bool, compact_session::StoreError> {
        self.inner.create(session)
    }
    fn version(&self, session: &str) -> Result<u64, compact_session::StoreError> {
        self.inner.version(session)
    }
    fn append(
        &self,
        session: &str,
        expected: u64,
        records: Vec<compact_session::record::Record>,
    ) -> Result<u64, compact_session::StoreError> {
        self.inner.append(session, expected, records)
    }
    fn read(
        &self,
        session: &str,
        after: u64,
    ) -> Result<Vec<compact_session::record::Stored>, compact_session::StoreError> {
        self.count();
        self.inner.read(session, after)
    }
    fn read_kind(
        &self,
        session: &str,
        after: u64,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<compact_session::record::Stored>, compact_session::StoreError> {
        self.count();
        self.inner.read_kind(session, after, kind, limit)
    }
    fn find_items(
        &self,
        session: &str,
        item_id: &str,
    ) -> Result<Vec<compact_session::record::Stored>, compact_session::StoreError> {
        self.inner.find_items(session, item_id)
    }
    fn sessions(&self) -> Result<Vec<String>, compact_session::StoreError> {
        self.inner.sessions()
    }
    fn list_sessions(
        &self,
    ) -> Result<Vec<compact_session::SessionSummary>, compact_session::StoreError> {
        self.inner.list_sessions()
    }
    fn delete_session(&self, session: &str) -> Result<bool, compact_session::StoreError> {
        self.inner.delete_session(session)
    }
}

#[test]
fn the_list_reads_again_only_the_sessions_whose_log_moved_on() {
    let (inner, manager) = filled();
    let store = Counting {
        inner,
        reads: Default::default(),
    };
    let ui = Ui::new("");
    let first = ok(&ui, &store, "/", "");
    assert!(store.reads() >= 2, "both sessions read");
    // Nothing changed: the rows come from the cache, the page is the same.
    assert_eq!(ok(&ui, &store, "/", ""), first);
    assert_eq!(store.reads(), 0);
    // One session moves on: only it is read again, and its row shows the new call.
    let mut conv = (*manager.view("tools").unwrap()).clone();
    conv.push(Item::text(Role::User, "One more thing."));
    manager.preflight("tools", &conv).unwrap();
    let after = ok(&ui, &store, "/", "");
    let reads = store.reads();
    assert!((1..=2).contains(&reads), "{reads} reads for one session");
    assert_ne!(after, first);
    // A deleted session leaves the list.
    store.delete_session("tools").unwrap();
    assert!(!ok(&ui, &store, "/", "").contains("href=\"/s/tools\""));
}
