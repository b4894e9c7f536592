//! An incremental server-sent-events splitter: the proxy forwards stream bytes as they arrive and
//! reads a copy of them here, event by event, for usage and for a Responses stream that fails
//! before any output. It follows the event-stream line rules (CR, LF or CRLF line ends, comment
//! lines, multi-line data) and never holds more than [`MAX_PENDING_BYTES`] of one event.

/// The most bytes of one unfinished event kept; a longer event is skipped (it is still forwarded,
/// only not read), so a malformed stream cannot grow the proxy's memory.
pub const MAX_PENDING_BYTES: usize = 4 * 1024 * 1024;

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, when there was one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Splits a byte stream into events.
#[derive(Debug, Default)]
pub struct SseSplitter {
    /// Bytes of the unfinished event, line ends normalised to `\n`.
    pending: Vec<u8>,
    /// The last chunk ended with CR: a LF opening the next one belongs to it.
    after_cr: bool,
    /// The current event outgrew the limit: skip to its end.
    skipping: bool,
}

impl SseSplitter {
    /// Feeds a chunk; returns the events it completes.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &b in chunk {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            let b = if b == b'\r' {
                self.after_cr = true;
                b'\n'
            } else {
                b
            };
            if b == b'\n' && self.pending.last() == Some(&b'\n') {
                if !std::mem::take(&mut self.skipping) {
                    if let Some(e) = parse_event(&self.pending) {
                        events.push(e);
                    }
                }
                self.pending.clear();
                continue;
            }
            if self.skipping {
                // Only the last byte matters while skipping (to see the blank line).
                self.pending.clear();
                self.pending.push(b);
                continue;
            }
            self.pending.push(b);
            if self.pending.len() > MAX_PENDING_BYTES {
                self.skipping = true;
                self.pending.clear();
                self.pending.push(b);
            }
        }
        events
    }
}

fn parse_event(block: &[u8]) -> Option<SseEvent> {
    let text = String::from_utf8_lossy(block);
    let mut event = None;
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    data.map(|data| SseEvent { event, data })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn splits_across_chunks_and_line_ends() {
        let mut s = SseSplitter::default();
        assert!(s.push(b"event: a\r").is_empty());
        assert!(s.push(b"\ndata: {\"x\":").is_empty());
        let got = s.push(b"1}\r\n\r\n: comment\n\ndata: one\ndata: two\n\ndata\n\n");
        assert_eq!(
            got,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "{\"x\":1}".into()
                },
                SseEvent {
                    event: None,
                    data: "one\ntwo".into()
                },
                SseEvent {
                    event: None,
                    data: String::new()
                },
            ]
        );
    }

    #[test]
    fn an_oversized_event_is_skipped_not_kept() {
        let mut s = SseSplitter::default();
        let big = vec![b'x'; MAX_PENDING_BYTES + 10];
        assert!(s.push(b"data: ").is_empty());
        assert!(s.push(&big).is_empty());
        assert!(s.pending.len() <= 1);
        let got = s.push(b"\n\ndata: next\n\n");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, "next");
    }
}
