//! Content-part pieces the three formats' part codecs share: opaque parts in and out, dropped parts,
//! the text part a text document becomes, and the tail of every part encode (unknown fields
//! re-emitted or reported).

use super::common::{carry_extra, Keep};
use super::json::obj;
use super::{Loss, LossKind};
use compact_core::model::{Extra, Part, PartKind};
use serde_json::Value;

/// MIME type assumed for an inline image whose type was not declared.
pub(crate) const DEFAULT_IMAGE_MIME: &str = "image/png";

/// A part kept verbatim because its shape is not modelled.
pub(crate) fn opaque_part(v: &Value) -> Part {
    Part {
        kind: PartKind::Opaque(v.clone()),
        extra: Extra::new(),
    }
}

/// An opaque part: written back as it was when it belongs to the target format, else dropped (with
/// a loss).
pub(crate) fn encode_opaque_part(
    v: &Value,
    keep: Keep,
    idx: usize,
    losses: &mut Vec<Loss>,
) -> Option<Value> {
    if keep == Keep::Extra {
        return Some(v.clone());
    }
    drop_part(idx, "opaque part of another format", losses)
}

/// Records that a part is not carried into the target format ([`LossKind::PartDropped`], `what`
/// saying which part) and yields no encoded part.
pub(crate) fn drop_part(idx: usize, what: &str, losses: &mut Vec<Loss>) -> Option<Value> {
    losses.push(Loss::item(idx, LossKind::PartDropped, what));
    None
}

/// A text document for a format whose file parts cannot hold text: a text part of `text_type`
/// (with a loss).
pub(crate) fn text_document_part(
    text: &str,
    text_type: &str,
    idx: usize,
    losses: &mut Vec<Loss>,
) -> Value {
    losses.push(Loss::item(
        idx,
        LossKind::PartChanged,
        "text document became a text part",
    ));
    Value::Object(obj([
        ("type", text_type.into()),
        ("text", Value::String(text.to_owned())),
    ]))
}

/// The encoded part `o` of `part`, with the part's unknown fields re-emitted or reported.
pub(crate) fn finish_part(
    mut o: Extra,
    part: &Part,
    keep: Keep,
    idx: usize,
    losses: &mut Vec<Loss>,
) -> Option<Value> {
    carry_extra(&mut o, &part.extra, keep, idx, "part", losses);
    Some(Value::Object(o))
}
