//! The paths and body encodings real clients use: unversioned paths (`/chat/completions`,
//! `/responses`, `/messages`) and Azure OpenAI's paths are compacted like the `/v1` ones and reach
//! the upstream with the client's path and query; gzip, deflate, br and zstd bodies are compacted
//! like plain ones and go upstream uncompressed, a decompression bomb is refused at the limit, an
//! unknown coding is refused, and a pass-through keeps the client's compressed bytes.

use crate::support::{tool_output, Harness, Options, Wire, WINDOW};
use bytes::Bytes;
use compact_proxy::ModelRoute;
use serde_json::{json, Value};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A conversation far over [`WINDOW`] in one request: 30 tool calls with long outputs, then a
/// user turn. `prompt` keeps sessions apart (it is part of the session's fingerprint).
fn long_request(wire: Wire, prompt: &str) -> Value {
    let mut request = wire.first_request("sim-model", prompt, false);
    let list = request[wire.list_key()].as_array_mut().unwrap();
    for step in 0..30 {
        let id = format!("call_{step}");
        let output = tool_output("src/lib.rs", step, 40);
        match wire {
            Wire::Chat => list.extend([
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}}]}),
                json!({"role": "tool", "tool_call_id": id, "content": output}),
            ]),
            Wire::Responses => list.extend([
                json!({"type": "function_call", "call_id": id, "name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}),
                json!({"type": "function_call_output", "call_id": id, "output": output}),
            ]),
            Wire::Anthropic => list.extend([
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "read_file", "input": {"path": "src/lib.rs"}}]}),
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": output}]}),
            ]),
        }
    }
    match wire {
        Wire::Responses => list.push(
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now summarise."}]}),
        ),
        // The last user turn holds the last tool result: extend it (roles alternate).
        Wire::Anthropic => list
            .last_mut()
            .and_then(|m| m["content"].as_array_mut())
            .unwrap()
            .push(json!({"type": "text", "text": "Now summarise."})),
        Wire::Chat => list.push(json!({"role": "user", "content": "Now summarise."})),
    }
    request
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// `data` in `coding` (as HTTP names it).
fn encode(coding: &str, data: &[u8]) -> Vec<u8> {
    match coding {
        "gzip" => gzip(data),
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "br" => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                w.write_all(data).unwrap();
            }
            out
        }
        "zstd" => {
            ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
        }
        _ => panic!("no encoder for {coding}"),
    }
}

/// `data` in each coding of a `Content-Encoding` list, in the order it names them.
fn encode_all(list: &str, data: &[u8]) -> Vec<u8> {
    list.split(',')
        .map(str::trim)
        .fold(data.to_vec(), |body, coding| encode(coding, &body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unversioned_and_azure_paths_are_compacted_and_keep_their_path_and_query() {
    let h = Harness::start().await;
    let cases = [
        (Wire::Chat, "/chat/completions"),
        (Wire::Responses, "/responses"),
        (Wire::Anthropic, "/messages"),
        (Wire::Chat, "/openai/v1/chat/completions"),
        (Wire::Responses, "/openai/v1/responses"),
        (
            Wire::Responses,
            "/openai/responses?api-version=2025-03-01-preview",
        ),
    ];
    for (i, (wire, target)) in cases.into_iter().enumerate() {
        h.sim.clear();
        let before = h.proxy.metrics().compactions();
        let request = long_request(wire, &format!("Case {i}: fix the tests."));
        let reply = h.post(target, &[], &request).await;
        assert_eq!(reply.status, 200, "{target}: {}", reply.text());
        assert!(
            h.proxy.metrics().compactions() > before,
            "{target}: not compacted"
        );
        let sent = &h.sim.requests()[0];
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (target, None),
        };
        assert_eq!(sent.path, path);
        assert_eq!(sent.query.as_deref(), query, "{target}");
        assert!(sent.input_tokens.unwrap() as usize <= WINDOW, "{target}");
        assert!(sent.raw.len() < request.to_string().len(), "{target}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_azure_deployment_path_is_compacted_for_its_deployment() {
    // The deployment has its own upstream and window: a request that reaches that upstream
    // compacted for that window was routed by the deployment in its path (its body names no model).
    let deployment = compact_sim::Simulator::spawn(compact_sim::SimConfig::with_window(8_000))
        .await
        .unwrap();
    let base_url = deployment.base_url();
    let h = Harness::with(Options {
        adjust: Some(Arc::new(move |config| {
            config.models.push(ModelRoute {
                name: "prod-gpt".into(),
                base_url: Some(base_url.clone()),
                context_window: Some(8_000),
                backend: None,
            });
        })),
        ..Options::default()
    })
    .await;
    let target = "/openai/deployments/prod-gpt/chat/completions?api-version=2024-10-21";
    let mut request = long_request(Wire::Chat, "Deployed: fix the tests.");
    request.as_object_mut().unwrap().remove("model");
    let reply = h
        .post(target, &[("api-key", "azure-key-0123456789")], &request)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(h.proxy.metrics().compactions() >= 1, "not compacted");
    assert!(h.sim.requests().is_empty(), "the default upstream got it");
    let sent = &deployment.requests()[0];
    assert_eq!(sent.path, "/openai/deployments/prod-gpt/chat/completions");
    assert_eq!(sent.query.as_deref(), Some("api-version=2024-10-21"));
    assert!(sent.input_tokens.unwrap() <= 8_000);
    assert!(sent.body.get("model").is_none(), "the body got a model");
    // Azure's key header is forwarded like the other credentials, and written nowhere else.
    assert_eq!(sent.header("api-key"), Some("azure-key-0123456789"));
    let logged = h.log.lines().join("\n");
    assert!(!logged.contains("azure-key-0123456789"), "{logged}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_bodies_are_compacted_like_plain_ones() {
    let request = long_request(Wire::Anthropic, "Compressed: fix the tests.");
    let plain = Bytes::from(request.to_string());
    // What the upstream gets for the plain body, from a proxy of its own.
    let h = Harness::start().await;
    let reply = h.send("POST", "/v1/messages", &[], plain.clone()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let expected = h.sim.requests()[0].raw.clone();
    assert!(expected.len() < plain.len(), "not compacted");
    h.stop().await;
    for coding in ["gzip", "deflate", "br", "zstd", "zstd, gzip"] {
        let h = Harness::start().await;
        let body = Bytes::from(encode_all(coding, &plain));
        let reply = h
            .send(
                "POST",
                "/v1/messages",
                &[("content-encoding", coding)],
                body,
            )
            .await;
        assert_eq!(reply.status, 200, "{coding}: {}", reply.text());
        assert_eq!(h.proxy.metrics().compactions(), 1, "{coding}");
        let sent = &h.sim.requests()[0];
        assert_eq!(sent.raw, expected, "{coding}: another upstream request");
        assert_eq!(sent.header("content-encoding"), None, "{coding}");
        assert_eq!(
            sent.header("content-length"),
            Some(expected.len().to_string().as_str()),
            "{coding}"
        );
        h.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_request_that_fits_goes_upstream_as_its_decoded_bytes() {
    let h = Harness::start().await;
    let request = Wire::Chat.first_request("sim-model", "Hello there.", false);
    let plain = format!("{{ \"zz_first\" : 1,\n{}", &request.to_string()[1..]);
    let body = Bytes::from(encode("br", plain.as_bytes()));
    let reply = h
        .send(
            "POST",
            "/v1/chat/completions",
            &[("content-encoding", "br")],
            body,
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let sent = &h.sim.requests()[0];
    assert_eq!(sent.raw, Bytes::from(plain));
    assert_eq!(sent.header("content-encoding"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decompression_bomb_gets_413_at_the_limit_and_the_proxy_goes_on() {
    const LIMIT: usize = 64 * 1024;
    let h = Harness::with(Options {
        max_body_bytes: LIMIT,
        ..Options::default()
    })
    .await;
    let zeros = vec![0_u8; 10 * 1024 * 1024];
    for coding in ["gzip", "deflate", "br", "zstd"] {
        let bomb = encode(coding, &zeros);
        assert!(bomb.len() < LIMIT, "{coding}: {} bytes", bomb.len());
        for (wire, anthropic) in [(Wire::Chat, false), (Wire::Anthropic, true)] {
            let reply = h
                .send(
                    "POST",
                    wire.path(),
                    &[("content-encoding", coding)],
                    Bytes::from(bomb.clone()),
                )
                .await;
            assert_eq!(reply.status, 413, "{coding} {wire:?}: {}", reply.text());
            let error = reply.json();
            if anthropic {
                assert_eq!(error["type"], "error");
                assert_eq!(error["error"]["type"], "request_too_large");
            } else {
                assert_eq!(error["error"]["code"], "request_too_large");
            }
            assert_eq!(reply.headers["x-compact-proxy-error"], "1");
        }
    }
    assert!(h.sim.requests().is_empty());
    // The proxy goes on serving.
    let request = Wire::Chat.first_request("sim-model", "Still there?", false);
    let reply = h.post("/v1/chat/completions", &[], &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    h.stop().await;

    // Ten gigabytes in 10 MB (a thousand gzip members of 10 MB of zeros each): decoded whole, it
    // would take tens of seconds and all the memory; bounded, it is refused at once.
    let h = Harness::with(Options {
        max_body_bytes: 16 * 1024 * 1024,
        ..Options::default()
    })
    .await;
    let bomb = gzip(&zeros).repeat(1000);
    let started = Instant::now();
    let reply = h
        .send(
            "POST",
            "/v1/responses",
            &[("content-encoding", "gzip")],
            Bytes::from(bomb),
        )
        .await;
    assert_eq!(reply.status, 413, "{}", reply.text());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let request = Wire::Responses.first_request("sim-model", "Still there?", false);
    assert_eq!(h.post("/v1/responses", &[], &request).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_encoding_gets_415_in_the_providers_shape() {
    let h = Harness::start().await;
    for wire in [Wire::Anthropic, Wire::Responses] {
        let request = wire.first_request("sim-model", "Hello.", false);
        let reply = h
            .send(
                "POST",
                wire.path(),
                &[("content-encoding", "compress")],
                Bytes::from(request.to_string()),
            )
            .await;
        assert_eq!(reply.status, 415, "{wire:?}: {}", reply.text());
        let error = reply.json();
        let message = match wire {
            Wire::Anthropic => {
                assert_eq!(error["error"]["type"], "invalid_request_error");
                error["error"]["message"].as_str().unwrap().to_owned()
            }
            _ => {
                assert_eq!(error["error"]["code"], "unsupported_content_encoding");
                error["error"]["message"].as_str().unwrap().to_owned()
            }
        };
        assert!(message.contains("\"compress\""), "{message}");
        assert!(message.contains("gzip, deflate, br and zstd"), "{message}");
    }
    // A body that is not what its coding says is a plain bad request.
    let reply = h
        .send(
            "POST",
            "/v1/messages",
            &[("content-encoding", "gzip")],
            Bytes::from_static(b"{\"not\": \"gzip\"}"),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert!(h.sim.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_through_keeps_the_compressed_bytes_and_header() {
    let h = Harness::start().await;
    // An unknown path, and a request on a compacting route that goes untouched.
    let mut untouched = Wire::Responses.first_request("sim-model", "Go on.", false);
    untouched["previous_response_id"] = json!("resp_123");
    for (target, request) in [
        ("/v1/embeddings", json!({"model": "m", "input": "hello"})),
        ("/v1/responses", untouched),
    ] {
        h.sim.clear();
        let body = Bytes::from(encode("gzip", request.to_string().as_bytes()));
        h.send(
            "POST",
            target,
            &[("content-encoding", "gzip")],
            body.clone(),
        )
        .await;
        let sent = &h.sim.requests()[0];
        assert_eq!(sent.path, target);
        assert_eq!(sent.raw, body, "{target}");
        assert_eq!(sent.header("content-encoding"), Some("gzip"), "{target}");
    }
}
