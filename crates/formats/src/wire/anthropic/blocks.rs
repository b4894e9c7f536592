//! Anthropic content blocks <-> parts and item bodies (decode side).

use crate::error::DecodeError;
use crate::wire::json::{child, nest, unexpected, Fields};
use crate::wire::part::opaque_part;
use compact_core::model::{
    Arguments, CompactionWire, Extra, ItemBody, Media, MediaSource, Part, PartKind,
    ProviderCompaction, Reasoning, ToolCall, ToolCallKind, ToolResult,
};
use serde_json::Value;

/// A decoded content block: a part of the surrounding message, or an item of its own.
pub(crate) enum Block {
    /// Text, image, document or an unknown block.
    Part(Part),
    /// Tool use, tool result, thinking, server tool and compaction blocks.
    Body(ItemBody),
}

/// The block type of a server tool call other than `server_tool_use` (its `type` is kept in extra).
const MCP_TOOL_USE: &str = "mcp_tool_use";
/// The server tool result whose content has `tool_result` shape.
pub(crate) const MCP_TOOL_RESULT: &str = "mcp_tool_result";

/// Decodes one content block at `path`.
pub(crate) fn decode_block(block: &Value, path: &str) -> Result<Block, DecodeError> {
    let mut f = Fields::of(block, path)?;
    let ty = f.tag("type")?;
    Ok(match ty.as_str() {
        "text" => {
            f.take("type");
            let text = f.req_str("text")?;
            Block::Part(Part {
                kind: PartKind::Text(text),
                extra: f.rest(),
            })
        }
        "image" | "document" => match media(&mut f)? {
            Some(media) => {
                f.take("type");
                let kind = if ty == "image" {
                    PartKind::Image(media)
                } else {
                    PartKind::File(media)
                };
                Block::Part(Part {
                    kind,
                    extra: f.rest(),
                })
            }
            None => opaque(block),
        },
        "tool_use" | "server_tool_use" | MCP_TOOL_USE => {
            let kind = if ty == "tool_use" {
                ToolCallKind::Function
            } else {
                ToolCallKind::Server
            };
            if ty != MCP_TOOL_USE {
                f.take("type");
            }
            let call_id = f.req_id("id")?;
            let name = f.req_str("name")?;
            let input = f.req("input")?;
            Block::Body(ItemBody::ToolCall(ToolCall {
                call_id,
                name,
                arguments: Arguments::Json(input),
                kind,
                extra: f.rest(),
            }))
        }
        "tool_result" | MCP_TOOL_RESULT => {
            let kind = if ty == "tool_result" {
                ToolCallKind::Function
            } else {
                ToolCallKind::Server
            };
            if ty == "tool_result" {
                f.take("type");
            }
            let call_id = f.req_id("tool_use_id")?;
            let (parts, content_was_string) = result_content(&mut f)?;
            let is_error = error_flag(&mut f)?;
            Block::Body(ItemBody::ToolResult(ToolResult {
                call_id,
                tool_name: None,
                parts,
                is_error,
                kind,
                content_was_string,
                extra: f.rest(),
            }))
        }
        t if t.ends_with("_tool_result") => {
            // Server tool results (web search, code execution...): the type stays in extra and the
            // content, whose shape is tool specific, is carried as one opaque part.
            let call_id = f.req_id("tool_use_id")?;
            let parts = match f.take("content") {
                Some(v) => vec![Part {
                    kind: PartKind::Opaque(v),
                    extra: Extra::new(),
                }],
                None => Vec::new(),
            };
            // No content at all is recorded like an absent `tool_result` content (see `content_value`).
            let content_was_string = parts.is_empty();
            Block::Body(ItemBody::ToolResult(ToolResult {
                call_id,
                tool_name: None,
                parts,
                is_error: false,
                kind: ToolCallKind::Server,
                content_was_string,
                extra: f.rest(),
            }))
        }
        "thinking" => {
            f.take("type");
            let text = f.req_str("thinking")?;
            let signature = f.opt_str("signature")?;
            Block::Body(ItemBody::Reasoning(Reasoning {
                text: Some(text),
                signature,
                extra: f.rest(),
                ..Reasoning::default()
            }))
        }
        "compaction" => Block::Body(ItemBody::ProviderCompaction(compaction(block, &f)?)),
        "redacted_thinking" => {
            f.take("type");
            let data = f.req_str("data")?;
            Block::Body(ItemBody::Reasoning(Reasoning {
                encrypted: Some(data),
                redacted: true,
                extra: f.rest(),
                ..Reasoning::default()
            }))
        }
        _ => opaque(block),
    })
}

/// A `compaction` block (threshold or on-demand mode), kept as the exact object: `content` is the
/// summary (a string, or `null` when the model called a tool instead), `signature` and
/// `encrypted_content` strings; any other field is carried verbatim.
fn compaction(block: &Value, f: &Fields) -> Result<ProviderCompaction, DecodeError> {
    for (key, nullable) in [
        ("content", true),
        ("signature", false),
        ("encrypted_content", true),
    ] {
        match f.peek(key) {
            None | Some(Value::String(_)) => {}
            Some(Value::Null) if nullable => {}
            Some(other) => {
                let what = if nullable {
                    "a string or null"
                } else {
                    "a string"
                };
                return Err(unexpected(f.at(key), what, other));
            }
        }
    }
    Ok(ProviderCompaction::new(
        CompactionWire::AnthropicBlock,
        block.clone(),
    ))
}

fn opaque(block: &Value) -> Block {
    Block::Part(opaque_part(block))
}

/// `is_error`: `true` is modelled; `false` and `null` stay in extra so they are re-emitted as given.
pub(crate) fn error_flag(f: &mut Fields) -> Result<bool, DecodeError> {
    match f.peek("is_error") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(false),
        Some(Value::Bool(true)) => {
            f.take("is_error");
            Ok(true)
        }
        Some(other) => Err(unexpected(f.at("is_error"), "a boolean", other)),
    }
}

/// The content of a `tool_result`: a string (one text part), blocks, or nothing.
fn result_content(f: &mut Fields) -> Result<(Vec<Part>, bool), DecodeError> {
    let path = f.at("content");
    match f.take_non_null("content") {
        None => Ok((Vec::new(), true)),
        Some(Value::String(s)) => Ok((vec![Part::text(s)], true)),
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.iter().enumerate() {
                let bpath = format!("{path}/{i}");
                match decode_block(b, &bpath)? {
                    Block::Part(p) => parts.push(p),
                    Block::Body(_) => parts.push(Part {
                        kind: PartKind::Opaque(b.clone()),
                        extra: Extra::new(),
                    }),
                }
            }
            Ok((parts, false))
        }
        Some(other) => Err(unexpected(path, "a string or an array", &other)),
    }
}

/// The media of an `image` / `document` block from its `source`; `None` for a source type that is not
/// modelled (the block is then carried as an opaque part).
fn media(f: &mut Fields) -> Result<Option<Media>, DecodeError> {
    let Some(source) = f.peek("source").cloned() else {
        return Err(DecodeError::new(
            f.at("source"),
            "missing required field `source`",
        ));
    };
    let path = child(f.path(), "source");
    let mut s = Fields::of(&source, &path)?;
    let ty = s.tag("type")?;
    let (src, mime) = match ty.as_str() {
        "base64" => {
            let mime = s.opt_str("media_type")?;
            (MediaSource::Base64(s.req_str("data")?), mime)
        }
        "text" => {
            let mime = s.opt_str("media_type")?;
            (MediaSource::Text(s.req_str("data")?), mime)
        }
        "url" => (MediaSource::Url(s.req_str("url")?), None),
        "file" => (MediaSource::FileId(s.req_str("file_id")?), None),
        _ => return Ok(None),
    };
    s.take("type");
    let name = if f.peek_str("type") == Some("document") {
        f.opt_str("title")?
    } else {
        None
    };
    f.take("source");
    let rest = s.rest();
    let mut extra = Extra::new();
    nest(&mut extra, "source", rest);
    for (k, v) in extra {
        f.put(&k, v);
    }
    Ok(Some(Media {
        source: src,
        mime,
        name,
        ..Media::default()
    }))
}
