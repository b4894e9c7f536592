//! Long runs without a space (base64 payloads, minified code, hex dumps): a model cannot read them
//! and they cost a token every three or four characters. Each run of at least [`BLOB_MIN_CHARS`]
//! such characters is replaced by a marker naming its size, its first characters and the item id
//! that restores the output.

/// Runs of at least this many characters without whitespace are blobs.
pub const BLOB_MIN_CHARS: usize = 2_000;
/// The marker keeps this many characters of the blob's start (enough to see what it was).
const KEEP_CHARS: usize = 40;

/// `text` with every blob replaced by a marker, or `None` when it has none.
pub fn strip_blobs(text: &str, reference: &crate::model::ItemId) -> Option<String> {
    let mut out = String::new();
    let mut last = 0;
    let mut start: Option<usize> = None;
    let mut changed = false;
    let flush = |from: usize, to: usize, out: &mut String, last: &mut usize| {
        let run = &text[from..to];
        let chars = run.chars().count();
        if chars >= BLOB_MIN_CHARS {
            out.push_str(&text[*last..from]);
            let head: String = run.chars().take(KEEP_CHARS).collect();
            out.push_str(&format!(
                "{head}[… {chars}-character run without spaces removed; recall `{reference}` for it]"
            ));
            *last = to;
            true
        } else {
            false
        }
    };
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                changed |= flush(s, i, &mut out, &mut last);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        changed |= flush(s, text.len(), &mut out, &mut last);
    }
    if !changed {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::ItemId;

    #[test]
    fn a_blob_becomes_a_marker_and_the_prose_stays() {
        let blob = "QUJD".repeat(1000);
        let text = format!("The image follows:\n{blob}\nEnd of file.");
        let out = strip_blobs(&text, &ItemId::new("r7")).unwrap();
        assert!(out.starts_with("The image follows:\nQUJDQUJD"), "{out}");
        assert!(
            out.contains("4000-character run without spaces removed; recall `r7`"),
            "{out}"
        );
        assert!(out.ends_with("\nEnd of file."), "{out}");
        assert_eq!(strip_blobs("short words only", &ItemId::new("r7")), None);
    }
}
