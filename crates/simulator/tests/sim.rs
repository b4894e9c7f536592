//! End-to-end tests of the simulator over real sockets: wire shapes, exact overflow errors, usage and
//! cached tokens, scripted tool calls, streaming, and every fault.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::tokens::Encoding;
use compact_sim::{
    Api, CacheRule, ChatOverflowWording, Fault, ScriptedReply, SimConfig, Simulator,
};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A raw HTTP/1.1 exchange (Connection: close); `None` when the server closed without answering.
async fn post(
    addr: SocketAddr,
    path: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> Option<(u16, String, String)> {
    let body = body.to_string();
    let mut req = format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    Some((
        status,
        head.to_owned(),
        if chunked {
            dechunk(rest)
        } else {
            rest.to_owned()
        },
    ))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            out.push_str(&rest[..rest.len().min(n)]);
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

fn chat(content: &str) -> Value {
    json!({"model": "gpt-4o", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": content}]})
}

fn exact_cache() -> SimConfig {
    SimConfig {
        openai_cache: CacheRule {
            min_tokens: 0,
            increment: 1,
        },
        anthropic_cache: CacheRule {
            min_tokens: 0,
            increment: 1,
        },
        ..SimConfig::default()
    }
}

#[tokio::test]
async fn chat_completion_counts_and_records() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let (status, head, body) = post(
        sim.addr(),
        "/v1/chat/completions",
        &chat("hello world"),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    assert!(head.contains("application/json"));
    let v: Value = serde_json::from_str(&body).unwrap();
    // system "be brief" (2) + "hello world" (2) + 2 x 3 per message + 3 per request.
    let expected = (Encoding::O200kBase.count("be brief")
        + Encoding::O200kBase.count("hello world")
        + 9) as u64;
    assert_eq!(v["usage"]["prompt_tokens"], expected);
    assert_eq!(v["object"], "chat.completion");
    assert!(v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .contains("hello world"));
    let recs = sim.requests();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].api, Api::ChatCompletions);
    assert_eq!(recs[0].input_tokens, Some(expected));
}

#[tokio::test]
async fn unversioned_and_azure_paths_are_served_and_recorded_with_their_query() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let responses = json!({"model": "m", "input": "hello"});
    let cases = [
        ("/chat/completions", None, Api::ChatCompletions),
        ("/openai/v1/chat/completions", None, Api::ChatCompletions),
        (
            "/openai/deployments/gpt-4o/chat/completions",
            Some("api-version=2024-10-21"),
            Api::ChatCompletions,
        ),
        ("/responses", None, Api::Responses),
        ("/openai/v1/responses", None, Api::Responses),
        (
            "/openai/responses",
            Some("api-version=2025-03-01-preview"),
            Api::Responses,
        ),
    ];
    for (path, query, api) in cases {
        sim.clear();
        let target = match query {
            Some(q) => format!("{path}?{q}"),
            None => path.to_owned(),
        };
        let body = if api == Api::Responses {
            responses.clone()
        } else {
            chat("hello")
        };
        let (status, _, text) = post(sim.addr(), &target, &body, &[]).await.unwrap();
        assert_eq!(status, 200, "{target}: {text}");
        let recs = sim.requests();
        assert_eq!(recs[0].api, api, "{target}");
        assert_eq!(recs[0].path, path);
        assert_eq!(recs[0].query.as_deref(), query);
    }
    // Another deployment endpoint is not Chat Completions.
    let (status, _, _) = post(
        sim.addr(),
        "/openai/deployments/gpt-4o/embeddings",
        &chat("x"),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(status, 404);
}

#[tokio::test]
async fn chat_overflow_errors_are_exact() {
    let sim = Simulator::spawn(SimConfig::with_window(20)).await.unwrap();
    let long = "word ".repeat(50);
    let (status, _, body) = post(sim.addr(), "/v1/chat/completions", &chat(&long), &[])
        .await
        .unwrap();
    assert_eq!(status, 400);
    let n = sim.requests()[0].input_tokens.unwrap();
    let want = json!({"error": {"message": format!("This model's maximum context length is 20 tokens. However, your messages resulted in {n} tokens. Please reduce the length of the messages."), "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), want);

    // Input fits, input + completion does not.
    let mut req = chat("hi");
    req["max_tokens"] = json!(100);
    let (status, _, body) = post(sim.addr(), "/v1/chat/completions", &req, &[])
        .await
        .unwrap();
    assert_eq!(status, 400);
    let n = sim.requests()[1].input_tokens.unwrap();
    let msg = format!("This model's maximum context length is 20 tokens. However, you requested {} tokens ({n} in the messages, 100 in the completion). Please reduce the length of the messages or completion.", n + 100);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["message"],
        msg
    );

    let gpt5 = Simulator::spawn(SimConfig {
        window: 20,
        chat_wording: ChatOverflowWording::ConfiguredLimit,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let (_, _, body) = post(gpt5.addr(), "/v1/chat/completions", &chat(&long), &[])
        .await
        .unwrap();
    assert!(body.contains(
        "Input tokens exceed the configured limit of 20 tokens. Your messages resulted in"
    ));
    assert!(compact_core::tokens::Encoding::O200kBase.count(&body) > 0);
}

#[tokio::test]
async fn responses_overflow_http_and_stream() {
    let sim = Simulator::spawn(SimConfig::with_window(10)).await.unwrap();
    let req = json!({"model": "gpt-5", "input": "word ".repeat(40)});
    let (status, _, body) = post(sim.addr(), "/v1/responses", &req, &[]).await.unwrap();
    assert_eq!(status, 400);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    assert_eq!(v["error"]["param"], "input");
    assert_eq!(v["error"]["message"], "Your input exceeds the context window of this model. Please adjust your input and try again.");

    let mut streaming = req.clone();
    streaming["stream"] = json!(true);
    let (status, head, body) = post(sim.addr(), "/v1/responses", &streaming, &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(head.contains("text/event-stream"));
    let events: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(events, vec!["response.created", "error", "response.failed"]);
    let failed = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .unwrap();
    let failed: Value = serde_json::from_str(failed).unwrap();
    assert_eq!(
        failed["response"]["error"]["code"],
        "context_length_exceeded"
    );
    assert_eq!(failed["response"]["status"], "failed");
}

#[tokio::test]
async fn anthropic_errors_and_count_tokens() {
    let sim = Simulator::spawn(SimConfig {
        window: 30,
        max_body_bytes: 4_000,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let long = json!({"model": "claude", "max_tokens": 5, "messages": [{"role": "user", "content": "word ".repeat(60)}]});
    let (status, _, body) = post(sim.addr(), "/v1/messages", &long, &[]).await.unwrap();
    assert_eq!(status, 400);
    let n = sim.requests()[0].input_tokens.unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(
        v["error"]["message"],
        format!("prompt is too long: {n} tokens > 30 maximum")
    );

    let short = json!({"model": "claude", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, body) = post(sim.addr(), "/v1/messages", &short, &[]).await.unwrap();
    assert_eq!(status, 400);
    let n = sim.requests()[1].input_tokens.unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["message"], format!("input length and `max_tokens` exceed context limit: {n} + 100 > 30, decrease input length or `max_tokens` and try again"));

    let huge = json!({"model": "claude", "max_tokens": 5, "messages": [{"role": "user", "content": "x".repeat(5_000)}]});
    let (status, _, body) = post(sim.addr(), "/v1/messages", &huge, &[]).await.unwrap();
    assert_eq!(status, 413);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["type"],
        "request_too_large"
    );

    let (status, _, body) = post(sim.addr(), "/v1/messages/count_tokens", &short, &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    let n = sim.requests()[3].input_tokens.unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"input_tokens": n})
    );
}

#[tokio::test]
async fn cached_tokens_are_the_common_prefix() {
    let sim = Simulator::spawn(exact_cache()).await.unwrap();
    let first = json!({"model": "gpt-4o", "messages": [{"role": "system", "content": "stable system prompt ".repeat(20)}, {"role": "user", "content": "first question"}]});
    let (_, _, body) = post(sim.addr(), "/v1/chat/completions", &first, &[])
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    let mut second = first.clone();
    second["messages"][1]["content"] = json!("second question");
    let (_, _, body) = post(sim.addr(), "/v1/chat/completions", &second, &[])
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    let cached = v["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    let system_tokens = Encoding::O200kBase.count(&"stable system prompt ".repeat(20)) as u64;
    assert!(
        cached >= system_tokens && cached < v["usage"]["prompt_tokens"].as_u64().unwrap(),
        "cached {cached}"
    );

    // Anthropic with cache_control: the new part is written to the cache, the old part read.
    let a1 = json!({"model": "claude", "max_tokens": 50, "system": [{"type": "text", "text": "tools and rules ".repeat(30), "cache_control": {"type": "ephemeral"}}], "messages": [{"role": "user", "content": "q1"}]});
    let (_, _, body) = post(sim.addr(), "/v1/messages", &a1, &[]).await.unwrap();
    let u = serde_json::from_str::<Value>(&body).unwrap()["usage"].clone();
    assert_eq!(u["cache_read_input_tokens"], 0);
    assert!(u["cache_creation_input_tokens"].as_u64().unwrap() > 0);
    let mut a2 = a1.clone();
    a2["messages"][0]["content"] = json!("q2");
    let (_, _, body) = post(sim.addr(), "/v1/messages", &a2, &[]).await.unwrap();
    let u = serde_json::from_str::<Value>(&body).unwrap()["usage"].clone();
    assert!(u["cache_read_input_tokens"].as_u64().unwrap() > 30);
    let total = u["input_tokens"].as_u64().unwrap()
        + u["cache_read_input_tokens"].as_u64().unwrap()
        + u["cache_creation_input_tokens"].as_u64().unwrap();
    assert_eq!(Some(total), sim.requests()[3].input_tokens);
}

#[tokio::test]
async fn default_cache_rule_needs_1024_tokens() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    for q in ["a", "b"] {
        let req = json!({"model": "m", "messages": [{"role": "user", "content": format!("short prefix {q}")}]});
        let (_, _, body) = post(sim.addr(), "/v1/chat/completions", &req, &[])
            .await
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap()["usage"]["prompt_tokens_details"]
                ["cached_tokens"],
            0
        );
    }
}

#[tokio::test]
async fn scripted_tool_calls_on_every_api() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let reply = ScriptedReply::text("Reading it.")
        .with_tool_call("read_file", json!({"path": "src/lib.rs"}));
    sim.push_reply(reply.clone());
    let (_, _, body) = post(sim.addr(), "/v1/chat/completions", &chat("read"), &[])
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let call = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"path": "src/lib.rs"})
    );

    sim.push_reply(reply.clone());
    let req = json!({"model": "claude", "max_tokens": 100, "messages": [{"role": "user", "content": "read"}]});
    let (_, _, body) = post(sim.addr(), "/v1/messages", &req, &[]).await.unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["content"][1]["type"], "tool_use");
    assert_eq!(v["content"][1]["input"], json!({"path": "src/lib.rs"}));

    sim.push_reply(reply);
    let (_, _, body) = post(
        sim.addr(),
        "/v1/responses",
        &json!({"model": "m", "input": "read"}),
        &[],
    )
    .await
    .unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["output"][1]["type"], "function_call");
    assert_eq!(v["output"][1]["name"], "read_file");
}

/// A model scripted over the control API to recall the stub it sees, on every endpoint, streamed
/// and not: the call names the first `[compact:ref <id>]` id of the request.
#[tokio::test]
async fn a_scripted_model_recalls_the_stub_it_sees() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let stub = "[compact:ref i0a1b2c3d4e] Output of `read_file` moved out; recall `i0a1b2c3d4e` if needed.";
    let requests = [
        (
            "/v1/chat/completions",
            json!({"model": "m", "messages": [{"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": stub}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "m", "input": [{"type": "function_call", "call_id": "c1", "name": "read_file",
                "arguments": "{}"}, {"type": "function_call_output", "call_id": "c1", "output": stub}]}),
        ),
        (
            "/v1/messages",
            json!({"model": "c", "max_tokens": 100, "messages": [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": stub}]}]}),
        ),
    ];
    let control = sim.base_url().replace("http://", "");
    let control: SocketAddr = control.parse().unwrap();
    for (path, request) in requests {
        for stream in [false, true] {
            let script = json!([{"tool_calls": [{"name": compact_sim::RECALL_TOOL,
                                                 "arguments": {"id": compact_sim::STUB_ID}}]}]);
            let (status, _, _) = post(control, "/sim/replies", &script, &[]).await.unwrap();
            assert_eq!(status, 200);
            let mut request = request.clone();
            request["stream"] = json!(stream);
            let (status, _, body) = post(sim.addr(), path, &request, &[]).await.unwrap();
            assert_eq!(status, 200, "{path}: {body}");
            assert!(
                body.contains(compact_sim::RECALL_TOOL),
                "{path} {stream}: {body}"
            );
            // Streamed arguments arrive in pieces; the id is whole in the non-streamed reply and
            // in Anthropic's input, and named in every form once the pieces are joined.
            let joined: String = body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                .map(|v| {
                    let pieces = [
                        &v["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
                        &v["delta"]["partial_json"],
                        &v["delta"],
                    ];
                    pieces.iter().filter_map(|p| p.as_str()).collect::<String>()
                })
                .collect();
            let text = if stream { joined } else { body.clone() };
            assert!(
                text.replace('\\', "").contains("i0a1b2c3d4e"),
                "{path} {stream}: {body}"
            );
            assert!(
                !body.contains(compact_sim::STUB_ID),
                "{path} {stream}: {body}"
            );
        }
    }
}

#[tokio::test]
async fn streams_have_the_real_event_shapes() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    sim.push_reply(ScriptedReply::text(
        "The quick brown fox jumps over the lazy dog.",
    ));
    let mut req = chat("go");
    req["stream"] = json!(true);
    req["stream_options"] = json!({"include_usage": true});
    let (_, head, body) = post(sim.addr(), "/v1/chat/completions", &req, &[])
        .await
        .unwrap();
    assert!(head.contains("text/event-stream"));
    let datas: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(*datas.last().unwrap(), "[DONE]");
    let text: String = datas
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "The quick brown fox jumps over the lazy dog.");
    let usage: Value = serde_json::from_str(datas[datas.len() - 2]).unwrap();
    assert!(usage["usage"]["prompt_tokens"].as_u64().unwrap() > 0);

    let areq = json!({"model": "claude", "max_tokens": 100, "stream": true, "messages": [{"role": "user", "content": "go"}]});
    let (_, _, body) = post(sim.addr(), "/v1/messages", &areq, &[]).await.unwrap();
    let events: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(events.first(), Some(&"message_start"));
    assert_eq!(events.last(), Some(&"message_stop"));
    assert!(events.contains(&"content_block_delta") && events.contains(&"message_delta"));

    let rreq = json!({"model": "m", "input": "go", "stream": true});
    let (_, _, body) = post(sim.addr(), "/v1/responses", &rreq, &[]).await.unwrap();
    let events: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(events[..2], ["response.created", "response.in_progress"]);
    assert_eq!(events.last(), Some(&"response.completed"));
}

#[tokio::test]
async fn faults_queue_and_header() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    sim.push_fault(Fault::RateLimit {
        retry_after: Duration::from_secs(2),
    });
    let (status, head, body) = post(sim.addr(), "/v1/chat/completions", &chat("x"), &[])
        .await
        .unwrap();
    assert_eq!(status, 429);
    assert!(head.to_ascii_lowercase().contains("retry-after: 2"));
    assert!(compact_llm_free_rate_limit(&body));

    sim.push_fault(Fault::ServerError);
    assert_eq!(
        post(
            sim.addr(),
            "/v1/messages",
            &json!({"model": "c", "max_tokens": 5, "messages": []}),
            &[]
        )
        .await
        .unwrap()
        .0,
        500
    );

    sim.push_fault(Fault::Reset);
    assert!(post(sim.addr(), "/v1/chat/completions", &chat("x"), &[])
        .await
        .is_none());

    sim.push_fault(Fault::MalformedJson);
    let (status, _, body) = post(sim.addr(), "/v1/chat/completions", &chat("x"), &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(serde_json::from_str::<Value>(&body).is_err());

    let mut req = chat("a long enough reply please");
    req["stream"] = json!(true);
    sim.push_reply(ScriptedReply::text(
        "one two three four five six seven eight nine ten eleven twelve",
    ));
    sim.push_fault(Fault::StreamCut { after_events: 2 });
    let (status, _, body) = post(sim.addr(), "/v1/chat/completions", &req, &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(!body.contains("[DONE]"));
    assert_eq!(body.matches("data: ").count(), 2);

    let (status, _, _) = post(
        sim.addr(),
        "/v1/chat/completions",
        &chat("x"),
        &[("x-sim-fault", "500")],
    )
    .await
    .unwrap();
    assert_eq!(status, 500);
    let (status, _, body) = post(
        sim.addr(),
        "/v1/chat/completions",
        &chat("x"),
        &[("x-sim-fault", "overflow")],
    )
    .await
    .unwrap();
    assert_eq!(status, 400);
    assert!(body.contains("context_length_exceeded"));
    let (status, _, _) = post(
        sim.addr(),
        "/v1/chat/completions",
        &chat("x"),
        &[("x-sim-fault", "bogus")],
    )
    .await
    .unwrap();
    assert_eq!(status, 400);

    let recs = sim.requests();
    assert_eq!(recs.len(), 8);
    assert_eq!(recs[2].status, 0, "reset is recorded with status 0");
    assert!(recs[0].fault.as_deref().unwrap().contains("RateLimit"));
}

fn compact_llm_free_rate_limit(body: &str) -> bool {
    serde_json::from_str::<Value>(body).unwrap()["error"]["code"] == "rate_limit_exceeded"
}

#[tokio::test]
async fn slow_fault_delays_the_answer() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    sim.push_fault(Fault::Slow {
        delay: Duration::from_millis(300),
    });
    let started = std::time::Instant::now();
    let (status, _, _) = post(sim.addr(), "/v1/chat/completions", &chat("x"), &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(started.elapsed() >= Duration::from_millis(300));
}

/// The `/sim/` control paths script replies, list requests, change the window and clear, for a
/// simulator run as a process; control requests are not recorded.
#[tokio::test]
async fn control_paths_script_and_report() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let replies = json!([{"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.rs"}}]},
                         {"text": "Done."}]);
    let (status, _, body) = post(sim.addr(), "/sim/replies", &replies, &[])
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["queued"], 2);
    let (_, _, body) = post(sim.addr(), "/v1/chat/completions", &chat("go"), &[])
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    let call = &v["choices"][0]["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"path": "a.rs"})
    );

    let (status, _, _) = post(sim.addr(), "/sim/window", &json!({"window": 8}), &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    let (status, _, _) = post(sim.addr(), "/v1/chat/completions", &chat("go on"), &[])
        .await
        .unwrap();
    assert_eq!(status, 400, "over the new 8-token window");

    let mut stream = TcpStream::connect(sim.addr()).await.unwrap();
    let get = format!(
        "GET /sim/requests HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
        sim.addr()
    );
    stream.write_all(get.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let listed: Value = serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    let statuses: Vec<u64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, vec![200, 400]);
    assert_eq!(listed[0]["api"], "chat_completions");
    assert!(listed[0]["input_tokens"].as_u64().unwrap() > 0);

    let (status, _, _) = post(sim.addr(), "/sim/clear", &json!({}), &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(sim.requests().is_empty());
    let (status, _, _) = post(sim.addr(), "/sim/nothing", &json!({}), &[])
        .await
        .unwrap();
    assert_eq!(status, 404);
}

// ---- Provider-side compaction ----------------------------------------------------------------------

/// The `data` of every SSE event named `name`.
fn events(body: &str, name: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|e| {
            let rest = e.trim_start().strip_prefix("event: ")?;
            let (n, data) = rest.split_once("\ndata: ")?;
            (n == name).then(|| serde_json::from_str(data).unwrap())
        })
        .collect()
}

const ON_DEMAND: (&str, &str) = ("anthropic-beta", "compact-2026-09-04");
const THRESHOLD: (&str, &str) = ("anthropic-beta", "compact-2026-01-12");

#[tokio::test]
async fn anthropic_on_demand_compaction_and_its_continuation() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let history = json!([
        {"role": "user", "content": "Port the parser to nom 8."},
        {"role": "assistant", "content": "The lexer is done; the grammar is next."},
        {"role": "user", "content": "Go on."}
    ]);
    let call = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": history, "compaction": {"type": "summarize"}});
    // Without the beta header: refused.
    let (status, _, _) = post(sim.addr(), "/v1/messages", &call, &[]).await.unwrap();
    assert_eq!(status, 400);
    let (status, _, body) = post(sim.addr(), "/v1/messages", &call, &[ON_DEMAND])
        .await
        .unwrap();
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["stop_reason"], "compaction");
    assert_eq!(v["usage"]["input_tokens"], 0);
    assert_eq!(v["usage"]["iterations"][0]["type"], "compaction");
    assert!(
        v["usage"]["iterations"][0]["input_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    let block = v["content"][0].clone();
    assert_eq!(block["type"], "compaction");
    assert!(block["signature"].is_string());

    // Continuing: the block first, alone, unchanged.
    let next = |first: Value| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [
        {"role": "assistant", "content": [first]}, {"role": "user", "content": "Continue."}]})
    };
    let (status, _, _) = post(
        sim.addr(),
        "/v1/messages",
        &next(block.clone()),
        &[ON_DEMAND],
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    let mut edited = block.clone();
    edited["content"] = json!("a shorter summary");
    let (status, _, body) = post(sim.addr(), "/v1/messages", &next(edited), &[ON_DEMAND])
        .await
        .unwrap();
    assert_eq!(status, 400);
    assert!(body.contains("compaction_content_mismatch"), "{body}");
    let mut late = next(block.clone());
    late["messages"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"role": "user", "content": "old"}));
    let (status, _, body) = post(sim.addr(), "/v1/messages", &late, &[ON_DEMAND])
        .await
        .unwrap();
    assert_eq!(status, 400);
    assert!(body.contains("compaction_block_misplaced"), "{body}");

    // Streaming: the whole block in one content_block_start.
    let mut streamed = call.clone();
    streamed["stream"] = json!(true);
    let (_, _, body) = post(sim.addr(), "/v1/messages", &streamed, &[ON_DEMAND])
        .await
        .unwrap();
    let starts = events(&body, "content_block_start");
    assert_eq!(starts.len(), 1);
    assert_eq!(starts[0]["content_block"]["type"], "compaction");
    assert!(starts[0]["content_block"]["content"].is_string());

    // No summary: HTTP 200, empty content, the stop reason; unavailable: 529.
    let (status, _, body) = post(
        sim.addr(),
        "/v1/messages",
        &call,
        &[ON_DEMAND, ("x-sim-fault", "compaction-empty;stop=refusal")],
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["content"], json!([]));
    assert_eq!(v["stop_reason"], "refusal");
    let (status, _, body) = post(
        sim.addr(),
        "/v1/messages",
        &call,
        &[ON_DEMAND, ("x-sim-fault", "compaction-unavailable")],
    )
    .await
    .unwrap();
    assert_eq!(status, 529);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["type"], "overloaded_error");
    assert_eq!(
        v["error"]["details"]["error_code"],
        "compaction_unavailable"
    );

    // Refused options.
    let mut stop = call.clone();
    stop["stop_sequences"] = json!(["END"]);
    let (status, _, _) = post(sim.addr(), "/v1/messages", &stop, &[ON_DEMAND])
        .await
        .unwrap();
    assert_eq!(status, 400);
}

#[tokio::test]
async fn anthropic_threshold_compaction_fires_streams_and_pauses() {
    let sim = Simulator::spawn(SimConfig::with_window(200_000))
        .await
        .unwrap();
    let big = "lorem ipsum dolor sit amet ".repeat(12_000);
    let request = |pause: bool, stream: bool| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 256, "stream": stream,
        "context_management": {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}, "pause_after_compaction": pause}]},
        "messages": [{"role": "user", "content": big.clone()}]})
    };
    let (status, _, body) = post(
        sim.addr(),
        "/v1/messages",
        &request(false, false),
        &[THRESHOLD],
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["content"][0]["type"], "compaction");
    assert_eq!(v["content"][1]["type"], "text");
    let iterations = v["usage"]["iterations"].as_array().unwrap();
    assert_eq!(iterations.len(), 2);
    assert!(iterations[0]["input_tokens"].as_u64().unwrap() >= 50_000);
    assert_eq!(v["usage"]["output_tokens"], iterations[1]["output_tokens"]);
    assert!(
        v["usage"]["input_tokens"].as_u64().unwrap() < 50_000,
        "the top level excludes the compaction pass"
    );

    let (_, _, body) = post(
        sim.addr(),
        "/v1/messages",
        &request(true, false),
        &[THRESHOLD],
    )
    .await
    .unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["stop_reason"], "compaction");
    assert_eq!(v["content"].as_array().unwrap().len(), 1);

    let (_, _, body) = post(
        sim.addr(),
        "/v1/messages",
        &request(false, true),
        &[THRESHOLD],
    )
    .await
    .unwrap();
    let starts = events(&body, "content_block_start");
    assert_eq!(starts[0]["content_block"]["type"], "compaction");
    assert_eq!(starts[1]["index"], 1);
    let deltas = events(&body, "content_block_delta");
    assert_eq!(deltas[0]["delta"]["type"], "compaction_delta");
    let block = v["content"][0].clone();

    // Later requests are read from the last block on; the block must be the one issued.
    let later = json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
        "context_management": {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}}]},
        "messages": [{"role": "user", "content": big.clone()}, {"role": "assistant", "content": [block]}, {"role": "user", "content": "next"}]});
    let (status, _, body) = post(sim.addr(), "/v1/messages", &later, &[THRESHOLD])
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["content"][0]["type"], "text",
        "the old content no longer counts"
    );
    assert!(v["usage"]["input_tokens"].as_u64().unwrap() < 1_000);
    // Without the header: refused.
    let (status, _, _) = post(sim.addr(), "/v1/messages", &later, &[]).await.unwrap();
    assert_eq!(status, 400);
}

#[tokio::test]
async fn openai_compaction_in_band_threshold_and_endpoint() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let input = json!([{"role": "user", "content": "Add retries."},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
        {"type": "compaction_trigger"}]);
    let req = json!({"model": "gpt-5-codex", "stream": true, "store": false, "input": input});
    let (status, _, body) = post(sim.addr(), "/v1/responses", &req, &[]).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(events(&body, "response.compaction.compacting").len(), 1);
    let done = events(&body, "response.completed");
    let output = done[0]["response"]["output"].as_array().unwrap();
    assert_eq!(output.len(), 1);
    let item = output[0].clone();
    assert_eq!(item["type"], "compaction");
    let numbers: Vec<u64> = [
        "response.created",
        "response.compaction.compacting",
        "response.output_item.done",
        "response.completed",
    ]
    .iter()
    .map(|n| events(&body, n)[0]["sequence_number"].as_u64().unwrap())
    .collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");

    // The item comes back unchanged, or is refused.
    let next = |item: Value| json!({"model": "gpt-5-codex", "input": [item, {"role": "user", "content": "next"}]});
    let (status, _, _) = post(sim.addr(), "/v1/responses", &next(item.clone()), &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    let mut edited = item.clone();
    edited["encrypted_content"] = json!("Zm9yZ2Vk");
    let (status, _, _) = post(sim.addr(), "/v1/responses", &next(edited), &[])
        .await
        .unwrap();
    assert_eq!(status, 400);

    // Server-side threshold: the item first, the answer after it.
    let req = json!({"model": "gpt-5-codex", "context_management": [{"type": "compaction", "compact_threshold": 5}],
        "input": [{"role": "user", "content": "a long enough question for the threshold"}]});
    let (_, _, body) = post(sim.addr(), "/v1/responses", &req, &[]).await.unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["output"][0]["type"], "compaction");
    assert_eq!(v["output"][1]["type"], "message");

    // The standalone endpoint, and its 404 on some backends.
    let req = json!({"model": "gpt-5-codex", "input": [{"role": "user", "content": "one"}, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "two"}]}, {"role": "user", "content": "three"}]});
    let (status, _, body) = post(sim.addr(), "/v1/responses/compact", &req, &[])
        .await
        .unwrap();
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "response.compaction");
    let kinds: Vec<&str> = v["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(kinds, ["message", "message", "compaction"]);
    let (status, _, _) = post(
        sim.addr(),
        "/v1/responses/compact",
        &req,
        &[("x-sim-fault", "not-found")],
    )
    .await
    .unwrap();
    assert_eq!(status, 404);
}

/// Starts the `compact-sim` binary with `flags` and returns it with the address it printed.
fn spawn_binary(flags: &[&str]) -> (std::process::Child, SocketAddr) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_compact-sim"))
        .args(["--port", "0"])
        .args(flags)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "compact-sim listening on http://127.0.0.1:PORT (window ...)"
    let url = line.split_whitespace().nth(3).unwrap();
    let addr = url.trim_start_matches("http://").parse().unwrap();
    (child, addr)
}

#[tokio::test]
async fn the_binary_counts_with_the_encoding_it_is_given_on_any_number_of_threads() {
    let text = "Estimates differ from BPE on text like this: fn item_7(x: u32) -> u32 { x * 7 }";
    let count = |e: Encoding| (e.count("be brief") + e.count(text) + 9) as u64;
    assert_ne!(count(Encoding::O200kBase), count(Encoding::Estimate));
    for (flags, encoding) in [
        (&[][..], Encoding::O200kBase),
        (
            &["--encoding", "estimate", "--threads", "2"][..],
            Encoding::Estimate,
        ),
        (&["--encoding", "cl100k_base"][..], Encoding::Cl100kBase),
    ] {
        let (mut child, addr) = spawn_binary(flags);
        let (status, _, body) = post(addr, "/v1/chat/completions", &chat(text), &[])
            .await
            .unwrap();
        child.kill().unwrap();
        let _ = child.wait();
        assert_eq!(status, 200, "{flags:?}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["usage"]["prompt_tokens"], count(encoding), "{flags:?}");
    }
    for bad in [&["--threads", "0"][..], &["--encoding", "bogus"][..]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_compact-sim"))
            .args(bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?} was accepted");
    }
}
