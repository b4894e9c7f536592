//! Parts -> Anthropic content blocks (`text`, `image`, `document`; opaque blocks of the same format).

use crate::wire::common::{split_data_url, Keep};
use crate::wire::json::obj;
use crate::wire::part::{drop_part, encode_opaque_part, finish_part, DEFAULT_IMAGE_MIME};
use crate::wire::{Loss, LossKind};
use compact_core::model::{MediaSource, Part, PartKind};
use serde_json::Value;

/// MIME type assumed for an inline document whose type was not declared (the API requires one).
const DEFAULT_DOCUMENT_MIME: &str = "application/pdf";

/// One content block for a part; `None` (with a loss) when Anthropic cannot carry it.
pub(crate) fn encode_part(
    p: &Part,
    keep: Keep,
    idx: usize,
    losses: &mut Vec<Loss>,
) -> Option<Value> {
    let o = match &p.kind {
        // The API rejects empty text blocks; a same-format one is kept as it was.
        PartKind::Text(t) if t.is_empty() && keep == Keep::Canonical => return None,
        PartKind::Text(t) => obj([("type", "text".into()), ("text", Value::String(t.clone()))]),
        PartKind::Image(m) | PartKind::File(m) => {
            let image = matches!(p.kind, PartKind::Image(_));
            let default_mime = if image {
                DEFAULT_IMAGE_MIME
            } else {
                DEFAULT_DOCUMENT_MIME
            };
            let source = match &m.source {
                MediaSource::Base64(data) => {
                    let mut s = obj([("type", "base64".into())]);
                    match (&m.mime, keep) {
                        (Some(mime), _) => {
                            s.insert("media_type".into(), Value::String(mime.clone()));
                        }
                        (None, Keep::Canonical) => {
                            s.insert("media_type".into(), default_mime.into());
                        }
                        (None, Keep::Extra) => {}
                    }
                    s.insert("data".into(), Value::String(data.clone()));
                    s
                }
                MediaSource::Text(data) => {
                    let mut s = obj([("type", "text".into())]);
                    if let Some(mime) = &m.mime {
                        s.insert("media_type".into(), Value::String(mime.clone()));
                    }
                    s.insert("data".into(), Value::String(data.clone()));
                    s
                }
                MediaSource::Url(u) => match split_data_url(u) {
                    Some((mime, data)) if keep == Keep::Canonical => {
                        losses.push(Loss::item(
                            idx,
                            LossKind::PartChanged,
                            "data: URL became a base64 source",
                        ));
                        obj([
                            ("type", "base64".into()),
                            ("media_type", mime.into()),
                            ("data", data.into()),
                        ])
                    }
                    _ => obj([("type", "url".into()), ("url", Value::String(u.clone()))]),
                },
                MediaSource::FileId(id) if keep == Keep::Extra => obj([
                    ("type", "file".into()),
                    ("file_id", Value::String(id.clone())),
                ]),
                MediaSource::FileId(_) | MediaSource::None => {
                    return drop_part(idx, "media by file id of another provider", losses)
                }
            };
            let ty = if image { "image" } else { "document" };
            let mut o = obj([("type", ty.into()), ("source", Value::Object(source))]);
            if let (false, Some(name)) = (image, &m.name) {
                o.insert("title".into(), Value::String(name.clone()));
            }
            if keep == Keep::Canonical && m.detail.is_some() {
                losses.push(Loss::item(idx, LossKind::FieldsDropped, "image detail"));
            }
            o
        }
        PartKind::Audio(_) => return drop_part(idx, "audio input", losses),
        PartKind::Opaque(v) => return encode_opaque_part(v, keep, idx, losses),
    };
    finish_part(o, p, keep, idx, losses)
}
