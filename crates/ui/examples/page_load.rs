//! Page-load benchmark of the web view (`bench/ui.sh`): fills a SQLite store with one generated
//! 1,000-call tool-using session through the session runtime (compacting as it goes), then times
//! what serving each page costs: reading the log from the store and rendering the HTML (the
//! session list, the session page, a compaction's diff, an item, a search), over several runs.
//!
//!   cargo run --release -p compact-ui --example page_load [-- CALLS [RUNS [serve]]]
//!
//! With `serve`, it then serves the pages on 127.0.0.1 (printing `listening on http://ADDR/`) until
//! killed, for `bench/ui_browser.py` to time them in Chromium.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::model::{Conversation, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::{CompactManager, SessionConfig, SqliteStore, Store};
use compact_ui::Ui;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().map_or(1_000, |a| a.parse().unwrap());
    let runs: usize = args.next().map_or(10, |a| a.parse().unwrap());
    let serve = args.next().is_some_and(|a| a == "serve");
    let dir = std::env::temp_dir().join(format!("compact-ui-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(SqliteStore::open(dir.join("sessions.db")).unwrap());
    let config = SessionConfig::new(
        Policy::for_window(32_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store.clone()).unwrap();
    let started = Instant::now();
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a coding agent."));
    conv.push(Item::text(
        Role::User,
        "Refactor the parser and keep the tests green.",
    ));
    for i in 0..calls {
        manager.preflight("bench", &conv).unwrap();
        let call = format!("call_{i}");
        conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
            &call,
            "bash",
            json!({"command": format!("sed -n 1,40p src/module_{}.rs", i % 97)}),
        ))));
        let output: String = (0..40)
            .map(|l| format!("{l:>4}  fn item_{i}_{l}(x: u32) -> u32 {{ x + {l} }}\n"))
            .collect();
        conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(
            &call, output,
        ))));
        conv.push(Item::text(Role::Assistant, format!("Checked module {i}.")));
    }
    manager.preflight("bench", &conv).unwrap();
    let records = store.read("bench", 0).unwrap();
    let views: Vec<u64> = records
        .iter()
        .filter(|s| matches!(s.record, compact_session::record::Record::View(_)))
        .map(|s| s.seq)
        .collect();
    println!(
        "filled: {calls} calls, {} records, {} compactions in {:.1} s",
        records.len(),
        views.len(),
        started.elapsed().as_secs_f64()
    );
    let item = records
        .iter()
        .rev()
        .find_map(|s| s.record.item_id().map(str::to_owned))
        .unwrap();
    let ui = Ui::new("");
    let last_view = views.last().copied().unwrap_or(0);
    let pages = [
        ("session list", "/".to_owned(), String::new()),
        ("session page", "/s/bench".to_owned(), String::new()),
        (
            "compaction diff",
            format!("/s/bench/compaction/{last_view}"),
            String::new(),
        ),
        ("item", format!("/s/bench/item/{item}"), String::new()),
        (
            "search",
            "/s/bench/search".to_owned(),
            "q=item_999_3".to_owned(),
        ),
    ];
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>10}",
        "page", "bytes", "min ms", "median ms", "max ms"
    );
    for (name, path, query) in &pages {
        let mut times = Vec::with_capacity(runs);
        let mut bytes = 0;
        for _ in 0..runs {
            let t = Instant::now();
            let r = ui.handle(store.as_ref(), path, query);
            times.push(t.elapsed().as_secs_f64() * 1_000.0);
            assert_eq!(r.status, 200, "{name}: {}", r.body);
            bytes = r.body.len();
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{name:<16} {bytes:>10} {:>10.1} {:>10.1} {:>10.1}",
            times[0],
            times[times.len() / 2],
            times[times.len() - 1]
        );
    }
    if serve {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            println!("listening on http://{}/", listener.local_addr().unwrap());
            compact_ui::serve(
                listener,
                compact_ui::Ui::new(""),
                store,
                std::future::pending(),
            )
            .await
            .unwrap();
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
}
