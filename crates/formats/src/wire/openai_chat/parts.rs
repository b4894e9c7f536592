//! Chat Completions content parts (`text`, `refusal`, `image_url`, `input_audio`, `file`) <-> parts.

use crate::error::DecodeError;
use crate::wire::common::{data_url, split_data_url, Keep};
use crate::wire::json::{elem, nest, obj, unexpected, Fields};
use crate::wire::part::{
    drop_part, encode_opaque_part, finish_part, opaque_part, text_document_part, DEFAULT_IMAGE_MIME,
};
use crate::wire::{Loss, LossKind};
use compact_core::model::{Extra, Media, MediaSource, Part, PartKind};
use serde_json::Value;

/// The `type` of a refusal part; a text part whose extra holds this type is encoded back as one.
pub(crate) const REFUSAL: &str = "refusal";

/// `content` of a message: `None` when absent or `null` (a `null` stays in the message's extra);
/// otherwise the parts and whether it was a plain string.
pub(crate) fn decode_content(f: &mut Fields) -> Result<Option<(Vec<Part>, bool)>, DecodeError> {
    let path = f.at("content");
    match f.take_non_null("content") {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some((vec![Part::text(s)], true))),
        Some(Value::Array(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for (i, p) in parts.iter().enumerate() {
                out.push(decode_part(p, &elem(&path, i))?);
            }
            Ok(Some((out, false)))
        }
        Some(other) => Err(unexpected(path, "a string or an array", &other)),
    }
}

/// Decodes one content part.
pub(crate) fn decode_part(v: &Value, path: &str) -> Result<Part, DecodeError> {
    let mut f = Fields::of(v, path)?;
    let Some(ty) = f.peek_str("type").map(str::to_owned) else {
        return Ok(opaque_part(v));
    };
    let kind = match ty.as_str() {
        "text" => {
            f.take("type");
            PartKind::Text(f.req_str("text")?)
        }
        REFUSAL => PartKind::Text(f.req_str(REFUSAL)?),
        "image_url" => {
            f.take("type");
            let mut i = f.nested("image_url")?;
            let url = i.req_str("url")?;
            let detail = i.opt_str("detail")?;
            let mut extra = f.rest();
            nest(&mut extra, "image_url", i.rest());
            let media = Media {
                source: MediaSource::Url(url),
                detail,
                ..Media::default()
            };
            return Ok(Part {
                kind: PartKind::Image(media),
                extra,
            });
        }
        "input_audio" => {
            f.take("type");
            let mut i = f.nested("input_audio")?;
            let data = i.req_str("data")?;
            let format = i.opt_str("format")?;
            let mut extra = f.rest();
            nest(&mut extra, "input_audio", i.rest());
            let media = Media {
                source: MediaSource::Base64(data),
                mime: format,
                ..Media::default()
            };
            return Ok(Part {
                kind: PartKind::Audio(media),
                extra,
            });
        }
        "file" => {
            let Some(inner) = f.peek("file").cloned() else {
                return Ok(opaque_part(v));
            };
            let mut i = Fields::of(&inner, &f.at("file"))?;
            let has_id = i.peek("file_id").is_some_and(Value::is_string);
            let has_data = i.peek("file_data").is_some_and(Value::is_string);
            if has_id == has_data {
                return Ok(opaque_part(v));
            }
            f.take("type");
            f.take("file");
            let name = i.opt_str("filename")?;
            let (source, mime) = if has_id {
                (MediaSource::FileId(i.req_str("file_id")?), None)
            } else {
                decode_file_data(i.req_str("file_data")?)
            };
            let mut extra = f.rest();
            nest(&mut extra, "file", i.rest());
            let media = Media {
                source,
                mime,
                name,
                ..Media::default()
            };
            return Ok(Part {
                kind: PartKind::File(media),
                extra,
            });
        }
        _ => return Ok(opaque_part(v)),
    };
    Ok(Part {
        kind,
        extra: f.rest(),
    })
}

/// `file_data` (OpenAI): a `data:` URL becomes base64 plus MIME type; anything else stays raw.
pub(crate) fn decode_file_data(data: String) -> (MediaSource, Option<String>) {
    match split_data_url(&data) {
        Some((mime, b64)) => (MediaSource::Base64(b64.to_owned()), Some(mime.to_owned())),
        None => (MediaSource::Base64(data), None),
    }
}

/// `file_data` for base64 and an optional MIME type (inverse of [`decode_file_data`]).
pub(crate) fn encode_file_data(data: &str, mime: Option<&str>) -> String {
    match mime {
        Some(m) => data_url(m, data),
        None => data.to_owned(),
    }
}

/// Writes the OpenAI file reference of `m` into a file object: `file_id` for a file id, `file_data`
/// for inline base64 (any other source writes nothing).
pub(crate) fn insert_file_ref(o: &mut Extra, m: &Media) {
    match &m.source {
        MediaSource::FileId(id) => {
            o.insert("file_id".into(), Value::String(id.clone()));
        }
        MediaSource::Base64(b) => {
            o.insert(
                "file_data".into(),
                Value::String(encode_file_data(b, m.mime.as_deref())),
            );
        }
        _ => {}
    }
}

/// Encodes a part as a Chat content part; `None` (with a loss recorded) when Chat cannot carry it.
pub(crate) fn encode_part(
    part: &Part,
    keep: Keep,
    idx: usize,
    losses: &mut Vec<Loss>,
) -> Option<Value> {
    let o = match &part.kind {
        PartKind::Text(t) => {
            if keep == Keep::Extra
                && part.extra.get("type").and_then(Value::as_str) == Some(REFUSAL)
            {
                obj([(REFUSAL, Value::String(t.clone()))])
            } else {
                obj([("type", "text".into()), ("text", Value::String(t.clone()))])
            }
        }
        PartKind::Image(m) => {
            let url = match &m.source {
                MediaSource::Url(u) => u.clone(),
                MediaSource::Base64(b) => {
                    let mime = m.mime.as_deref().unwrap_or(DEFAULT_IMAGE_MIME);
                    if keep == Keep::Canonical {
                        losses.push(Loss::item(
                            idx,
                            LossKind::PartChanged,
                            "base64 image became a data: URL",
                        ));
                    }
                    data_url(mime, b)
                }
                _ => return drop_part(idx, "image by file id (Chat takes URLs only)", losses),
            };
            let mut inner = obj([("url", Value::String(url))]);
            if let Some(d) = &m.detail {
                inner.insert("detail".into(), Value::String(d.clone()));
            }
            obj([
                ("type", "image_url".into()),
                ("image_url", Value::Object(inner)),
            ])
        }
        PartKind::Audio(m) => {
            let MediaSource::Base64(data) = &m.source else {
                return drop_part(idx, "audio that is not inline base64", losses);
            };
            let mut inner = obj([("data", Value::String(data.clone()))]);
            if let Some(fmt) = &m.mime {
                inner.insert("format".into(), Value::String(fmt.clone()));
            }
            obj([
                ("type", "input_audio".into()),
                ("input_audio", Value::Object(inner)),
            ])
        }
        PartKind::File(m) => {
            let mut inner = Extra::new();
            match &m.source {
                MediaSource::FileId(_) | MediaSource::Base64(_) => insert_file_ref(&mut inner, m),
                MediaSource::Text(t) => return Some(text_document_part(t, "text", idx, losses)),
                _ => {
                    return drop_part(
                        idx,
                        "file that is neither a file id nor inline data",
                        losses,
                    )
                }
            }
            if let Some(n) = &m.name {
                inner.insert("filename".into(), Value::String(n.clone()));
            }
            obj([("type", "file".into()), ("file", Value::Object(inner))])
        }
        PartKind::Opaque(v) => return encode_opaque_part(v, keep, idx, losses),
    };
    finish_part(o, part, keep, idx, losses)
}
