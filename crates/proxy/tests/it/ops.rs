//! Operations endpoints: health, readiness, metrics, the admin API (off without a token, behind
//! it with one), and graceful shutdown letting an in-flight request finish.

use crate::support::{script_tool_call, tool_output, Harness, Options, Wire};
use bytes::Bytes;
use compact_session::record::{Record, Stored};
use compact_session::{Store, StoreError};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics() {
    let h = Harness::start().await;
    let health = h.get("/healthz", &[]).await;
    assert_eq!((health.status, health.text().as_str()), (200, "ok\n"));
    assert_eq!(h.get("/readyz", &[]).await.status, 200);
    let wire = Wire::Anthropic;
    let mut request = wire.first_request("sim-model", "Metrics please.", false);
    for step in 0..30 {
        script_tool_call(&h.sim, step);
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200);
        let turn = wire.read(false, &reply.body);
        wire.extend(&mut request, &turn, &[tool_output("src/m.rs", step, 40)]);
    }
    let _ = h
        .post(wire.path(), &[("x-sim-fault", "server-error")], &request)
        .await;
    let metrics = h.get("/metrics", &[]).await;
    assert_eq!(metrics.status, 200);
    assert!(metrics.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let text = metrics.text();
    assert!(
        text.contains("compact_proxy_requests_total{route=\"messages\",status=\"200\"} 30"),
        "{text}"
    );
    assert!(
        text.contains("compact_proxy_requests_total{route=\"messages\",status=\"500\"} 1"),
        "{text}"
    );
    assert!(text.contains("compact_proxy_upstream_errors_total{kind=\"status_5xx\"} 1"));
    let value = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .parse()
            .unwrap()
    };
    assert!(value("compact_proxy_compactions_total") >= 1.0);
    assert!(value("compact_proxy_tokens_saved_total") > 1000.0);
    assert_eq!(value("compact_proxy_added_latency_seconds_count"), 31.0);
    assert_eq!(
        h.proxy.metrics().compactions() as f64,
        value("compact_proxy_compactions_total")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_api_is_off_without_a_token() {
    let h = Harness::start().await;
    let reply = h
        .get("/admin/sessions", &[("authorization", "Bearer anything")])
        .await;
    assert_eq!(reply.status, 404);
    assert!(reply.text().contains("off"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_api_lists_sessions_events_and_recalls_items() {
    let h = Harness::with(Options {
        admin_token: Some("tok-42".into()),
        ..Options::default()
    })
    .await;
    let wire = Wire::Chat;
    let mut request = wire.first_request("sim-model", "Admin session.", false);
    for step in 0..25 {
        script_tool_call(&h.sim, step);
        let reply = h
            .post(wire.path(), &[("x-compact-session", "team/a b")], &request)
            .await;
        assert_eq!(reply.status, 200);
        let turn = wire.read(false, &reply.body);
        wire.extend(
            &mut request,
            &turn,
            &[tool_output("src/admin.rs", step, 40)],
        );
    }
    for auth in [None, Some("Bearer wrong"), Some("tok-42")] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        let reply = h.get("/admin/sessions", &headers).await;
        assert_eq!(reply.status, 401, "{auth:?}");
        assert_eq!(reply.headers["www-authenticate"], "Bearer");
    }
    let ok = [("authorization", "Bearer tok-42")];
    let sessions = h.get("/admin/sessions", &ok).await;
    assert_eq!(sessions.status, 200);
    let ids: Vec<String> = sessions.json()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["team/a b"]);
    let events = h.get("/admin/sessions/team%2Fa%20b/events", &ok).await;
    assert_eq!(events.status, 200, "{}", events.text());
    let events = events.json();
    let names: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"compact.compacted"), "{names:?}");
    // Recall an item the log holds: the first tool output.
    let records = h.store.read("team/a b", 0).unwrap();
    let id = records
        .iter()
        .find_map(|s| match &s.record {
            Record::Item(r) => match r.item.body() {
                compact_core::model::ItemBody::ToolResult(_) => Some(r.item.meta.id.to_string()),
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    let recalled = h
        .get(&format!("/admin/sessions/team%2Fa%20b/items/{id}"), &ok)
        .await;
    assert_eq!(recalled.status, 200, "{}", recalled.text());
    // The first tool output, whole.
    let text = recalled.text();
    assert!(
        text.contains("fn handler_0_0(") && text.contains("fn handler_0_39("),
        "{text}"
    );
    assert_eq!(
        h.get("/admin/sessions/team%2Fa%20b/items/nope", &ok)
            .await
            .status,
        404
    );
    assert_eq!(
        h.get("/admin/sessions/unknown/events", &ok).await.status,
        404
    );
    assert_eq!(
        h.get("/admin/sessions/bad%zz/events", &ok).await.status,
        400
    );
    assert_eq!(h.get("/admin/whatever", &ok).await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_view_is_behind_the_admin_token_by_header_or_cookie() {
    let h = Harness::with(Options {
        admin_token: Some("tok-ui".into()),
        ..Options::default()
    })
    .await;
    let wire = Wire::Chat;
    let mut request = wire.first_request("sim-model", "UI session.", false);
    for step in 0..25 {
        script_tool_call(&h.sim, step);
        let reply = h
            .post(wire.path(), &[("x-compact-session", "ui/one")], &request)
            .await;
        assert_eq!(reply.status, 200);
        let turn = wire.read(false, &reply.body);
        wire.extend(&mut request, &turn, &[tool_output("src/ui.rs", step, 40)]);
    }
    // Without the token, with a wrong one, or with a wrong cookie: 401, nothing rendered.
    for headers in [
        vec![],
        vec![("authorization", "Bearer wrong")],
        vec![("cookie", "compact_admin=wrong")],
    ] {
        let reply = h.get("/admin/ui/", &headers).await;
        assert_eq!(reply.status, 401, "{headers:?}");
        assert!(!reply.text().contains("ui/one"));
    }
    assert_eq!(h.get("/admin/ui/login?token=wrong", &[]).await.status, 401);
    // The bearer header opens the pages, linked under /admin/ui.
    let bearer = [("authorization", "Bearer tok-ui")];
    let list = h.get("/admin/ui/", &bearer).await;
    assert_eq!(list.status, 200, "{}", list.text());
    assert!(list.headers["content-security-policy"]
        .to_str()
        .unwrap()
        .starts_with("default-src 'none'"));
    assert!(list.text().contains(r#"href="/admin/ui/s/ui%2Fone""#));
    let session = h.get("/admin/ui/s/ui%2Fone", &bearer).await;
    assert_eq!(session.status, 200);
    assert!(session.text().contains("class=\"chart sawtooth\""));
    // The cache-hit share per call is the simulator's reported cached tokens (the proxy records
    // each reply's usage), not the estimate.
    assert!(
        session.text().contains("as its usage reported"),
        "{}",
        session.text()
    );
    assert!(session.text().contains("/admin/ui/s/ui%2Fone/compaction/"));
    // Logging in sets an HttpOnly, SameSite=Strict cookie for /admin that opens the pages (and
    // only them: the JSON API still wants the header).
    let login = h.get("/admin/ui/login?token=tok-ui", &[]).await;
    assert_eq!(login.status, 303);
    assert_eq!(login.headers["location"], "/admin/ui/");
    let cookie = login.headers["set-cookie"].to_str().unwrap().to_owned();
    for part in [
        "compact_admin=tok-ui",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/admin",
    ] {
        assert!(cookie.contains(part), "{cookie}");
    }
    let jar = [("cookie", "other=1; compact_admin=tok-ui")];
    assert_eq!(h.get("/admin/ui/s/ui%2Fone", &jar).await.status, 200);
    assert_eq!(h.get("/admin/ui/assets/ui.js", &jar).await.status, 200);
    assert_eq!(h.get("/admin/sessions", &jar).await.status, 401);
    assert_eq!(h.get("/admin/ui/s/nope", &jar).await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_an_in_flight_stream_finish() {
    let mut h = Harness::start().await;
    let metrics = h.proxy.metrics();
    let url_body = Bytes::from(
        Wire::Anthropic
            .first_request("sim-model", "Finish me.", true)
            .to_string(),
    );
    let in_flight =
        tokio::spawn(h.detached("/v1/messages", &[("x-sim-fault", "slow;ms=400")], url_body));
    // Wait (bounded) until the request is upstream, then shut down.
    for _ in 0..200 {
        if metrics.forwarded() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(metrics.forwarded(), 1);
    let serving = h.begin_shutdown();
    let reply = in_flight.await.unwrap();
    assert_eq!(reply.status, 200);
    let turn = Wire::Anthropic.read(true, &reply.body);
    assert!(turn.complete && turn.errors.is_empty(), "{}", reply.text());
    serving.await.unwrap();
    assert!(h
        .log
        .lines()
        .iter()
        .any(|l| l.contains("\"event\":\"stopped\"") && l.contains("\"drained\":true")));
}

/// A store whose backend is down.
struct DownStore;

impl Store for DownStore {
    fn create(&self, _: &str) -> Result<bool, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    fn version(&self, _: &str) -> Result<u64, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    fn append(&self, _: &str, _: u64, _: Vec<Record>) -> Result<u64, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    fn read(&self, _: &str, _: u64) -> Result<Vec<Stored>, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    fn find_items(&self, _: &str, _: &str) -> Result<Vec<Stored>, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    fn sessions(&self) -> Result<Vec<String>, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
    fn delete_session(&self, _: &str) -> Result<bool, StoreError> {
        Err(StoreError::Backend("down".into()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_is_down_makes_the_proxy_unready_but_requests_still_pass() {
    let h = Harness::start().await;
    let mut config = compact_proxy::ProxyConfig::new(crate::support::session_config(16_000));
    config.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    config.openai.base_url = h.sim.base_url();
    let log = crate::support::HarnessLog::new();
    let proxy = compact_proxy::Proxy::new(config, std::sync::Arc::new(DownStore)).unwrap();
    let listener = proxy.bind().await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(tracing::Instrument::instrument(
        async move {
            proxy
                .serve(listener, async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        },
        log.span(),
    ));
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<Bytes>>();
    let get = |path: &str| {
        hyper::Request::get(format!("http://{addr}{path}"))
            .body(http_body_util::Full::new(Bytes::new()))
            .unwrap()
    };
    assert_eq!(client.request(get("/readyz")).await.unwrap().status(), 503);
    assert_eq!(client.request(get("/healthz")).await.unwrap().status(), 200);
    // The runtime cannot log the request: it goes upstream untouched rather than failing.
    let body = Wire::Chat
        .first_request("sim-model", "Store is down.", false)
        .to_string();
    let request = hyper::Request::post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(Bytes::from(body.clone())))
        .unwrap();
    assert_eq!(client.request(request).await.unwrap().status(), 200);
    assert_eq!(h.sim.requests().last().unwrap().raw, Bytes::from(body));
    assert!(log
        .lines()
        .iter()
        .any(|l| l.contains("\"passthrough\":\"preflight_failed\"")));
    let _ = tx.send(());
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_reviewed_in_the_web_view_applies_through_the_sessions_manager() {
    let h = Harness::with(Options {
        admin_token: Some("tok-rev".into()),
        ..Options::default()
    })
    .await;
    let wire = Wire::Chat;
    let session = [("x-compact-session", "ui/rev")];
    let mut request = wire.first_request("sim-model", "Review session.", false);
    let mut step = 0;
    while step < 25 {
        script_tool_call(&h.sim, step);
        let reply = h.post(wire.path(), &session, &request).await;
        assert_eq!(reply.status, 200);
        let turn = wire.read(false, &reply.body);
        wire.extend(&mut request, &turn, &[tool_output("src/rev.rs", step, 40)]);
        step += 1;
    }
    let jar = [("cookie", "compact_admin=tok-rev")];
    let page = h.get("/admin/ui/s/ui%2Frev/review", &jar).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let page = page.text();
    assert!(page.contains(r#"action="/admin/ui/s/ui%2Frev/review""#));
    assert!(page.contains("<textarea id=\"checkpoint\""), "{page}");
    let key = page
        .split("name=\"proposal\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let form = format!(
        "proposal={key}&checkpoint={}",
        compact_ui::html::encode_segment("# Reviewed in the proxy\n- Next: fix src/rev.rs line 3.")
    );
    let form_type = ("content-type", "application/x-www-form-urlencoded");
    let send = |headers: Vec<(&'static str, String)>| {
        let form = form.clone();
        let h = &h;
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            h.send(
                "POST",
                "/admin/ui/s/ui%2Frev/review",
                &headers,
                Bytes::from(form),
            )
            .await
        }
    };
    // Without the cookie, or from another origin: refused, nothing applied.
    let anonymous = send(vec![(form_type.0, form_type.1.into())]).await;
    assert_eq!(anonymous.status, 401);
    let foreign = send(vec![
        ("cookie", "compact_admin=tok-rev".into()),
        (form_type.0, form_type.1.into()),
        ("origin", "https://evil.example".into()),
    ])
    .await;
    assert_eq!(foreign.status, 403);
    let applied = send(vec![
        ("cookie", "compact_admin=tok-rev".into()),
        (form_type.0, form_type.1.into()),
        ("origin", format!("http://{}", h.addr)),
    ])
    .await;
    assert_eq!(applied.status, 303, "{}", applied.text());
    let location = applied.headers["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("/admin/ui/s/ui%2Frev/compaction/"),
        "{location}"
    );
    let diff = h.get(&location, &jar).await;
    assert_eq!(diff.status, 200);
    assert!(diff.text().contains("Reviewed in the proxy"));
    // The agent's next call goes on from the reviewed view, through the same manager: no
    // conflict, and the model reads the edited checkpoint.
    script_tool_call(&h.sim, step);
    let reply = h.post(wire.path(), &session, &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = h.sim.requests().last().unwrap().body.to_string();
    assert!(sent.contains("Next: fix src/rev.rs line 3."), "{sent}");
    h.stop().await;
}

/// With no listen option (no `--listen`, no `proxy.listen`, no `COMPACT_PROXY_LISTEN`) the proxy
/// listens on 127.0.0.1:8787, loopback only, as the README says: an agent's requests carry its API
/// key. The started server is checked on a free port of that address (a fixed port may be taken):
/// another loopback address of the machine, which a socket on 0.0.0.0 would answer, is refused.
#[tokio::test]
async fn without_a_listen_option_the_proxy_listens_on_127_0_0_1_only() {
    use std::net::{Ipv4Addr, SocketAddr};
    let none = compact_config::Overrides::default();
    let config = compact_config::Config::from_sources(None, &none, &none).unwrap();
    let mut settings = compact_proxy::ProxyConfig::from_config(&config, None);
    assert_eq!(settings.listen, SocketAddr::from(([127, 0, 0, 1], 8787)));

    settings.listen.set_port(0);
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(compact_session::MemoryStore::new());
    let proxy = compact_proxy::Proxy::new(settings, store).unwrap();
    let listener = proxy.bind().await.unwrap();
    let local = listener.local_addr().unwrap();
    assert_eq!(local.ip(), Ipv4Addr::LOCALHOST);
    let (stop, stop_asked) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        proxy
            .serve(listener, async {
                let _ = stop_asked.await;
            })
            .await
    });
    tokio::net::TcpStream::connect(local).await.unwrap();
    let elsewhere = SocketAddr::new(Ipv4Addr::new(127, 0, 0, 2).into(), local.port());
    assert_eq!(
        tokio::net::TcpStream::connect(elsewhere)
            .await
            .map(|_| ())
            .map_err(|e| e.kind()),
        Err(std::io::ErrorKind::ConnectionRefused)
    );
    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
}
