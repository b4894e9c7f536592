//! Responses content parts (`input_text`, `output_text`, `refusal`, `input_image`, `input_file`) <->
//! parts.

use crate::error::DecodeError;
use crate::wire::common::{note_fields, Keep};
use crate::wire::json::{elem, merge, obj, type_name, Fields};
use crate::wire::openai_chat::parts::{decode_file_data, encode_file_data, REFUSAL};
use crate::wire::{Loss, LossKind};
use compact_core::model::{Extra, Media, MediaSource, Part, PartKind};
use serde_json::Value;

/// Text part type of user, system and developer content and of tool output.
pub(crate) const INPUT_TEXT: &str = "input_text";
/// Text part type of assistant content.
pub(crate) const OUTPUT_TEXT: &str = "output_text";

fn opaque(v: &Value) -> Part {
    Part {
        kind: PartKind::Opaque(v.clone()),
        extra: Extra::new(),
    }
}

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
        other => Err(DecodeError::new(
            path,
            format!("expected a string or an array, got {}", type_name(&other)),
        )),
    }
}

fn decode_part(v: &Value, path: &str, text_type: &str) -> Result<Part, DecodeError> {
    let mut f = Fields::of(v, path)?;
    let Some(ty) = f.peek_str("type").map(str::to_owned) else {
        return Ok(opaque(v));
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
                return Ok(opaque(v));
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
                return Ok(opaque(v));
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
        _ => return Ok(opaque(v)),
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
    let mut o = match &part.kind {
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
                    let mime = m.mime.as_deref().unwrap_or("image/png");
                    losses.push(Loss::item(
                        idx,
                        LossKind::PartChanged,
                        "base64 image became a data: URL",
                    ));
                    o.insert(
                        "image_url".into(),
                        Value::String(crate::wire::common::data_url(mime, b)),
                    );
                }
                _ => {
                    losses.push(Loss::item(
                        idx,
                        LossKind::PartDropped,
                        "image without URL, file id or data",
                    ));
                    return None;
                }
            }
            if let Some(d) = &m.detail {
                o.insert("detail".into(), Value::String(d.clone()));
            }
            o
        }
        PartKind::File(m) => {
            let mut o = obj([("type", "input_file".into())]);
            match &m.source {
                MediaSource::FileId(id) => {
                    o.insert("file_id".into(), Value::String(id.clone()));
                }
                MediaSource::Url(u) => {
                    o.insert("file_url".into(), Value::String(u.clone()));
                }
                MediaSource::Base64(b) => {
                    o.insert(
                        "file_data".into(),
                        Value::String(encode_file_data(b, m.mime.as_deref())),
                    );
                }
                MediaSource::Text(t) => {
                    losses.push(Loss::item(
                        idx,
                        LossKind::PartChanged,
                        "text document became a text part",
                    ));
                    return Some(Value::Object(obj([
                        ("type", text_type.into()),
                        ("text", Value::String(t.clone())),
                    ])));
                }
                MediaSource::None => {
                    losses.push(Loss::item(
                        idx,
                        LossKind::PartDropped,
                        "file without id, URL or data",
                    ));
                    return None;
                }
            }
            if let Some(n) = &m.name {
                o.insert("filename".into(), Value::String(n.clone()));
            }
            o
        }
        PartKind::Audio(_) => {
            losses.push(Loss::item(idx, LossKind::PartDropped, "audio input"));
            return None;
        }
        PartKind::Opaque(v) => {
            if keep == Keep::Extra {
                return Some(v.clone());
            }
            losses.push(Loss::item(
                idx,
                LossKind::PartDropped,
                "opaque part of another format",
            ));
            return None;
        }
    };
    if keep == Keep::Extra {
        merge(&mut o, &part.extra);
    } else {
        note_fields(losses, idx, "part", &part.extra);
    }
    Some(Value::Object(o))
}
