//! The agent each session of the scale-out test runs: a conversation that grows as a coding
//! agent's does, every turn resending the whole history plus what is new. Anthropic Messages
//! sessions offer a `Bash` tool: the simulator's scripted agent answers each turn with the next
//! command of its task, and the agent sends back the command's output (a few hundred tokens) as
//! the tool result; OpenAI Chat sessions get text replies and paste the output of a command in
//! the next user message. Every third turn the user adds a remark. Replies are read whole or from
//! the stream (text deltas, tool-input deltas), as an SDK assembles them.

use serde_json::{json, Value};

/// Text in the first prompt that starts the simulator's scripted task.
pub const TRIGGER: &str = "SCALEOUT-TASK";
/// What the scripted agent says once its steps ran out (the task has more steps than turns).
pub const DONE: &str = "Every step of the task ran.";
/// `max_tokens` of every request: the window must hold it beside the input.
pub const MAX_TOKENS: u64 = 300;
/// A model no registry knows: its window is `compactctl serve --window`.
const MODEL: &str = "sim-scaleout";
/// Lines of a command's output: about 900 tokens, so that a handful of turns fills the window.
const OUTPUT_LINES: usize = 36;

/// The wire format a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Chat,
    Messages,
}

impl Wire {
    pub fn path(self) -> &'static str {
        match self {
            Wire::Chat => "/v1/chat/completions",
            Wire::Messages => "/v1/messages",
        }
    }

    /// The `--format` of `compactctl sessions export`.
    pub fn export_format(self) -> &'static str {
        match self {
            Wire::Chat => "openai-chat",
            Wire::Messages => "anthropic",
        }
    }
}

/// The commands of the scripted task (more than any session has turns).
pub fn steps(n: usize) -> Vec<String> {
    (0..n)
        .map(|k| match k % 4 {
            0 => format!("cat src/module_{k}.rs"),
            1 => format!("grep -rn handler_{k} src"),
            2 => format!("cargo test -p crate_{k}"),
            _ => format!("sed -n 1,80p tests/case_{k}.rs"),
        })
        .collect()
}

/// What one reply said: the assistant message to append, and the tool calls (id, command) it made.
pub struct Reply {
    pub assistant: Value,
    pub calls: Vec<(String, String)>,
}

/// One session's conversation.
pub struct Agent {
    pub wire: Wire,
    pub session: String,
    index: usize,
    system: String,
    pub messages: Vec<Value>,
}

impl Agent {
    /// The conversation's opening: the system prompt and the first user prompt.
    pub fn new(wire: Wire, session: &str, index: usize) -> Agent {
        let system = format!(
            "You are a coding agent working in the repository scaleout-{index}. Run one command at a \
             time, read its output, and keep going until the task is done. Be brief."
        );
        let first = format!(
            "{TRIGGER} Session {index}: the tests of crate_{index} fail after the last refactor. Find \
             out why, fix the code, and run the tests again until they pass."
        );
        let mut agent = Agent {
            wire,
            session: session.to_owned(),
            index,
            system,
            messages: Vec::new(),
        };
        match wire {
            Wire::Chat => {
                let system = agent.system.clone();
                agent
                    .messages
                    .push(json!({"role": "system", "content": system}));
                agent
                    .messages
                    .push(json!({"role": "user", "content": first}));
            }
            Wire::Messages => agent
                .messages
                .push(json!({"role": "user", "content": first})),
        }
        agent
    }

    /// The request of the next turn: the whole history.
    pub fn request(&self, stream: bool) -> Value {
        match self.wire {
            Wire::Chat => {
                let mut body = json!({"model": MODEL, "max_tokens": MAX_TOKENS,
                    "messages": self.messages, "stream": stream});
                if stream {
                    body["stream_options"] = json!({"include_usage": true});
                }
                body
            }
            Wire::Messages => json!({"model": MODEL, "max_tokens": MAX_TOKENS,
                "system": self.system, "messages": self.messages, "stream": stream,
                "tools": [{"name": "Bash", "description": "Runs a shell command in the repository.",
                    "input_schema": {"type": "object", "properties": {
                        "command": {"type": "string"}, "description": {"type": "string"}},
                        "required": ["command"]}}]}),
        }
    }

    /// The headers of a request (the session named explicitly).
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("x-compact-session", self.session.clone())];
        match self.wire {
            Wire::Chat => headers.push(("authorization", "Bearer sk-scaleout".to_owned())),
            Wire::Messages => {
                headers.push(("x-api-key", "sk-ant-scaleout".to_owned()));
                headers.push(("anthropic-version", "2023-06-01".to_owned()));
            }
        }
        headers
    }

    /// The reply in a response body (streamed or not).
    pub fn read(&self, body: &[u8], stream: bool) -> Result<Reply, String> {
        let text = String::from_utf8_lossy(body);
        match (self.wire, stream) {
            (Wire::Chat, false) => chat_reply(&text),
            (Wire::Chat, true) => chat_stream(&text),
            (Wire::Messages, false) => messages_reply(&text),
            (Wire::Messages, true) => messages_stream(&text),
        }
    }

    /// Appends the reply and what the agent sends next: the outputs of the commands the model
    /// called (or, in Chat, of a command the agent ran), and every third turn a remark.
    pub fn answer(&mut self, turn: usize, reply: Reply) {
        self.messages.push(reply.assistant);
        let seed = (self.index as u64) << 32 | turn as u64;
        let remark = (turn % 3 == 2).then(|| {
            format!(
                "Note for turn {turn}: keep the public API of crate_{} as it is, and do not touch \
                 the generated files under src/gen.",
                self.index
            )
        });
        match self.wire {
            Wire::Messages => {
                let mut content: Vec<Value> = reply
                    .calls
                    .iter()
                    .map(|(id, command)| {
                        json!({"type": "tool_result", "tool_use_id": id,
                               "content": output(seed, command)})
                    })
                    .collect();
                if content.is_empty() {
                    // The model stopped calling tools: start the task again.
                    content.push(json!({"type": "text", "text": format!("{TRIGGER}: go on.")}));
                }
                if let Some(remark) = remark {
                    content.push(json!({"type": "text", "text": remark}));
                }
                self.messages
                    .push(json!({"role": "user", "content": content}));
            }
            Wire::Chat => {
                let command = &steps(turn + 1)[turn];
                let mut text = format!("I ran `{command}`:\n{}", output(seed, command));
                if let Some(remark) = remark {
                    text = format!("{text}\n{remark}");
                }
                self.messages.push(json!({"role": "user", "content": text}));
            }
        }
    }
}

/// A command's output: deterministic, distinct from every other turn's.
fn output(seed: u64, command: &str) -> String {
    const VERBS: [&str; 8] = [
        "compute", "resolve", "render", "parse", "validate", "merge", "encode", "flush",
    ];
    const NOUNS: [&str; 8] = [
        "request", "buffer", "session", "record", "window", "budget", "item", "cursor",
    ];
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut out = format!("$ {command}\n");
    for line in 0..OUTPUT_LINES {
        let (a, b, c) = (next(), next(), next());
        out.push_str(&format!(
            "src/{}_{}.rs:{}: let {}_{} = {}_{}(&{}, {});\n",
            NOUNS[(a % 8) as usize],
            a % 97,
            line * 7 + (b % 7) as usize,
            NOUNS[(b % 8) as usize],
            c % 53,
            VERBS[(c % 8) as usize],
            NOUNS[(a >> 8) as usize % 8],
            NOUNS[(c >> 8) as usize % 8],
            b % 1000
        ));
    }
    out
}

fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("the reply is not JSON ({e}): {text}"))
}

fn chat_reply(text: &str) -> Result<Reply, String> {
    let v = parse(text)?;
    let content = v["choices"][0]["message"]["content"]
        .as_str()
        .ok_or_else(|| format!("no message content: {text}"))?;
    Ok(Reply {
        assistant: json!({"role": "assistant", "content": content}),
        calls: Vec::new(),
    })
}

/// The `data:` payloads of an SSE body, `[DONE]` left out.
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

fn chat_stream(text: &str) -> Result<Reply, String> {
    let mut content = String::new();
    for event in events(text) {
        if !event["error"].is_null() {
            return Err(format!("an error in the stream: {event}"));
        }
        if let Some(delta) = event["choices"][0]["delta"]["content"].as_str() {
            content.push_str(delta);
        }
    }
    if content.is_empty() {
        return Err(format!("a stream without content: {text}"));
    }
    Ok(Reply {
        assistant: json!({"role": "assistant", "content": content}),
        calls: Vec::new(),
    })
}

fn calls_of(content: &[Value]) -> Vec<(String, String)> {
    content
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| {
            (
                b["id"].as_str().unwrap_or_default().to_owned(),
                b["input"]["command"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

fn messages_reply(text: &str) -> Result<Reply, String> {
    let v = parse(text)?;
    let content = v["content"]
        .as_array()
        .ok_or_else(|| format!("no content: {text}"))?
        .clone();
    Ok(Reply {
        calls: calls_of(&content),
        assistant: json!({"role": "assistant", "content": content}),
    })
}

fn messages_stream(text: &str) -> Result<Reply, String> {
    let mut blocks: Vec<Value> = Vec::new();
    let mut inputs: Vec<String> = Vec::new();
    let mut stopped = false;
    for event in events(text) {
        match event["type"].as_str() {
            Some("content_block_start") => {
                blocks.push(event["content_block"].clone());
                inputs.push(String::new());
            }
            Some("content_block_delta") => {
                let (Some(block), Some(input)) = (blocks.last_mut(), inputs.last_mut()) else {
                    return Err(format!("a delta before any block: {text}"));
                };
                let delta = &event["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let so_far = block["text"].as_str().unwrap_or_default().to_owned();
                        block["text"] = json!(so_far + delta["text"].as_str().unwrap_or_default());
                    }
                    Some("input_json_delta") => {
                        input.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            Some("message_stop") => stopped = true,
            Some("error") => return Err(format!("an error in the stream: {event}")),
            _ => {}
        }
    }
    if !stopped {
        return Err(format!("a stream without message_stop: {text}"));
    }
    let mut content = Vec::new();
    for (mut block, input) in blocks.into_iter().zip(inputs) {
        if block["type"] == "tool_use" && !input.is_empty() {
            block["input"] = parse(&input)?;
        }
        if block["type"] == "text" && block["text"].as_str().is_some_and(str::is_empty) {
            continue;
        }
        content.push(block);
    }
    Ok(Reply {
        calls: calls_of(&content),
        assistant: json!({"role": "assistant", "content": content}),
    })
}
