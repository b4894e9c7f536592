//! What the proxy does to requests: unknown fields survive (untouched and re-encoded), credentials
//! reach the upstream but no log, store or metric, bad input gets a clear error (never a panic),
//! and what must not be compacted goes upstream byte for byte.

use crate::planted::planted;
use crate::support::{script_tool_call, tool_output, Harness, Options, Wire, WIRES};
use bytes::Bytes;
use compact_session::Store;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_fits_goes_upstream_byte_for_byte() {
    let h = Harness::start().await;
    for wire in WIRES {
        h.sim.clear();
        // Odd spacing and key order: the client's bytes, not a re-serialisation, are forwarded.
        let request = wire.first_request("sim-model", "Hello there.", false);
        let text = format!("{{ \"zz_first\" : 1,\n{}", &request.to_string()[1..]);
        let reply = h
            .send("POST", wire.path(), &[], Bytes::from(text.clone()))
            .await;
        assert_eq!(reply.status, 200, "{wire:?}: {}", reply.text());
        assert_eq!(h.sim.requests()[0].raw, Bytes::from(text), "{wire:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_survive_compaction() {
    let h = Harness::start().await;
    for wire in WIRES {
        h.sim.clear();
        // One request far over the window: it is compacted and re-encoded.
        let mut request = wire.first_request("sim-model", "Fix everything.", false);
        let list = wire.list_key();
        for step in 0..30 {
            script_tool_call(&h.sim, step);
            let call_id = format!("call_{step}");
            match wire {
                Wire::Chat => {
                    request[list].as_array_mut().unwrap().extend([
                        json!({"role": "assistant", "content": null, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]}),
                        json!({"role": "tool", "tool_call_id": call_id, "content": tool_output("a.rs", step, 40)}),
                    ]);
                }
                Wire::Responses => {
                    request[list].as_array_mut().unwrap().extend([
                        json!({"type": "function_call", "call_id": call_id, "name": "read_file", "arguments": "{\"path\":\"a\"}"}),
                        json!({"type": "function_call_output", "call_id": call_id, "output": tool_output("a.rs", step, 40)}),
                    ]);
                }
                Wire::Anthropic => {
                    request[list].as_array_mut().unwrap().extend([
                        json!({"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": "a"}}]}),
                        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": tool_output("a.rs", step, 40)}]}),
                    ]);
                }
            }
        }
        let last = match wire {
            Wire::Responses => {
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now summarise.", "x_last_part": 7}], "x_last_msg": "yes"})
            }
            _ => {
                json!({"role": "user", "content": [{"type": "text", "text": "Now summarise.", "x_last_part": 7}], "x_last_msg": "yes"})
            }
        };
        if wire == Wire::Anthropic {
            // The previous user turn holds the last tool result: extend it (roles alternate).
            let list = request[list].as_array_mut().unwrap();
            let previous = list.last_mut().unwrap();
            previous["content"]
                .as_array_mut()
                .unwrap()
                .push(last["content"][0].clone());
            previous["x_last_msg"] = json!("yes");
        } else {
            request[list].as_array_mut().unwrap().push(last);
        }
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200, "{wire:?}: {}", reply.text());
        assert!(
            h.proxy.metrics().compactions() >= 1,
            "{wire:?}: not compacted"
        );
        let sent = &h.sim.requests()[0].body;
        assert!(
            sent.to_string().len() < request.to_string().len(),
            "{wire:?}: not smaller"
        );
        assert_eq!(sent["x_client_tag"], json!({"keep": [1, 2]}), "{wire:?}");
        let items = sent[list].as_array().unwrap();
        let last_sent = items.last().unwrap();
        assert_eq!(last_sent["x_last_msg"], "yes", "{wire:?}: {last_sent}");
        let parts = last_sent["content"].as_array().unwrap();
        assert!(
            parts.iter().any(|p| p["x_last_part"] == 7),
            "{wire:?}: {last_sent}"
        );
        // The client's tools unchanged, then the recall tool (the request holds stubs).
        let tools = sent["tools"].as_array().unwrap();
        let own = request["tools"].as_array().unwrap();
        assert_eq!(&tools[..own.len()], own.as_slice(), "{wire:?}");
        assert_eq!(tools.len(), own.len() + 1, "{wire:?}");
        let added = &tools[own.len()];
        let name = added.get("name").unwrap_or(&added["function"]["name"]);
        assert_eq!(name, compact_sim::RECALL_TOOL, "{wire:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_reach_the_upstream_and_nothing_else() {
    let h = Harness::with(Options {
        admin_token: Some("admin-token-1".into()),
        ..Options::default()
    })
    .await;
    let secret = "sk-test-SECRET-0123456789";
    for wire in WIRES {
        let mut request = wire.first_request("sim-model", "Keep my key safe.", wire == Wire::Chat);
        for step in 0..20 {
            script_tool_call(&h.sim, step);
            let auth = format!("Bearer {secret}");
            let headers: &[(&str, &str)] = &[("authorization", &auth), ("x-api-key", secret)];
            let reply = h.post(wire.path(), headers, &request).await;
            assert_eq!(reply.status, 200);
            let turn = wire.read(wire == Wire::Chat, &reply.body);
            wire.extend(&mut request, &turn, &[tool_output("src/k.rs", step, 40)]);
        }
    }
    // The upstream got them.
    let upstream = h.sim.requests();
    assert!(upstream
        .iter()
        .all(|r| r.header("x-api-key") == Some(secret)));
    assert!(upstream.iter().all(|r| r
        .header("authorization")
        .is_some_and(|v| v.contains(secret))));
    assert!(upstream
        .iter()
        .all(|r| r.header("x-compact-session").is_none()));
    // Nothing else did.
    let logs = h.log.lines().join("\n");
    assert!(!logs.is_empty());
    assert!(!logs.contains(secret), "a log line holds the key");
    let mut stored = String::new();
    for id in h.store.sessions().unwrap() {
        for record in h.store.read(&id, 0).unwrap() {
            stored.push_str(&format!("{record:?}"));
        }
    }
    assert!(stored.len() > 10_000, "the store holds the sessions");
    assert!(!stored.contains(secret), "a stored record holds the key");
    assert!(!h.proxy.metrics().render().contains(secret));
    let admin = [("authorization", "Bearer admin-token-1")];
    let sessions = h.get("/admin/sessions", &admin).await.json();
    for s in sessions["sessions"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        let events = h.get(&format!("/admin/sessions/{id}/events"), &admin).await;
        assert!(!events.text().contains(secret));
    }
}

/// Secrets of every kind the built-in redactor detects, planted in the conversation (user messages
/// and tool outputs): the upstream gets the conversation as the client sent it, but no log line,
/// metric, stored record or event holds any of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_secrets_of_every_kind_reach_the_upstream_and_nothing_else() {
    let h = Harness::with(Options {
        admin_token: Some("admin-token-1".into()),
        ..Options::default()
    })
    .await;
    let mut seed = 0x2545_f491_u64;
    let mut below = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let mut secrets = Vec::new();
    for wire in WIRES {
        let planted = planted(&mut below);
        let mut request = wire.first_request(
            "sim-model",
            &format!("Deploy with {}.", planted[0].1),
            wire == Wire::Chat,
        );
        for (step, (kind, text, secret)) in planted.into_iter().enumerate() {
            script_tool_call(&h.sim, step);
            let reply = h.post(wire.path(), &[], &request).await;
            assert_eq!(reply.status, 200, "{wire:?} step {step}");
            let turn = wire.read(wire == Wire::Chat, &reply.body);
            let output = format!("{text}\n{}", tool_output("src/env.rs", step, 40));
            wire.extend(&mut request, &turn, &[output]);
            secrets.push((kind, secret));
        }
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200, "{wire:?}");
    }
    // The model saw them (the proxy forwards what the client sent, compacted).
    let upstream: String = h
        .sim
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.raw).into_owned())
        .collect();
    let seen = secrets
        .iter()
        .filter(|(_, s)| upstream.contains(s.as_str()))
        .count();
    assert!(
        seen * 2 > secrets.len(),
        "only {seen} of {} secrets went upstream",
        secrets.len()
    );
    assert!(
        h.proxy.metrics().compactions() > 0,
        "the sessions compacted"
    );

    let mut written = vec![
        ("log".to_owned(), h.log.lines().join("\n")),
        ("metrics".to_owned(), h.proxy.metrics().render()),
    ];
    let admin = [("authorization", "Bearer admin-token-1")];
    for id in h.store.sessions().unwrap() {
        let records: String = h
            .store
            .read(&id, 0)
            .unwrap()
            .iter()
            .map(|r| format!("{r:?}"))
            .collect();
        written.push((format!("store {id}"), records));
        let events = h.get(&format!("/admin/sessions/{id}/events"), &admin).await;
        written.push((format!("events {id}"), events.text()));
    }
    assert!(
        written.iter().any(|(_, t)| t.contains("[REDACTED:")),
        "nothing was redacted"
    );
    let leaks: Vec<String> = written
        .iter()
        .flat_map(|(place, text)| {
            secrets
                .iter()
                .filter(|(_, s)| text.contains(s.as_str()))
                .map(move |(kind, _)| format!("{kind} in {place}"))
        })
        .collect();
    assert!(leaks.is_empty(), "{} leaks: {leaks:?}", leaks.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_error() {
    let h = Harness::with(Options {
        max_body_bytes: 64 * 1024,
        ..Options::default()
    })
    .await;
    let cases: Vec<(&str, Bytes, u16, &str)> = vec![
        (
            "/v1/chat/completions",
            Bytes::from_static(b"{\"model\": \"m\", \"messages\": ["),
            400,
            "not valid JSON",
        ),
        (
            "/v1/messages",
            Bytes::from_static(b"[1, 2, 3]"),
            400,
            "JSON object",
        ),
        (
            "/v1/responses",
            Bytes::from_static(b"\xff\xfe\x00garbage"),
            400,
            "not valid JSON",
        ),
        (
            "/v1/messages",
            Bytes::from(vec![b' '; 70 * 1024]),
            413,
            "larger than",
        ),
        (
            "/v1/chat/completions",
            Bytes::from(format!("{{\"messages\": \"{}\"}}", "x".repeat(65 * 1024))),
            413,
            "larger than",
        ),
    ];
    for (path, body, status, says) in cases {
        let reply = h.send("POST", path, &[], body).await;
        assert_eq!(reply.status, status, "{path}: {}", reply.text());
        let v = reply.json();
        // Both shapes put the message at `error.message`.
        let message = &v["error"]["message"];
        assert!(message.as_str().unwrap().contains(says), "{path}: {v}");
        if path == "/v1/messages" {
            assert_eq!(v["type"], "error", "Anthropic's error shape");
        }
    }
    // A bad session header.
    let request = Wire::Chat.first_request("sim-model", "hi", false);
    let long = "s".repeat(300);
    let reply = h
        .post(Wire::Chat.path(), &[("x-compact-session", &long)], &request)
        .await;
    assert_eq!(reply.status, 400);
    // Hostile but valid requests: the upstream judges them, the proxy does not fall over.
    let hostile: Vec<Value> = vec![
        json!({"model": "m", "messages": []}),
        json!({"model": "m", "messages": [{"role": "wizard", "content": 5}]}),
        json!({"model": "m", "messages": [{"role": "user", "content": "\u{0000}\u{202e}<script>\u{fffd}".repeat(100)}]}),
        json!({"model": "m", "messages": [{"role": "tool", "tool_call_id": "nope", "content": "orphan"}]}),
        json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "mystery", "blob": [[[[{}]]]]}]}]}),
    ];
    for (i, body) in hostile.iter().enumerate() {
        for wire in WIRES {
            let reply = h.post(wire.path(), &[], body).await;
            assert!(
                reply.status < 500,
                "{wire:?} case {i}: {} {}",
                reply.status,
                reply.text()
            );
        }
    }
    let ok = h.post(Wire::Chat.path(), &[], &request).await;
    assert_eq!(ok.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_cannot_be_decoded_goes_through_loudly() {
    let h = Harness::start().await;
    // A role the Messages API does not know: the upstream judges it, and everyone is told.
    let odd = json!({"model": "m", "max_tokens": 10,
        "messages": [{"role": "narrator", "content": "x"}]});
    let reply = h.post("/v1/messages", &[], &odd).await;
    assert_eq!(
        reply.headers.get("x-compact-passthrough").unwrap(),
        "undecodable"
    );
    assert_eq!(
        h.sim.requests().last().unwrap().raw,
        Bytes::from(odd.to_string())
    );
    let warned = h.log.lines().into_iter().any(|l| {
        l.contains("\"level\":\"warn\"")
            && l.contains("\"event\":\"passthrough\"")
            && l.contains("\"reason\":\"undecodable\"")
    });
    assert!(warned, "{:?}", h.log.lines());
    // The provider's own compaction call goes through too, as the protocol wants: no warning.
    let summarize = json!({"model": "m", "max_tokens": 100, "compaction": {"type": "summarize"},
        "messages": [{"role": "user", "content": "x"}]});
    let reply = h.post("/v1/messages", &[], &summarize).await;
    assert_eq!(
        reply.headers.get("x-compact-passthrough").unwrap(),
        "provider_compaction"
    );
    let metrics = h.get("/metrics", &[]).await.text();
    assert!(
        metrics.contains("compact_passthrough_total{reason=\"undecodable\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("compact_passthrough_total{reason=\"provider_compaction\"} 1"),
        "{metrics}"
    );
    let warnings = h
        .log
        .lines()
        .into_iter()
        .filter(|l| l.contains("\"event\":\"passthrough\""))
        .count();
    assert_eq!(warnings, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_must_not_be_compacted_goes_upstream_untouched() {
    let h = Harness::start().await;
    // Other paths, count_tokens, provider compaction calls and server-side history.
    let trigger = json!({"model": "m", "store": false, "stream": false,
        "input": [{"role": "user", "content": "x"}, {"type": "compaction_trigger"}]});
    let summarize = json!({"model": "m", "max_tokens": 100, "compaction": {"type": "summarize"},
        "messages": [{"role": "user", "content": "x"}]});
    let chained = json!({"model": "m", "previous_response_id": "resp_1", "input": "next"});
    let count = json!({"model": "m", "messages": [{"role": "user", "content": "count me"}]});
    let cases = [
        ("/v1/responses", trigger),
        ("/v1/messages", summarize),
        ("/v1/responses", chained),
        ("/v1/messages/count_tokens", count),
        ("/v1/embeddings", json!({"input": "x"})),
    ];
    for (path, body) in cases {
        h.sim.clear();
        let text = body.to_string();
        let _ = h
            .send(
                "POST",
                path,
                &[("anthropic-version", "2023-06-01")],
                Bytes::from(text.clone()),
            )
            .await;
        let got = h.sim.requests();
        assert_eq!(got.len(), 1, "{path}");
        assert_eq!(got[0].raw, Bytes::from(text), "{path}");
        assert_eq!(got[0].path, path);
    }
    // count_tokens answers from the upstream.
    let reply = h
        .post(
            "/v1/messages/count_tokens",
            &[],
            &json!({"model": "m", "messages": [{"role": "user", "content": "count me"}]}),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert!(reply.json()["input_tokens"].as_u64().unwrap() > 0);
    // A GET elsewhere is forwarded with its query.
    let reply = h.get("/v1/models?limit=2", &[]).await;
    assert_eq!(reply.status, 404, "the simulator does not know /v1/models");
    assert_eq!(h.sim.requests().last().unwrap().path, "/v1/models");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_route_picks_its_upstream_and_window() {
    use compact_proxy::ModelRoute;
    use std::sync::Arc;
    let other = compact_sim::Simulator::spawn(compact_sim::SimConfig::with_window(8_000))
        .await
        .unwrap();
    let base_url = other.base_url();
    let h = Harness::with(Options {
        adjust: Some(Arc::new(move |config| {
            config.models.push(ModelRoute {
                name: "small-model".into(),
                base_url: Some(base_url.clone()),
                context_window: Some(8_000),
                backend: None,
            });
        })),
        ..Options::default()
    })
    .await;
    let wire = Wire::Anthropic;
    let mut request = wire.first_request("small-model", "Routed.", false);
    for step in 0..20 {
        other.push_reply(
            compact_sim::ScriptedReply::text(format!("Step {step}:"))
                .with_tool_call("read_file", json!({"path": "x"})),
        );
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200, "step {step}: {}", reply.text());
        let turn = wire.read(false, &reply.body);
        wire.extend(&mut request, &turn, &[tool_output("src/r.rs", step, 40)]);
    }
    assert!(
        h.sim.requests().is_empty(),
        "the default upstream got a routed request"
    );
    let got = other.requests();
    assert_eq!(got.len(), 20);
    assert!(got.iter().all(|r| r.status == 200));
    assert!(got.iter().all(|r| r.input_tokens.unwrap() <= 8_000));
    assert!(h.proxy.metrics().compactions() >= 1);
}
