//! Reading an input file: lines with their numbers and byte offsets, JSON parsing that reports where a
//! document or record breaks, and the import context that turns problems into errors (strict) or
//! warnings plus skipped records (lenient).

use super::error::{ImportError, ImportWarning, Location};
use super::{ImportMode, ImportStats};
use crate::error::DecodeError;
use serde_json::Value;

/// The UTF-8 byte order mark, which some editors write at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One line of a file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    /// Line number (1-based).
    pub number: usize,
    /// Byte offset of the line's first byte.
    pub offset: usize,
    /// The line without its terminator (`\n` or `\r\n`).
    pub bytes: &'a [u8],
}

impl Line<'_> {
    /// True when the line holds only whitespace.
    pub fn is_blank(&self) -> bool {
        self.bytes.iter().all(u8::is_ascii_whitespace)
    }
}

/// The lines of `bytes` (a leading byte order mark is stepped over, offsets stay file offsets).
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = Line<'_>> {
    let start = if bytes.starts_with(BOM) { BOM.len() } else { 0 };
    let mut offset = start;
    let mut number = 0usize;
    std::iter::from_fn(move || {
        if offset >= bytes.len() {
            return None;
        }
        let rest = &bytes[offset..];
        let len = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
        let mut line = &rest[..len];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        number += 1;
        let out = Line {
            number,
            offset,
            bytes: line,
        };
        offset += len + 1;
        Some(out)
    })
}

/// `bytes` without a leading byte order mark.
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// The message of a serde_json error without its trailing "at line L column C" (we print our own).
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(pos) => text[..pos].to_owned(),
        None => text,
    }
}

/// What kind of JSON failure `e` is, in words.
fn json_problem(e: &serde_json::Error) -> String {
    if e.is_eof() {
        format!("truncated JSON ({})", json_message(e))
    } else {
        format!("malformed JSON ({})", json_message(e))
    }
}

/// Import state shared by the importers: file name, mode, warnings and statistics.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    /// File name for messages.
    pub file: &'a str,
    /// Strict or lenient.
    pub mode: ImportMode,
    /// Warnings so far.
    pub warnings: Vec<ImportWarning>,
    /// Statistics so far.
    pub stats: ImportStats,
}

impl<'a> Ctx<'a> {
    /// A fresh context.
    pub fn new(file: &'a str, mode: ImportMode) -> Self {
        Ctx {
            file,
            mode,
            warnings: Vec::new(),
            stats: ImportStats::default(),
        }
    }

    /// The location of line `line` at byte column `column` (1-based).
    pub fn at_line(&self, line: &Line<'_>, column: usize) -> Location {
        let column = column.clamp(1, line.bytes.len() + 1);
        Location {
            file: self.file.to_owned(),
            line: line.number,
            column,
            offset: line.offset + column - 1,
        }
    }

    /// The location of byte `offset` of the whole input `bytes`.
    pub fn at_offset(&self, bytes: &[u8], offset: usize) -> Location {
        Location::at_offset(self.file, bytes, offset)
    }

    /// A malformed record: an error in strict mode; in lenient mode a warning, and the record is
    /// counted as malformed and skipped.
    pub fn problem(&mut self, at: Location, what: impl Into<String>) -> Result<(), ImportError> {
        let what = what.into();
        match self.mode {
            ImportMode::Strict => Err(ImportError::Malformed { at, what }),
            ImportMode::Lenient => {
                self.stats.records_malformed += 1;
                self.warnings.push(ImportWarning {
                    at,
                    message: format!("{what}; record skipped"),
                });
                Ok(())
            }
        }
    }

    /// A record whose embedded message or item does not decode: like [`Ctx::problem`].
    pub fn decode_problem(&mut self, at: Location, source: DecodeError) -> Result<(), ImportError> {
        match self.mode {
            ImportMode::Strict => Err(ImportError::Decode { at, source }),
            ImportMode::Lenient => {
                self.stats.records_malformed += 1;
                self.warnings.push(ImportWarning {
                    at,
                    message: format!("{source}; record skipped"),
                });
                Ok(())
            }
        }
    }

    /// A remark that never fails the import.
    pub fn warn(&mut self, at: Location, message: impl Into<String>) {
        self.warnings.push(ImportWarning {
            at,
            message: message.into(),
        });
    }

    /// A well-formed record that produces no item (a kind the model never sees).
    pub fn skip(&mut self, kind: &str) {
        self.stats.records_skipped += 1;
        *self.stats.skipped_kinds.entry(kind.to_owned()).or_insert(0) += 1;
    }

    /// Parses one JSONL line. Blank lines give `None` and are not records; a line that is not JSON
    /// is a problem (`None` in lenient mode).
    pub fn parse_line(&mut self, line: &Line<'_>) -> Result<Option<Value>, ImportError> {
        if line.is_blank() {
            return Ok(None);
        }
        self.stats.records_read += 1;
        match serde_json::from_slice::<Value>(line.bytes) {
            Ok(v) => Ok(Some(v)),
            Err(e) => {
                let at = self.at_line(line, e.column());
                self.problem(at, json_problem(&e))?;
                Ok(None)
            }
        }
    }

    /// Parses a whole-file JSON document; a syntax error is always fatal (there is no record to skip).
    pub fn parse_document(&self, bytes: &[u8]) -> Result<Value, ImportError> {
        let body = strip_bom(bytes);
        let base = bytes.len() - body.len();
        serde_json::from_slice::<Value>(body).map_err(|e| {
            let at = document_location(self.file, bytes, base, &e);
            ImportError::Malformed {
                at,
                what: json_problem(&e),
            }
        })
    }
}

/// Locations of byte offsets of one input, found in a single forward pass when they are asked for in
/// ascending order (so locating every record of a large document stays linear); an offset behind the
/// last one asked for is located from the start.
#[derive(Debug)]
pub(crate) struct Locator<'b> {
    bytes: &'b [u8],
    /// Offset reached so far.
    offset: usize,
    /// Line (1-based) and first byte of the line of `offset`.
    line: usize,
    line_start: usize,
}

impl<'b> Locator<'b> {
    /// A locator at the start of `bytes`.
    pub fn new(bytes: &'b [u8]) -> Self {
        Locator {
            bytes,
            offset: 0,
            line: 1,
            line_start: 0,
        }
    }

    /// The location of byte `offset` (clamped to the end), as [`Location::at_offset`] gives it.
    pub fn at(&mut self, file: &str, offset: usize) -> Location {
        let offset = offset.min(self.bytes.len());
        if offset < self.offset {
            return Location::at_offset(file, self.bytes, offset);
        }
        for (i, b) in self.bytes[self.offset..offset].iter().enumerate() {
            if *b == b'\n' {
                self.line += 1;
                self.line_start = self.offset + i + 1;
            }
        }
        self.offset = offset;
        Location {
            file: file.to_owned(),
            line: self.line,
            column: offset - self.line_start + 1,
            offset,
        }
    }
}

/// Converts serde_json's line/column of an error in `bytes[base..]` to a file location.
fn document_location(file: &str, bytes: &[u8], base: usize, e: &serde_json::Error) -> Location {
    let mut offset = base;
    let mut line = 1usize;
    while line < e.line() {
        match bytes[offset..].iter().position(|b| *b == b'\n') {
            Some(p) => {
                offset += p + 1;
                line += 1;
            }
            None => break,
        }
    }
    let column = e.column().max(1);
    Location::at_offset(file, bytes, offset + column - 1)
}

/// The text of a JSON string, or of the `text` members of an array of text parts, joined by newlines;
/// other values give their JSON text.
pub(crate) fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let texts: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    Value::String(s) => s.clone(),
                    Value::Object(o) => match o.get("text") {
                        Some(Value::String(s)) => s.clone(),
                        _ => Value::Object(o.clone()).to_string(),
                    },
                    other => other.to_string(),
                })
                .collect();
            texts.join("\n")
        }
        other => other.to_string(),
    }
}

/// Member `key` of `v` as a string, if it is one.
pub(crate) fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locator_agrees_with_at_offset_in_any_order() {
        let text = b"{\n  \"steps\": [\r\n\n{\"a\": 1},\n   {\"b\": 2}]\n}";
        let mut locator = Locator::new(text);
        let ascending: Vec<usize> = (0..=text.len() + 2).collect();
        for &o in ascending.iter().chain([7, 3, 30, 0].iter()) {
            assert_eq!(
                locator.at("f", o),
                Location::at_offset("f", text, o),
                "offset {o}"
            );
        }
    }
}
