//! Load generator for `bench/proxy.sh`: sends the same ~20 KB Chat Completions requests straight
//! to a provider (the simulator) and through a proxy in front of it, alternating, one at a time,
//! and prints the latency percentiles of each and of the difference (what the proxy adds); then,
//! with `--load N`, keeps N requests in flight through the proxy for the loaded memory figure.
//!
//! With `--rate R` it is an open-loop load instead: REQUESTS requests at R per second straight to
//! the provider, then the same through the proxy (or a peer's proxy), each timed from the instant
//! it was scheduled; the added latency is the difference of the two runs' percentiles.
//!
//! ```text
//! proxy_latency DIRECT_URL PROXY_URL REQUESTS [--body-kb 20] [--load 16] [--label pass-through]
//! proxy_latency DIRECT_URL PROXY_URL REQUESTS --rate 1000 [--model bench-model] [--label litellm]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use std::time::{Duration, Instant};

#[path = "support/body.rs"]
mod body;
use body::body;

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// The bearer token sent with every request (`PROXY_LATENCY_TOKEN`; a peer proxy may require its
/// own key, the simulator takes any).
fn auth() -> String {
    std::env::var("PROXY_LATENCY_TOKEN").unwrap_or_else(|_| "sk-bench".to_owned())
}

async fn send(client: &HttpClient, url: &str, session: &str, body: &str) -> Duration {
    let request = hyper::Request::post(format!("{url}/v1/chat/completions"))
        .header("content-type", "application/json")
        .header("x-compact-session", session)
        .header("authorization", format!("Bearer {}", auth()))
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let started = Instant::now();
    let response = client.request(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let elapsed = started.elapsed();
    assert!(
        status.is_success(),
        "{status}: {}",
        String::from_utf8_lossy(&bytes)
    );
    elapsed
}

/// Open-loop load: `n` requests at `rate` per second to `url`, each timed from the instant it was
/// scheduled (so a stalled server is charged for the queue it causes, not hidden by it). Returns
/// the latencies of the successful requests (ms) and the number that failed.
async fn open_loop(
    client: &HttpClient,
    url: &str,
    label: &str,
    requests: &[(usize, Bytes)],
    rate: f64,
) -> (Vec<f64>, usize) {
    let period = Duration::from_secs_f64(1.0 / rate);
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::with_capacity(requests.len());
    for (i, (session, body)) in requests.iter().enumerate() {
        let scheduled = start + period * u32::try_from(i).unwrap();
        tokio::time::sleep_until(scheduled).await;
        let (client, url, body) = (client.clone(), url.to_owned(), body.clone());
        let session = format!("{label}-{}-{session}", std::process::id());
        tasks.push(tokio::spawn(async move {
            let request = hyper::Request::post(format!("{url}/v1/chat/completions"))
                .header("content-type", "application/json")
                .header("x-compact-session", session)
                .header("authorization", format!("Bearer {}", auth()))
                .body(Full::new(body))
                .unwrap();
            let ok = match tokio::time::timeout(Duration::from_secs(30), client.request(request))
                .await
            {
                Ok(Ok(response)) => {
                    let status = response.status();
                    response.into_body().collect().await.is_ok() && status.is_success()
                }
                _ => false,
            };
            ok.then(|| scheduled.elapsed().as_secs_f64() * 1000.0)
        }));
    }
    let mut latencies = Vec::with_capacity(requests.len());
    let mut failed = 0;
    for t in tasks {
        match t.await.unwrap() {
            Some(ms) => latencies.push(ms),
            None => failed += 1,
        }
    }
    (latencies, failed)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn summary(mut v: Vec<f64>) -> serde_json::Value {
    if v.is_empty() {
        return json!({"p50_ms": null, "p99_ms": null, "max_ms": null});
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    json!({"p50_ms": percentile(&v, 0.50), "p99_ms": percentile(&v, 0.99), "max_ms": v[v.len() - 1]})
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (direct, via, n) = (&args[1], &args[2], args[3].parse::<usize>().unwrap());
    let flag = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .map_or(default.to_owned(), |i| args[i + 1].clone())
    };
    let kb: usize = flag("--body-kb", "20").parse().unwrap();
    let load: usize = flag("--load", "0").parse().unwrap();
    let label = flag("--label", "requests");
    let rate: f64 = flag("--rate", "0").parse().unwrap();
    let model = flag("--model", "bench-model");
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let body = body(kb, &model);
    let run = std::process::id();
    // Warm-up: connections, page cache, the proxy's first manager.
    for i in 0..10 {
        send(&client, direct, &format!("warm-{run}-{i}"), &body).await;
        send(&client, via, &format!("warm-{run}-{i}"), &body).await;
    }
    if rate > 0.0 {
        // `--sessions K`: the requests go to K sessions in turn, each request of a session being
        // the previous one plus a reply and a new user message (an agent's traffic); 0: a fresh
        // session per request (every request pays a full count).
        let sessions: usize = flag("--sessions", "0").parse().unwrap();
        let base: serde_json::Value = serde_json::from_str(&body).unwrap();
        let requests: Vec<(usize, Bytes)> = (0..n)
            .map(|i| {
                if sessions == 0 {
                    return (i, Bytes::from(body.clone()));
                }
                let mut request = base.clone();
                let messages = request["messages"].as_array_mut().unwrap();
                for turn in 0..i / sessions {
                    messages.push(json!({"role": "assistant", "content": format!("Step {turn} is done: the handler compiles.")}));
                    messages.push(json!({"role": "user", "content": format!("Go on with step {}.", turn + 1)}));
                }
                (i % sessions, Bytes::from(request.to_string()))
            })
            .collect();
        let (d, d_failed) =
            open_loop(&client, direct, &format!("{label}-direct"), &requests, rate).await;
        let (p, p_failed) = open_loop(&client, via, &label, &requests, rate).await;
        let (d, p) = (summary(d), summary(p));
        let added = |k: &str| match (d[k].as_f64(), p[k].as_f64()) {
            (Some(a), Some(b)) => json!(b - a),
            _ => json!(null),
        };
        let out = json!({"label": label, "rate_per_s": rate, "requests": n, "sessions": sessions,
            "body_bytes": body.len(), "direct": d, "direct_failed": d_failed, "via_proxy": p,
            "via_failed": p_failed, "added": {"p50_ms": added("p50_ms"), "p99_ms": added("p99_ms")}});
        println!("{out}");
        return;
    }
    let (mut d, mut p, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        // A fresh session each time: every request costs a full count (and, behind a small
        // window, a compaction), never only the incremental path.
        let session = format!("{label}-{run}-{i}");
        let a = send(&client, direct, &session, &body).await.as_secs_f64() * 1000.0;
        let b = send(&client, via, &session, &body).await.as_secs_f64() * 1000.0;
        d.push(a);
        p.push(b);
        added.push(b - a);
    }
    let out = json!({"label": label, "requests": n, "body_bytes": body.len(),
        "direct": summary(d), "via_proxy": summary(p), "added": summary(added)});
    println!("{out}");
    if load > 0 {
        let started = Instant::now();
        let mut tasks = Vec::new();
        for w in 0..load {
            let (client, via, body, label) =
                (client.clone(), via.clone(), body.clone(), label.clone());
            tasks.push(tokio::spawn(async move {
                for i in 0..n / load.max(1) {
                    send(&client, &via, &format!("{label}-load-{run}-{w}-{i}"), &body).await;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        println!(
            "{}",
            json!({"label": label, "loaded_requests": n / load.max(1) * load, "in_flight": load, "seconds": started.elapsed().as_secs_f64()})
        );
    }
}
