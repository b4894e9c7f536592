//! Input-token counting of the three request shapes with the real tokenizer, plus a canonical
//! rendering of the prompt used to compute the cached prefix between consecutive requests.

use compact_core::model::{Media, Part, PartKind};
use compact_core::tokens::{Encoding, Framing, TokenCounter};
use serde_json::Value;

/// What the simulator needs to know about a request.
#[derive(Debug, Clone, Default)]
pub struct Counted {
    /// Input tokens (content + framing + tool declarations).
    pub input_tokens: u64,
    /// Canonical rendering of the prompt (for the common-prefix cache computation).
    pub rendering: String,
    /// Text of the last user message (echoed by the default reply).
    pub last_user: String,
    /// Requested output cap.
    pub max_output: Option<u64>,
    /// Stream requested.
    pub stream: bool,
    /// `stream_options.include_usage` (Chat).
    pub include_usage: bool,
    /// The model named.
    pub model: String,
    /// Any block carries `cache_control` (Anthropic).
    pub has_cache_control: bool,
}

/// Accumulates messages.
struct Acc {
    counter: TokenCounter,
    tokens: u64,
    rendering: String,
    last_user: String,
}

impl Acc {
    fn new(encoding: Encoding, framing: Framing) -> Self {
        let counter = TokenCounter::with_framing(encoding, framing);
        Acc {
            counter,
            tokens: u64::from(framing.per_request),
            rendering: String::new(),
            last_user: String::new(),
        }
    }

    /// Adds one message made of text pieces and media tokens.
    fn message(&mut self, role: &str, texts: &[String], media_tokens: u64) {
        let joined = texts.join("\n");
        self.tokens += self.counter.count_text(&joined) as u64
            + media_tokens
            + u64::from(self.counter.framing().per_message);
        self.rendering.push_str(role);
        self.rendering.push('\u{1e}');
        self.rendering.push_str(&joined);
        self.rendering.push('\u{1f}');
        if role == "user" && !joined.is_empty() {
            self.last_user = joined;
        }
    }

    /// Adds every declaration of the request's `tools` array.
    fn tools(&mut self, body: &Value) {
        for tool in array_of(body, "tools") {
            self.tool(&tool.to_string());
        }
    }

    fn tool(&mut self, decl: &str) {
        self.tokens +=
            self.counter.count_text(decl) as u64 + u64::from(self.counter.framing().per_tool);
        self.rendering.push_str(decl);
        self.rendering.push('\u{1f}');
    }

    fn media(&self, detail: Option<&str>) -> u64 {
        let media = Media {
            detail: detail.map(str::to_owned),
            ..Media::default()
        };
        self.counter.count_part(&Part {
            kind: PartKind::Image(media),
            extra: Default::default(),
        }) as u64
    }
}

fn str_of(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

/// The elements of the array member `key` of `v` (none when absent or not an array).
fn array_of<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn common(body: &Value, acc: Acc) -> Counted {
    Counted {
        input_tokens: acc.tokens,
        rendering: acc.rendering,
        last_user: acc.last_user,
        max_output: ["max_tokens", "max_completion_tokens", "max_output_tokens"]
            .iter()
            .find_map(|k| body.get(*k).and_then(Value::as_u64)),
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage: body
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        model: str_of(body.get("model")).unwrap_or("sim-model").to_owned(),
        has_cache_control: false,
    }
}

/// Collects text and media of an OpenAI content value (string or parts).
fn openai_content(acc: &Acc, content: Option<&Value>, texts: &mut Vec<String>) -> u64 {
    let mut media = 0;
    match content {
        Some(Value::String(s)) => texts.push(s.clone()),
        Some(Value::Array(parts)) => {
            for p in parts {
                match str_of(p.get("type")).unwrap_or("") {
                    "text" | "input_text" | "output_text" | "refusal" => {
                        if let Some(t) = str_of(p.get("text")).or_else(|| str_of(p.get("refusal")))
                        {
                            texts.push(t.to_owned());
                        }
                    }
                    "image_url" => {
                        media += acc.media(p.get("image_url").and_then(|u| str_of(u.get("detail"))))
                    }
                    "input_image" => media += acc.media(str_of(p.get("detail"))),
                    _ => texts.push(p.to_string()),
                }
            }
        }
        Some(Value::Null) | None => {}
        Some(other) => texts.push(other.to_string()),
    }
    media
}

/// Counts an OpenAI Chat Completions request.
pub fn count_chat(body: &Value, encoding: Encoding) -> Counted {
    let mut acc = Acc::new(encoding, Framing::OPENAI);
    acc.tools(body);
    for msg in array_of(body, "messages") {
        let role = str_of(msg.get("role")).unwrap_or("user");
        let mut texts = Vec::new();
        let media = openai_content(&acc, msg.get("content"), &mut texts);
        for call in array_of(msg, "tool_calls") {
            let f = call.get("function");
            texts.push(
                str_of(f.and_then(|f| f.get("name")))
                    .unwrap_or("")
                    .to_owned(),
            );
            texts.push(
                str_of(f.and_then(|f| f.get("arguments")))
                    .unwrap_or("")
                    .to_owned(),
            );
        }
        if let Some(name) = str_of(msg.get("name")) {
            texts.push(name.to_owned());
        }
        acc.message(role, &texts, media);
    }
    common(body, acc)
}

/// Counts an OpenAI Responses request.
pub fn count_responses(body: &Value, encoding: Encoding) -> Counted {
    let mut acc = Acc::new(encoding, Framing::OPENAI);
    acc.tools(body);
    if let Some(instr) = str_of(body.get("instructions")) {
        acc.message("developer", &[instr.to_owned()], 0);
    }
    match body.get("input") {
        Some(Value::String(s)) => acc.message("user", std::slice::from_ref(s), 0),
        Some(Value::Array(items)) => {
            for item in items {
                let ty = str_of(item.get("type")).unwrap_or("message");
                let mut texts = Vec::new();
                let (role, media) = match ty {
                    "message" => {
                        let m = openai_content(&acc, item.get("content"), &mut texts);
                        (str_of(item.get("role")).unwrap_or("user"), m)
                    }
                    "function_call" | "custom_tool_call" => {
                        texts.push(str_of(item.get("name")).unwrap_or("").to_owned());
                        let args = item.get("arguments").or_else(|| item.get("input"));
                        texts.push(str_of(args).map_or_else(
                            || args.map(Value::to_string).unwrap_or_default(),
                            str::to_owned,
                        ));
                        ("assistant", 0)
                    }
                    "function_call_output" | "custom_tool_call_output" => {
                        let m = openai_content(&acc, item.get("output"), &mut texts);
                        ("tool", m)
                    }
                    "reasoning" => {
                        for s in array_of(item, "summary") {
                            texts.push(str_of(s.get("text")).unwrap_or("").to_owned());
                        }
                        let enc = str_of(item.get("encrypted_content")).map_or(0, str::len);
                        /// Encrypted reasoning costs about one token per 4 bytes of payload.
                        const ENCRYPTED_BYTES_PER_TOKEN: u64 = 4;
                        ("assistant", enc as u64 / ENCRYPTED_BYTES_PER_TOKEN)
                    }
                    _ => {
                        texts.push(item.to_string());
                        ("assistant", 0)
                    }
                };
                acc.message(role, &texts, media);
            }
        }
        _ => {}
    }
    common(body, acc)
}

/// Collects text and media of an Anthropic content value; reports `cache_control` presence.
fn anthropic_content(
    acc: &Acc,
    content: Option<&Value>,
    texts: &mut Vec<String>,
    cache: &mut bool,
) -> u64 {
    let mut media = 0;
    match content {
        Some(Value::String(s)) => texts.push(s.clone()),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if b.get("cache_control").is_some() {
                    *cache = true;
                }
                match str_of(b.get("type")).unwrap_or("") {
                    "text" => texts.push(str_of(b.get("text")).unwrap_or("").to_owned()),
                    "thinking" => texts.push(str_of(b.get("thinking")).unwrap_or("").to_owned()),
                    "compaction" => texts.push(str_of(b.get("content")).unwrap_or("").to_owned()),
                    "tool_use" | "server_tool_use" => {
                        texts.push(str_of(b.get("name")).unwrap_or("").to_owned());
                        texts.push(b.get("input").map(Value::to_string).unwrap_or_default());
                    }
                    "tool_result" => {
                        media += anthropic_content(acc, b.get("content"), texts, cache)
                    }
                    "image" => media += acc.media(None),
                    _ => texts.push(unmarked(b).to_string()),
                }
            }
        }
        _ => {}
    }
    media
}

/// A block or tool declaration without its `cache_control` member: the marker says where the
/// provider writes its cache, it is not prompt text (it is neither counted nor part of the cached
/// content, so moving it does not change the prefix a later request can read).
fn unmarked(v: &Value) -> std::borrow::Cow<'_, Value> {
    match v {
        Value::Object(m) if m.contains_key("cache_control") => {
            let mut m = m.clone();
            m.remove("cache_control");
            std::borrow::Cow::Owned(Value::Object(m))
        }
        _ => std::borrow::Cow::Borrowed(v),
    }
}

/// Counts an Anthropic Messages (or count_tokens) request.
pub fn count_messages(body: &Value, encoding: Encoding) -> Counted {
    let mut acc = Acc::new(encoding, Framing::ANTHROPIC);
    let mut cache = false;
    for tool in array_of(body, "tools") {
        if tool.get("cache_control").is_some() {
            cache = true;
        }
        acc.tool(&unmarked(tool).to_string());
    }
    if body.get("system").is_some() {
        let mut texts = Vec::new();
        let media = anthropic_content(&acc, body.get("system"), &mut texts, &mut cache);
        acc.message("system", &texts, media);
    }
    for msg in array_of(body, "messages") {
        let role = str_of(msg.get("role")).unwrap_or("user");
        let mut texts = Vec::new();
        let media = anthropic_content(&acc, msg.get("content"), &mut texts, &mut cache);
        acc.message(role, &texts, media);
    }
    let mut out = common(body, acc);
    out.has_cache_control = cache;
    out
}

/// Bytes of the longest common prefix of two renderings (on a char boundary of `current`).
pub fn common_prefix_bytes(previous: &str, current: &str) -> usize {
    let mut end = 0;
    for ((i, a), b) in current.char_indices().zip(previous.chars()) {
        if a != b {
            break;
        }
        end = i + a.len_utf8();
    }
    end
}

/// Tokens of the longest common prefix of two renderings.
pub fn common_prefix_tokens(previous: &str, current: &str, encoding: Encoding) -> u64 {
    encoding.count(&current[..common_prefix_bytes(previous, current)]) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_count_matches_core_framing() {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hello world"}]});
        let c = count_chat(&body, Encoding::O200kBase);
        // 2 content tokens + 3 per message + 3 per request.
        assert_eq!(c.input_tokens, 8);
        assert_eq!(c.last_user, "hello world");
    }

    #[test]
    fn prefix_tokens() {
        assert_eq!(
            common_prefix_tokens("hello world", "hello there", Encoding::O200kBase),
            Encoding::O200kBase.count("hello ") as u64
        );
        assert_eq!(common_prefix_tokens("", "abc", Encoding::O200kBase), 0);
    }

    #[test]
    fn a_moved_cache_control_marker_changes_neither_the_rendering_nor_the_count() {
        let marked = |tool: usize, message: usize| {
            let mut body = json!({"model": "c", "max_tokens": 9,
                "system": [{"type": "text", "text": "rules"}],
                "tools": [{"name": "Read", "input_schema": {"type": "object"}},
                          {"name": "Bash", "input_schema": {"type": "object"}}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "go"},
                        {"type": "document", "source": {"type": "url", "url": "https://x"}}]},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash",
                        "input": {"command": "ls"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                        "content": "a.rs"}]}]});
            body["tools"][tool]["cache_control"] = json!({"type": "ephemeral"});
            let last = body["messages"][message]["content"]
                .as_array()
                .map_or(0, |b| b.len() - 1);
            body["messages"][message]["content"][last]["cache_control"] =
                json!({"type": "ephemeral"});
            count_messages(&body, Encoding::O200kBase)
        };
        let a = marked(0, 0);
        for (tool, message) in [(1, 0), (0, 1), (1, 2)] {
            let b = marked(tool, message);
            assert_eq!(a.rendering, b.rendering, "tool {tool}, message {message}");
            assert_eq!(
                a.input_tokens, b.input_tokens,
                "tool {tool}, message {message}"
            );
            assert_eq!(
                common_prefix_tokens(&a.rendering, &b.rendering, Encoding::O200kBase),
                Encoding::O200kBase.count(&b.rendering) as u64
            );
        }
        assert!(!a.rendering.contains("cache_control"));
    }
}
