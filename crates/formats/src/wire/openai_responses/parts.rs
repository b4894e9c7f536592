//! Responses content parts (`input_text`, `output_text`, `refusal`, `input_image`, `input_file`) <->
//! parts.

use crate::error::DecodeError;
use crate::wire::common::{data_url, Keep};
use crate::wire::json::{elem, obj, unexpected, Fields};
use crate::wire::openai_chat::parts::{decode_file_data, insert_file_ref, REFUSAL};
use crate::wire::part::{
    drop_part, encode_opaque_part, finish_part, opaque_part, text_document_part, DEFAULT_IMAGE_MIME,
};
use crate::wire::{Loss, LossKind};
use compact_core::model::{Media, MediaSource, Part, PartKind};
use serde_json::Value;

/// Text part type of user, system and developer content and of tool output.
pub(crate) const INPUT_TEXT: &str = "input_text";
/// Text part type of assistant content.
pub(crate) const OUTPUT_TEXT: &str = "output_text";

/// Decodes a content array; `text_type` is the text type this context normally uses (a text part of
/// the other type keeps its `type` in extra).
pub(crate) fn decode_parts(
    parts: &[Value],
    path: &str,
    text_type: &str,
) -> Result<Vec<Part>, DecodeError> {
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| decode_part(p, &elem(path, i), text_type))
        .collect()
}

/// Decodes `content` / `output`: a string (one text part) or a parts array. True when a string.
pub(crate) fn decode_content(
    v: Value,
    path: &str,
    text_type: &str,
) -> Result<(Vec<Part>, bool), DecodeError> {
    match v {
        Value::String(s) => Ok((vec![Part::text(s)], true)),
        Value::Array(parts) => Ok((decode_parts(&parts, path, text_type)?, false)),
        other => Err(unexpected(path, "a string or an array", &other)),
    }
}

fn decode_part(v: &Value, path: &str, text_type: &str) -> Result<Part, DecodeError> {
    let mut f = Fields::of(v, path)?;
    let Some(ty) = f.peek_str("type").map(str::to_owned) else {
        return Ok(opaque_part(v));
    };
    let kind = match ty.as_str() {
        INPUT_TEXT | OUTPUT_TEXT => {
            f.take_tag("type", text_type);
            PartKind::Text(f.req_str("text")?)
        }
        REFUSAL => PartKind::Text(f.req_str(REFUSAL)?),
        "input_image" => {
            let url = f.peek("image_url").is_some_and(Value::is_string);
            let id = f.peek("file_id").is_some_and(Value::is_string);
            if url == id {
                return Ok(opaque_part(v));
            }
            f.take("type");
            let source = if url {
                MediaSource::Url(f.req_str("image_url")?)
            } else {
                MediaSource::FileId(f.req_str("file_id")?)
            };
            let detail = f.opt_str("detail")?;
            PartKind::Image(Media {
                source,
                detail,
                ..Media::default()
            })
        }
        "input_file" => {
            let present: Vec<&str> = ["file_id", "file_data", "file_url"]
                .into_iter()
                .filter(|k| f.peek(k).is_some_and(Value::is_string))
                .collect();
            let [key] = present.as_slice() else {
                return Ok(opaque_part(v));
            };
            let key = *key;
            f.take("type");
            let value = f.req_str(key)?;
            let (source, mime) = match key {
                "file_id" => (MediaSource::FileId(value), None),
                "file_url" => (MediaSource::Url(value), None),
                _ => decode_file_data(value),
            };
            let name = f.opt_str("filename")?;
            PartKind::File(Media {
                source,
                mime,
                name,
                ..Media::default()
            })
        }
        _ => return Ok(opaque_part(v)),
    };
    Ok(Part {
        kind,
        extra: f.rest(),
    })
}

/// Encodes a part; `None` (with a loss) when Responses cannot carry it.
pub(crate) fn encode_part(
    part: &Part,
    text_type: &str,
    keep: Keep,
    idx: usize,
    losses: &mut Vec<Loss>,
) -> Option<Value> {
    let o = match &part.kind {
        PartKind::Text(t) => {
            let extra_type = part
                .extra
                .get("type")
                .and_then(Value::as_str)
                .filter(|_| keep == Keep::Extra);
            match extra_type {
                Some(REFUSAL) => obj([(REFUSAL, Value::String(t.clone()))]),
                Some(_) => obj([("text", Value::String(t.clone()))]),
                None => obj([
                    ("type", text_type.into()),
                    ("text", Value::String(t.clone())),
                ]),
            }
        }
        PartKind::Image(m) => {
            let mut o = obj([("type", "input_image".into())]);
            match &m.source {
                MediaSource::Url(u) => {
                    o.insert("image_url".into(), Value::String(u.clone()));
                }
                MediaSource::FileId(id) => {
                    o.insert("file_id".into(), Value::String(id.clone()));
                }
                MediaSource::Base64(b) => {
                    let mime = m.mime.as_deref().unwrap_or(DEFAULT_IMAGE_MIME);
                    losses.push(Loss::item(
                        idx,
                        LossKind::PartChanged,
                        "base64 image became a data: URL",
                    ));
                    o.insert("image_url".into(), Value::String(data_url(mime, b)));
                }
                _ => return drop_part(idx, "image without URL, file id or data", losses),
            }
            if let Some(d) = &m.detail {
                o.insert("detail".into(), Value::String(d.clone()));
            }
            o
        }
        PartKind::File(m) => {
            let mut o = obj([("type", "input_file".into())]);
            match &m.source {
                MediaSource::FileId(_) | MediaSource::Base64(_) => insert_file_ref(&mut o, m),
                MediaSource::Url(u) => {
                    o.insert("file_url".into(), Value::String(u.clone()));
                }
                MediaSource::Text(t) => return Some(text_document_part(t, text_type, idx, losses)),
                MediaSource::None => return drop_part(idx, "file without id, URL or data", losses),
            }
            if let Some(n) = &m.name {
                o.insert("filename".into(), Value::String(n.clone()));
            }
            o
        }
        PartKind::Audio(_) => return drop_part(idx, "audio input", losses),
        PartKind::Opaque(v) => return encode_opaque_part(v, keep, idx, losses),
    };
    finish_part(o, part, keep, idx, losses)
}
