//! A host's message list (OpenAI Chat messages, Responses input items or Anthropic messages) with
//! its system prompt and tools, as the wire request `compact_formats::wire` decodes, and the
//! encoded request back as a message list of the same shape.
//!
//! The format is the caller's, or detected from the messages
//! (`compact_formats::import::detect_messages`: plain `{role, content}` messages are Chat).

use crate::convert::{py_to_value, value_to_py};
use crate::errors::{raise, Failure};
use compact_core::model::{Conversation, Format};
use compact_formats::wire::{decode, encode, list_key, IncrementalDecode};
use compact_formats::DecodeError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::{json, Map, Value};

/// Parses a format name (`openai-chat`, `openai-responses`, `anthropic`; `chat` and `responses`
/// too).
pub fn parse_format(name: &str) -> Result<Format, Failure> {
    match name {
        "openai-chat" | "chat" | "openai" => Ok(Format::OpenAiChat),
        "openai-responses" | "responses" => Ok(Format::OpenAiResponses),
        "anthropic" => Ok(Format::Anthropic),
        other => Err(Failure::input(
            "bad_format",
            format!("format: unknown format {other:?} (expected \"openai-chat\", \"openai-responses\" or \"anthropic\")"),
        )),
    }
}

/// The format of `messages`: `format` when given, else detected (Chat when nothing decides).
pub fn resolve_format(format: Option<&str>, messages: &[Value]) -> Result<Format, Failure> {
    match format {
        Some(name) => parse_format(name),
        None => {
            Ok(compact_formats::import::detect_messages(messages).unwrap_or(Format::OpenAiChat))
        }
    }
}

/// A message list as a wire request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request JSON.
    pub value: Value,
    /// Its format.
    pub format: Format,
    /// Messages put before the caller's (a Chat system message made from `system`).
    pub leading: usize,
}

/// The parts of a request besides its messages.
#[derive(Debug, Clone, Default)]
pub struct Parts {
    /// The system prompt: Chat's leading system message, Responses' `instructions`, Anthropic's
    /// `system` (a string, or Anthropic's blocks).
    pub system: Option<Value>,
    /// Tool declarations in the format's shape.
    pub tools: Option<Value>,
    /// The model name (the calibration key).
    pub model: Option<String>,
}

impl Parts {
    /// The parts from the Python arguments (`system`: a string or Anthropic blocks; `tools`: a list
    /// of tool declarations in the format's shape).
    pub fn from_py(
        system: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        model: Option<&str>,
    ) -> Result<Parts, Failure> {
        let system = match system.filter(|s| !s.is_none()) {
            Some(s) => Some(py_to_value(s, &mut String::from("system"))?),
            None => None,
        };
        let tools = match tools.filter(|t| !t.is_none()) {
            Some(t) => match py_to_value(t, &mut String::from("tools"))? {
                Value::Array(list) if list.is_empty() => None,
                Value::Array(list) => Some(Value::Array(list)),
                _ => {
                    return Err(Failure::input(
                        "bad_value",
                        "tools: expected a list of tool declarations",
                    ))
                }
            },
            None => None,
        };
        Ok(Parts {
            system,
            tools,
            model: model.map(str::to_owned),
        })
    }
}

impl Request {
    /// Builds the request for `messages` of `format`.
    pub fn build(format: Format, messages: Vec<Value>, parts: &Parts) -> Request {
        let mut map = Map::new();
        if let Some(model) = &parts.model {
            map.insert("model".into(), json!(model));
        }
        let mut leading = 0;
        let key = list_key(format);
        let mut messages = messages;
        match (&parts.system, format) {
            (Some(system), Format::OpenAiChat) => {
                messages.insert(0, json!({"role": "system", "content": system}));
                leading = 1;
            }
            (Some(system), Format::OpenAiResponses) => {
                map.insert("instructions".into(), system.clone());
            }
            (Some(system), _) => {
                map.insert("system".into(), system.clone());
            }
            (None, _) => {}
        }
        map.insert(key.into(), Value::Array(messages));
        if let Some(tools) = &parts.tools {
            map.insert("tools".into(), tools.clone());
        }
        Request {
            value: Value::Object(map),
            format,
            leading,
        }
    }

    /// Decodes the request, naming the caller's message in errors (`messages[3].content[1]`).
    pub fn decode(&self) -> Result<Conversation, Failure> {
        decode(self.format, &self.value).map_err(|e| self.decode_failure(&e))
    }

    /// Decodes the request with `decoder`, which holds the items of the last request it decoded
    /// and reuses those of the first `keep` messages (see [`IncrementalDecode::decode`]).
    pub fn decode_with<'d>(
        &self,
        decoder: &'d mut IncrementalDecode,
        keep: usize,
    ) -> Result<&'d Conversation, Failure> {
        decoder
            .decode(self.format, &self.value, keep)
            .map_err(|e| self.decode_failure(&e))
    }

    fn decode_failure(&self, e: &DecodeError) -> Failure {
        let place = pointer_to_path(&e.path, list_key(self.format), self.leading);
        Failure::input(
            "undecodable",
            format!("{place}: {} (as {})", e.message, self.format),
        )
        .with(json!({"path": place, "format": self.format.name()}))
    }

    /// The caller's messages back out of the request (without the leading ones it added).
    pub fn into_messages(self) -> Vec<Value> {
        let Value::Object(mut map) = self.value else {
            return Vec::new();
        };
        match map.remove(list_key(self.format)) {
            Some(Value::Array(mut messages)) => {
                messages.drain(..self.leading.min(messages.len()));
                messages
            }
            _ => Vec::new(),
        }
    }

    /// Encodes `conversation` in this request's format and returns its messages, without the
    /// leading messages this request added.
    pub fn messages_of(&self, conversation: &Conversation) -> Result<Vec<Value>, Failure> {
        let encoded = encode(conversation, self.format)
            .map_err(|e| Failure::new("CompactionError", "encode", e.to_string()))?;
        let Value::Object(mut map) = encoded.value else {
            return Ok(Vec::new());
        };
        let Some(Value::Array(mut messages)) = map.remove(list_key(self.format)) else {
            return Ok(Vec::new());
        };
        if self.leading > 0 {
            if let (Some(first), Some(Value::Array(sent))) =
                (messages.first(), self.value.get(list_key(self.format)))
            {
                if sent.first() == Some(first) {
                    messages.drain(..self.leading.min(messages.len()));
                }
            }
        }
        Ok(messages)
    }
}

/// A decoder's JSON pointer (`/messages/4/content/0`) as the caller's path (`messages[3].content[0]`
/// when one leading message was added).
fn pointer_to_path(pointer: &str, key: &str, leading: usize) -> String {
    let mut segments = pointer.split('/').skip(1).peekable();
    let mut out = String::new();
    match segments.peek() {
        Some(first) if *first == key => {
            segments.next();
            out.push_str("messages");
            if let Some(index) = segments.next() {
                match index.parse::<usize>() {
                    Ok(i) if i >= leading => out.push_str(&format!("[{}]", i - leading)),
                    Ok(_) => {
                        out.clear();
                        out.push_str("system");
                    }
                    Err(_) => out.push_str(&format!(".{index}")),
                }
            }
        }
        Some(_) => {}
        None => return "request".to_owned(),
    }
    for s in segments {
        let s = s.replace("~1", "/").replace("~0", "~");
        if s.parse::<usize>().is_ok() {
            out.push_str(&format!("[{s}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&s);
        }
    }
    if out.is_empty() {
        "request".to_owned()
    } else {
        out
    }
}

/// Converts a Python sequence of messages into JSON values (`messages[i]...` in errors).
pub fn messages_from_py(messages: &Bound<'_, PyAny>) -> Result<Vec<Value>, Failure> {
    let mut path = String::from("messages");
    match py_to_value(messages, &mut path)? {
        Value::Array(items) => Ok(items),
        _ => Err(Failure::input(
            "bad_value",
            "messages: expected a list of message dicts",
        )),
    }
}

/// The wire format of a message list: `"openai-chat"`, `"openai-responses"` or `"anthropic"`
/// (Chat when nothing decides).
#[pyfunction]
pub fn detect_format(py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<String> {
    let values = raise(py, messages_from_py(messages))?;
    let format = raise(py, resolve_format(None, &values))?;
    Ok(format.name().to_owned())
}

/// Decodes `messages` into Compact's model and encodes them back in the same format (the
/// lossless round trip every preflight relies on).
#[pyfunction]
#[pyo3(signature = (messages, format=None))]
pub fn round_trip<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    format: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let values = raise(py, messages_from_py(messages))?;
    let format = raise(py, resolve_format(format, &values))?;
    let request = Request::build(format, values, &Parts::default());
    let out = py.detach(|| {
        let conversation = request.decode()?;
        request.messages_of(&conversation)
    });
    let out = raise(py, out)?;
    let list = PyList::empty(py);
    for v in &out {
        list.append(value_to_py(py, v)?)?;
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::pointer_to_path;

    #[test]
    fn pointers_become_the_callers_paths() {
        assert_eq!(
            pointer_to_path("/messages/4/content/0", "messages", 1),
            "messages[3].content[0]"
        );
        assert_eq!(
            pointer_to_path("/input/2/call_id", "input", 0),
            "messages[2].call_id"
        );
        assert_eq!(pointer_to_path("/messages/0", "messages", 1), "system");
        assert_eq!(pointer_to_path("", "messages", 0), "request");
        assert_eq!(
            pointer_to_path("/tools/1/name", "messages", 0),
            "tools[1].name"
        );
    }
}
