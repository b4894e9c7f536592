//! The one reader of server-sent events (the HTML event-stream format), push-based: feed it bytes
//! as they arrive, split anywhere (inside a UTF-8 sequence, between a CR and its LF), and it hands
//! back each event its blank line completes. The proxy reads streamed replies with it, the LLM
//! client a whole streamed body (through [`parse_body`]), the simulator the events it wrote.
//!
//! It follows the event-stream parsing rules: lines end with CRLF, LF or CR; a UTF-8 byte order
//! mark opening the stream is dropped; a blank line dispatches the event; a line opening with `:`
//! is a comment; a field is `name: value` (one space after the colon dropped) or a bare `name`
//! (empty value); `data` lines join with `\n`; `event` names the one event it is in; `id` is the
//! last event id, kept for the events after it; `retry` (ASCII digits only) is the reconnection
//! time in milliseconds; other fields are ignored; a block without `data` dispatches nothing.
//! Each line is decoded as UTF-8 once whole, invalid sequences replaced.
//!
//! Memory is bounded: an event whose held bytes (its unfinished line, its data and its name,
//! counted as they came in the stream) outgrow the reader's maximum is reported once, as
//! [`SseError::EventTooLarge`], and skipped to its blank line; the events after it are read as
//! usual. (Decoded, an event can be up to three times its stream bytes: each invalid byte becomes
//! U+FFFD, three bytes in UTF-8.)
//!
//! ```
//! use compact_formats::sse::SseParser;
//!
//! let mut parser = SseParser::default();
//! assert!(parser.push(b"event: ping\r").is_empty());
//! let events = parser.push(b"\ndata: {\"n\":\n\n");
//! let event = events[0].as_ref().unwrap();
//! assert_eq!((event.event.as_deref(), event.data.as_str()), (Some("ping"), "{\"n\":"));
//! // A last event without its blank line is dispatched only when the stream is said to be over.
//! assert!(parser.push(b"data: last").is_empty());
//! assert_eq!(parser.finish().unwrap().data, "last");
//! ```

use thiserror::Error;

/// The default most bytes one event may hold ([`SseParser::default`]): far above any provider's
/// event (a streamed delta is a few hundred bytes, a whole Responses `response.completed` a few
/// hundred kilobytes), low enough that a stream never blank-lining cannot grow a reader's memory.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// The byte order mark a stream may open with.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// One event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, when the event had one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id (`id:`) of the stream so far, when one was given (it carries over to
    /// the events after the one that set it).
    pub id: Option<String>,
}

/// What a reader reports besides events.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SseError {
    /// An event held more than `limit` bytes: it was dropped, and the reader skipped to its end.
    #[error("a server-sent event outgrew {limit} bytes: skipped to its end")]
    EventTooLarge {
        /// The reader's maximum.
        limit: usize,
    },
}

/// Reads a stream of events pushed to it chunk by chunk.
#[derive(Debug, Clone)]
pub struct SseParser {
    max_event_bytes: usize,
    /// Bytes of a byte order mark seen at the start; `None` once the stream has started.
    bom_matched: Option<usize>,
    /// The unfinished line (its raw bytes).
    line: Vec<u8>,
    /// The last line ended with CR: an LF opening the next chunk belongs to it.
    after_cr: bool,
    /// The current event's name and data so far, and how many stream bytes they came from.
    event: Option<String>,
    data: Option<String>,
    event_bytes: usize,
    data_bytes: usize,
    /// The stream's last event id and reconnection time.
    last_id: Option<String>,
    retry: Option<u64>,
    /// The current event outgrew the maximum: read on to its blank line, holding nothing.
    skipping: bool,
    /// While skipping: whether the current line has any byte (a line without is the blank one).
    skipped_line_has_bytes: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A reader that holds at most `max_event_bytes` of one event.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            bom_matched: Some(0),
            line: Vec::new(),
            after_cr: false,
            event: None,
            data: None,
            event_bytes: 0,
            data_bytes: 0,
            last_id: None,
            retry: None,
            skipping: false,
            skipped_line_has_bytes: false,
        }
    }

    /// The most bytes one event may hold.
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// The stream's last event id so far.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection time the stream asked for (`retry:`, milliseconds), if it did.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Reads `chunk`; returns the events it completes, in order, with an error in an event's
    /// place when that event outgrew the maximum.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Result<SseEvent, SseError>> {
        let mut out = Vec::new();
        let mut chunk = chunk;
        if let Some(matched) = self.bom_matched {
            let mut matched = matched;
            loop {
                if matched == BOM.len() {
                    self.bom_matched = None;
                    break;
                }
                match chunk.first() {
                    // Not yet known whether the stream opens with a byte order mark.
                    None => {
                        self.bom_matched = Some(matched);
                        return out;
                    }
                    Some(&b) if b == BOM[matched] => {
                        matched += 1;
                        chunk = &chunk[1..];
                    }
                    // Not a byte order mark: what looked like one is the stream's first bytes.
                    Some(_) => {
                        self.bom_matched = None;
                        self.read(&BOM[..matched], &mut out);
                        break;
                    }
                }
            }
        }
        self.read(chunk, &mut out);
        out
    }

    /// Ends the stream: the unfinished event, if it has data, is dispatched as if a blank line
    /// followed (a whole body's last event may lack it; a live stream that stops there was cut,
    /// and its reader may rather drop it). The reader is then as new, for another stream.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if let Some(matched) = self.bom_matched.take() {
            if matched < BOM.len() {
                self.read(&BOM[..matched], &mut out);
            }
        }
        if !self.skipping {
            if !self.line.is_empty() {
                self.end_line(&mut out);
            }
            self.dispatch(&mut out);
        }
        *self = SseParser::with_max_event_bytes(self.max_event_bytes);
        // Reading a line never makes an event hold more ([`Self::held`]), so the last line adds no
        // error here; only its event can come out.
        out.into_iter().find_map(Result::ok)
    }

    /// Reads stream bytes (after the byte order mark).
    fn read(&mut self, mut bytes: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        while !bytes.is_empty() {
            if std::mem::take(&mut self.after_cr) && bytes[0] == b'\n' {
                bytes = &bytes[1..];
                continue;
            }
            match bytes.iter().position(|&b| b == b'\r' || b == b'\n') {
                None => {
                    self.extend_line(bytes, out);
                    return;
                }
                Some(end) => {
                    self.extend_line(&bytes[..end], out);
                    self.after_cr = bytes[end] == b'\r';
                    bytes = &bytes[end + 1..];
                    self.end_line(out);
                }
            }
        }
    }

    /// The stream bytes the current event holds. A field's value is never longer than its line,
    /// and a data line's `\n` stands for at least its `data` name, so reading a line never makes
    /// this grow: only a line growing can.
    fn held(&self) -> usize {
        self.line.len() + self.data_bytes + self.event_bytes
    }

    fn extend_line(&mut self, part: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        if part.is_empty() {
            return;
        }
        if self.skipping {
            self.skipped_line_has_bytes = true;
            return;
        }
        self.line.extend_from_slice(part);
        if self.held() > self.max_event_bytes {
            out.push(Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            }));
            self.skipping = true;
            self.skipped_line_has_bytes = true;
            self.line = Vec::new();
            self.event = None;
            self.data = None;
            self.event_bytes = 0;
            self.data_bytes = 0;
        }
    }

    fn end_line(&mut self, out: &mut Vec<Result<SseEvent, SseError>>) {
        if self.skipping {
            if !std::mem::take(&mut self.skipped_line_has_bytes) {
                // The blank line that ends the oversized event.
                self.skipping = false;
            }
            return;
        }
        if self.line.is_empty() {
            self.dispatch(out);
            return;
        }
        if self.line[0] != b':' {
            // Split at the colon before decoding: an ASCII byte, never inside a UTF-8 sequence,
            // so each side decodes as it would in the whole line.
            let (name, raw) = match self.line.iter().position(|&b| b == b':') {
                Some(colon) => {
                    let raw = &self.line[colon + 1..];
                    (&self.line[..colon], raw.strip_prefix(b" ").unwrap_or(raw))
                }
                None => (&self.line[..], &[][..]),
            };
            let value = String::from_utf8_lossy(raw);
            match name {
                b"event" => {
                    self.event = Some(value.into_owned());
                    self.event_bytes = raw.len();
                }
                b"data" => match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&value);
                        self.data_bytes += 1 + raw.len();
                    }
                    None => {
                        self.data = Some(value.into_owned());
                        self.data_bytes = raw.len();
                    }
                },
                // An id with a NUL is ignored (the event-stream rules).
                b"id" if !raw.contains(&0) => self.last_id = Some(value.into_owned()),
                b"retry" if !raw.is_empty() && raw.iter().all(u8::is_ascii_digit) => {
                    // Digits too many for a u64 are no time anyone means: ignored.
                    if let Ok(ms) = value.parse() {
                        self.retry = Some(ms);
                    }
                }
                _ => {}
            }
        }
        self.line.clear();
    }

    fn dispatch(&mut self, out: &mut Vec<Result<SseEvent, SseError>>) {
        let event = self.event.take();
        self.event_bytes = 0;
        self.data_bytes = 0;
        if let Some(data) = self.data.take() {
            out.push(Ok(SseEvent {
                event,
                data,
                id: self.last_id.clone(),
            }));
        }
    }
}

/// The events of a whole body, its last event kept even without its blank line. No event can be
/// longer than the body, which is already in memory, so none is skipped.
pub fn parse_body(body: &[u8]) -> Vec<SseEvent> {
    let mut parser = SseParser::with_max_event_bytes(body.len());
    let mut events: Vec<SseEvent> = parser.push(body).into_iter().flatten().collect();
    events.extend(parser.finish());
    events
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
