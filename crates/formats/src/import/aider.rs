//! aider chat history (`.aider.chat.history.md`): `# aider chat started at` opens a session, `#### `
//! lines are the user's input, `> ` lines are aider's console output and everything else is the
//! assistant's reply.
//!
//! Consecutive lines of one kind form a block; each user or assistant block is one message (blank
//! blocks are dropped). Console output blocks are kept as opaque items labelled [`OUTPUT_LABEL`],
//! hidden from the model (aider shows them to the user and never sends them). Ids are `L<line>` of a
//! block's first line. Errors the file reports: console lines of failed model calls
//! (`litellm.<Name>Error: ...`).

use super::detect::AIDER_SESSION_HEADER;
use super::source::{lines, Ctx};
use super::{ImportError, ImportMode};
use compact_core::model::{Conversation, Format, Item, ItemBody, Opaque, Role, Visibility};
use serde_json::Value;

/// Label of the opaque items holding aider's console output.
pub const OUTPUT_LABEL: &str = "aider_output";

/// Prefix of a user input line.
const USER_PREFIX: &str = "#### ";
/// A user input line that is empty apart from the marker.
const USER_MARKER: &str = "####";
/// Prefix of a console output line.
const OUTPUT_PREFIX: &str = "> ";
/// A console output line that is empty apart from the marker.
const OUTPUT_MARKER: &str = ">";

/// What a line of the history is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Header,
    User,
    Output,
    Assistant,
}

/// Classifies a line and strips its marker.
fn classify(line: &str) -> (Kind, &str) {
    if line.starts_with(AIDER_SESSION_HEADER) {
        return (Kind::Header, line);
    }
    if let Some(rest) = line.strip_prefix(USER_PREFIX) {
        return (Kind::User, rest);
    }
    if line.trim_end() == USER_MARKER {
        return (Kind::User, "");
    }
    if let Some(rest) = line.strip_prefix(OUTPUT_PREFIX) {
        return (Kind::Output, rest);
    }
    if line.trim_end() == OUTPUT_MARKER {
        return (Kind::Output, "");
    }
    (Kind::Assistant, line)
}

/// A block of consecutive lines of one kind.
struct Block {
    kind: Kind,
    first_line: usize,
    text: Vec<String>,
}

/// Imports an aider chat history.
pub(crate) fn import(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Conversation, ImportError> {
    let text = decode_text(bytes, ctx)?;
    let mut blocks: Vec<Block> = Vec::new();
    for line in lines(text.as_bytes()) {
        let raw = String::from_utf8_lossy(line.bytes);
        let (kind, rest) = classify(&raw);
        if kind == Kind::Output && is_api_error(rest) {
            ctx.stats.errors += 1;
        }
        // aider ends most lines it writes with two spaces (a Markdown line break).
        let rest = rest.trim_end().to_owned();
        match blocks.last_mut() {
            Some(b) if b.kind == kind && kind != Kind::Header => b.text.push(rest),
            _ => blocks.push(Block {
                kind,
                first_line: line.number,
                text: vec![rest],
            }),
        }
    }
    let mut conv = Conversation::default();
    for block in blocks {
        let body = block.text.join("\n");
        let body = body.trim_matches('\n');
        let role = match block.kind {
            Kind::Header => {
                ctx.stats.records_read += 1;
                ctx.stats.sessions += 1;
                ctx.skip("session_header");
                continue;
            }
            _ if body.trim().is_empty() => continue,
            Kind::User => Role::User,
            Kind::Assistant => Role::Assistant,
            Kind::Output => Role::Tool,
        };
        ctx.stats.records_read += 1;
        let mut item = if role == Role::Tool {
            let mut item = Item::new(ItemBody::Opaque(Opaque {
                label: OUTPUT_LABEL.to_owned(),
                role: Some(Role::Tool),
                value: Value::String(body.to_owned()),
            }));
            item.meta.visibility = Visibility {
                model: false,
                user: true,
            };
            item
        } else {
            Item::text(role, body)
        };
        super::stamp(
            &mut item,
            format!("L{}", block.first_line),
            None,
            Format::Aider,
        );
        conv.items.push(item);
    }
    Ok(conv)
}

/// Prefix of the exceptions of the LLM client aider uses, as it prints them (`litellm.APIError: ...`).
const API_ERROR_PREFIX: &str = "litellm.";

/// True for a console line reporting a failed model call (`litellm.<Name>Error: ...`).
fn is_api_error(line: &str) -> bool {
    line.strip_prefix(API_ERROR_PREFIX)
        .and_then(|rest| rest.split(':').next())
        .is_some_and(|name| name.ends_with("Error") && !name.contains(' '))
}

/// The file as text: invalid UTF-8 is a problem at its byte offset (lenient: replaced, with a warning).
fn decode_text(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<String, ImportError> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => {
            let at = ctx.at_offset(bytes, e.valid_up_to());
            match ctx.mode {
                ImportMode::Strict => Err(ImportError::Malformed {
                    at,
                    what: "invalid UTF-8".to_owned(),
                }),
                ImportMode::Lenient => {
                    ctx.warn(at, "invalid UTF-8; replaced with U+FFFD");
                    Ok(String::from_utf8_lossy(bytes).into_owned())
                }
            }
        }
    }
}
