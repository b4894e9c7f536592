//! Client of `bench/proxy_cpu.sh`: sends REQUESTS Chat Completions requests one at a time over one
//! keep-alive connection to URL and prints the CPU time the server processes (`--pids`, comma
//! separated: a proxy, or nginx's master and worker) spent per request, from their own `/proc/<pid>/stat`
//! (utime + stime, every thread of the process, in clock ticks) read before and after the requests.
//!
//! Two shapes: `agent` (one session; each request is the previous one plus the reply's assistant
//! message, as the agent received it, and a new user message: what an agent loop sends) and
//! `fresh` (the same ~20 KB conversation as a new session every time). The body is the one of
//! `proxy_latency` (a system prompt, a user message, tool calls with 30-line outputs).
//!
//! ```text
//! proxy_cpu URL REQUESTS --pids 123[,456] [--shape agent|fresh] [--label compact-sqlite]
//!           [--body-kb 20] [--warmup 20] [--clk-tck 100]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::time::Instant;

#[path = "support/body.rs"]
mod body;

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// The bearer token sent with every request (`PROXY_LATENCY_TOKEN`, as `proxy_latency`: a peer
/// proxy may require its own key, the simulator takes any).
fn auth() -> String {
    std::env::var("PROXY_LATENCY_TOKEN").unwrap_or_else(|_| "sk-bench".to_owned())
}

/// utime + stime of a process (every thread, the exited ones included), in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after "pid (comm) ".
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Nanoseconds on a CPU of the process's live threads (`/proc/<pid>/task/*/schedstat`): finer than
/// the ticks, but a thread that exits between two reads takes its time with it.
fn sched_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split(' ').next()?.parse::<u64>().ok())
        .sum()
}

async fn send(client: &HttpClient, url: &str, session: &str, body: Bytes) -> Value {
    let request = hyper::Request::post(format!("{url}/v1/chat/completions"))
        .header("content-type", "application/json")
        .header("x-compact-session", session)
        .header("authorization", format!("Bearer {}", auth()))
        .body(Full::new(body))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        status.is_success(),
        "{status}: {}",
        String::from_utf8_lossy(&bytes)
    );
    serde_json::from_slice(&bytes).unwrap()
}

/// The next request of an agent: the reply's assistant message as received, a result for each of
/// its tool calls, and a new user message.
fn extend(request: &mut Value, reply: &Value, turn: usize) {
    let messages = request["messages"].as_array_mut().unwrap();
    let message = reply["choices"][0]["message"].clone();
    let calls: Vec<String> = message["tool_calls"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|c| c["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    messages.push(message);
    for id in calls {
        messages.push(
            json!({"role": "tool", "tool_call_id": id, "content": format!("ok, step {turn}")}),
        );
    }
    messages.push(json!({"role": "user", "content": format!("Go on with step {}.", turn + 1)}));
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (url, n) = (&args[1], args[2].parse::<usize>().unwrap());
    let flag = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .map_or(default.to_owned(), |i| args[i + 1].clone())
    };
    let pids: Vec<u32> = flag("--pids", "")
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().unwrap())
        .collect();
    let shape = flag("--shape", "agent");
    let label = flag("--label", "requests");
    let kb: usize = flag("--body-kb", "20").parse().unwrap();
    let warmup: usize = flag("--warmup", "20").parse().unwrap();
    let hz: f64 = flag("--clk-tck", "100").parse().unwrap();
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let base: Value = serde_json::from_str(&body::body(kb, "bench-model")).unwrap();
    let fresh = Bytes::from(base.to_string());
    let run = std::process::id();
    for i in 0..warmup {
        send(
            &client,
            url,
            &format!("{label}-warm-{run}-{i}"),
            fresh.clone(),
        )
        .await;
    }
    let session = format!("{label}-{run}");
    let mut request = base.clone();
    let (ticks0, ns0) = (
        pids.iter().map(|p| cpu_ticks(*p)).sum::<u64>(),
        pids.iter().map(|p| sched_ns(*p)).sum::<u64>(),
    );
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(n);
    let mut last_bytes = 0;
    for i in 0..n {
        let t = Instant::now();
        if shape == "fresh" {
            send(&client, url, &format!("{session}-{i}"), fresh.clone()).await;
            last_bytes = fresh.len();
        } else {
            let body = Bytes::from(serde_json::to_vec(&request).unwrap());
            last_bytes = body.len();
            let reply = send(&client, url, &session, body).await;
            extend(&mut request, &reply, i);
        }
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let wall = started.elapsed().as_secs_f64();
    let ticks = pids.iter().map(|p| cpu_ticks(*p)).sum::<u64>() - ticks0;
    let ns = pids.iter().map(|p| sched_ns(*p)).sum::<u64>() - ns0;
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let out = json!({
        "label": label, "shape": shape, "requests": n,
        "first_body_bytes": fresh.len(), "last_body_bytes": last_bytes,
        "cpu_ms_per_request": ticks as f64 / hz * 1000.0 / n as f64,
        "sched_ms_per_request": ns as f64 / 1e6 / n as f64,
        "wall_s": wall,
        "latency_p50_ms": percentile(&latencies, 0.5), "latency_p99_ms": percentile(&latencies, 0.99),
    });
    println!("{out}");
}
