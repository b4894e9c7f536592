//! What a scale-out run shows, and where it falls short of issue 41's "done when": the clients'
//! counts, the simulator's record of what reached the upstream, the replicas' `/metrics`, and the
//! store read back with `compactctl sessions show` and `export`.

use super::agent::Wire;
use super::deploy::Deployment;
use super::{Mode, Session, Size, WINDOW};
use crate::support::run;
use serde_json::Value;
use std::collections::BTreeMap;

/// The first `max` characters of `text`.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// A request's history as one line per system prompt, text, tool call and tool result, the same
/// whichever way its JSON spells them (a string or text blocks).
pub fn canonical(request: &Value, wire: Wire) -> Vec<String> {
    let mut lines = Vec::new();
    if wire == Wire::Messages && !request["system"].is_null() {
        lines.push(format!("system|{}", flat_text(&request["system"])));
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("?");
        match &message["content"] {
            Value::Array(blocks) => {
                for block in blocks {
                    let part = match block["type"].as_str() {
                        Some("text") => format!("text:{}", block["text"].as_str().unwrap_or("")),
                        Some("tool_use") => format!(
                            "tool_use:{}:{}:{}",
                            block["id"].as_str().unwrap_or(""),
                            block["name"].as_str().unwrap_or(""),
                            block["input"]
                        ),
                        Some("tool_result") => format!(
                            "tool_result:{}:{}",
                            block["tool_use_id"].as_str().unwrap_or(""),
                            flat_text(&block["content"])
                        ),
                        _ => block.to_string(),
                    };
                    lines.push(format!("{role}|{part}"));
                }
            }
            content => lines.push(format!("{role}|text:{}", flat_text(content))),
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            lines.push(format!("{role}|tool_call:{call}"));
        }
    }
    lines
}

/// The text of a string or of a list of text blocks.
fn flat_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| {
                b["text"]
                    .as_str()
                    .map_or_else(|| b.to_string(), str::to_owned)
            })
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// What the run shows: the clients' counts, the simulator's, the replicas' metrics and the store's.
pub struct Report {
    turns: usize,
    answered: usize,
    attempts: usize,
    passthrough: BTreeMap<String, usize>,
    metrics_passthrough: BTreeMap<String, u64>,
    compactions: u64,
    upstream_requests: usize,
    over_window: usize,
    largest_input: u64,
    overflows_to_client: usize,
    stopped: Vec<String>,
    /// Per session: (calls logged, export mismatch).
    stored: Vec<(String, Option<u64>, Option<String>)>,
}

impl Report {
    pub fn gather(size: Size, sessions: &[Session], deployment: &Deployment) -> Report {
        let mut passthrough = BTreeMap::new();
        for s in sessions {
            for (_, reason) in &s.passthrough {
                *passthrough.entry(reason.clone()).or_default() += 1;
            }
        }
        let mut metrics_passthrough = BTreeMap::new();
        let mut compactions = 0;
        for r in &deployment.replicas {
            let mut texts = r.metrics_before_kill.clone();
            texts.push(r.metrics());
            for text in texts {
                for (name, label, n) in counters(&text) {
                    match name.as_str() {
                        "compact_passthrough_total" => {
                            *metrics_passthrough.entry(label).or_default() += n;
                        }
                        "compact_proxy_compactions_total" => compactions += n,
                        _ => {}
                    }
                }
            }
        }
        let requests: Vec<_> = deployment
            .sim
            .requests()
            .into_iter()
            .filter(|r| {
                matches!(
                    r.api,
                    compact_sim::Api::ChatCompletions | compact_sim::Api::Messages
                )
            })
            .collect();
        let over_window = requests
            .iter()
            .filter(|r| r.input_tokens.unwrap_or(0) + r.max_output.unwrap_or(0) > WINDOW)
            .count();
        let largest_input = requests
            .iter()
            .filter_map(|r| r.input_tokens)
            .max()
            .unwrap_or(0);
        let stored = sessions
            .iter()
            .map(|s| {
                let (calls, mismatch) = stored_session(s, &deployment.store);
                (s.id.clone(), calls, mismatch)
            })
            .collect();
        Report {
            turns: size.sessions * size.turns,
            answered: sessions.iter().map(|s| s.answered).sum(),
            attempts: sessions.iter().map(|s| s.attempts).sum(),
            passthrough,
            metrics_passthrough,
            compactions,
            upstream_requests: requests.len(),
            over_window,
            largest_input,
            overflows_to_client: sessions.iter().map(|s| s.overflows).sum(),
            stopped: sessions
                .iter()
                .filter_map(|s| s.stopped.as_ref().map(|e| format!("{}: {e}", s.id)))
                .collect(),
            stored,
        }
    }

    /// The counts in one line.
    pub fn line(&self) -> String {
        let mismatched = self.stored.iter().filter(|s| s.2.is_some()).count();
        format!(
            "{} of {} turns answered ({} requests), pass-through {} {:?} (metrics {:?}), \
             {} compactions, upstream {} requests of which {} over the window (largest {} tokens, \
             {:.1}x the window), {} overflow errors to the client, {} sessions stopped early, \
             {} of {} exports unequal to the client's history",
            self.answered,
            self.turns,
            self.attempts,
            self.passthrough.values().sum::<usize>(),
            self.passthrough,
            self.metrics_passthrough,
            self.compactions,
            self.upstream_requests,
            self.over_window,
            self.largest_input,
            self.largest_input as f64 / WINDOW as f64,
            self.overflows_to_client,
            self.stopped.len(),
            mismatched,
            self.stored.len()
        )
    }

    /// Every way the run falls short of the "done when".
    pub fn failures(&self, sessions: &[Session], mode: Mode) -> Vec<String> {
        let mut failures = Vec::new();
        let passed: usize = self.passthrough.values().sum();
        if passed > 0 {
            let turns: Vec<String> = sessions
                .iter()
                .flat_map(|s| {
                    s.passthrough
                        .iter()
                        .map(move |(t, r)| format!("{} turn {t} ({r})", s.id))
                })
                .collect();
            failures.push(format!(
                "{passed} requests passed through uncompacted: {}",
                turns.join(", ")
            ));
        }
        if self.metrics_passthrough.values().sum::<u64>() > 0 {
            failures.push(format!(
                "compact_passthrough_total in /metrics: {:?}",
                self.metrics_passthrough
            ));
        }
        if self.over_window > 0 {
            failures.push(format!(
                "{} requests over the {WINDOW}-token window reached the upstream (largest {} tokens)",
                self.over_window, self.largest_input
            ));
        }
        if self.overflows_to_client > 0 {
            failures.push(format!(
                "{} overflow errors returned to the client",
                self.overflows_to_client
            ));
        }
        for stopped in &self.stopped {
            failures.push(format!("session {stopped}"));
        }
        for ((id, calls, mismatch), s) in self.stored.iter().zip(sessions) {
            if let Some(m) = mismatch {
                failures.push(format!(
                    "session {id}: the export is not the client's history: {m}"
                ));
            }
            // A turn whose reply was lost with a killed replica is sent again: its call may be
            // logged twice, never more often than it was sent.
            let calls = calls.unwrap_or(0) as usize;
            let fine = if mode.kill {
                calls >= s.answered && calls <= s.attempts
            } else {
                calls == s.answered
            };
            if !fine {
                failures.push(format!(
                    "session {id}: {calls} calls logged (compact.sent) for {} turns answered ({} requests)",
                    s.answered, s.attempts
                ));
            }
        }
        failures
    }
}

/// The session as the store holds it: the calls logged (`compact.sent` events of `sessions show`),
/// and how its export (`sessions export`) differs from the client's last history, if it does.
fn stored_session(s: &Session, store: &str) -> (Option<u64>, Option<String>) {
    let wire = s.wire;
    let show = run(&["sessions", "show", &s.id, "--json", "--store", store]);
    let calls =
        (show.code == 0).then(|| show.json()["events"]["compact.sent"].as_u64().unwrap_or(0));
    let export = run(&[
        "sessions",
        "export",
        &s.id,
        "--format",
        wire.export_format(),
        "--store",
        store,
    ]);
    if export.code != 0 {
        return (
            calls,
            Some(format!("export failed: {}", export.stderr.trim())),
        );
    }
    let stored = canonical(&export.json(), wire);
    if stored == s.sent {
        return (calls, None);
    }
    let at = stored
        .iter()
        .zip(&s.sent)
        .position(|(a, b)| a != b)
        .unwrap_or(stored.len().min(s.sent.len()));
    let line = |l: Option<&String>| l.map_or("(nothing)".to_owned(), |l| cut(l, 160));
    (
        calls,
        Some(format!(
            "{} entries stored, {} sent; first difference at {at}: stored {:?}, sent {:?}",
            stored.len(),
            s.sent.len(),
            line(stored.get(at)),
            line(s.sent.get(at))
        )),
    )
}

/// The counters of a `/metrics` text: (name, label value, count).
fn counters(text: &str) -> Vec<(String, String, u64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (key, n) = l.rsplit_once(' ')?;
            let n = n.parse::<u64>().ok()?;
            let (name, label) = match key.split_once('{') {
                Some((name, rest)) => (name, rest.split('"').nth(1).unwrap_or_default().to_owned()),
                None => (key, String::new()),
            };
            Some((name.to_owned(), label, n))
        })
        .collect()
}
