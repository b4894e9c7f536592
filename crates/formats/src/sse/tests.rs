//! The event-stream rules one by one, the former proxy and LLM readers' tests, and the property
//! that pins the push-based reading: any chunking of a stream gives what the whole stream gives.

use super::*;
use proptest::prelude::*;

fn event(name: Option<&str>, data: &str) -> SseEvent {
    SseEvent {
        event: name.map(str::to_owned),
        data: data.to_owned(),
        id: None,
    }
}

/// Every event and error of `chunks` fed in order, then `finish`.
fn read_chunks<'a>(
    parser: &mut SseParser,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<Result<SseEvent, SseError>> {
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(parser.push(chunk));
    }
    out.extend(parser.finish().map(Ok));
    out
}

// ---- The former proxy splitter's tests -----------------------------------------------------------

#[test]
fn splits_across_chunks_and_line_ends() {
    let mut s = SseParser::default();
    assert!(s.push(b"event: a\r").is_empty());
    assert!(s.push(b"\ndata: {\"x\":").is_empty());
    let got = s.push(b"1}\r\n\r\n: comment\n\ndata: one\ndata: two\n\ndata\n\n");
    assert_eq!(
        got,
        vec![
            Ok(event(Some("a"), "{\"x\":1}")),
            Ok(event(None, "one\ntwo")),
            Ok(event(None, "")),
        ]
    );
}

#[test]
fn an_oversized_event_is_skipped_not_kept() {
    let mut s = SseParser::default();
    let big = vec![b'x'; DEFAULT_MAX_EVENT_BYTES + 10];
    assert!(s.push(b"data: ").is_empty());
    assert_eq!(
        s.push(&big),
        vec![Err(SseError::EventTooLarge {
            limit: DEFAULT_MAX_EVENT_BYTES
        })]
    );
    assert!(s.line.is_empty() && s.data.is_none());
    // More of the same event: nothing held, nothing reported twice.
    assert!(s.push(&big).is_empty());
    assert!(s.line.is_empty());
    let got = s.push(b"\n\ndata: next\n\n");
    assert_eq!(got, vec![Ok(event(None, "next"))]);
}

// ---- The former LLM reader's tests ---------------------------------------------------------------

#[test]
fn sse_line_endings_and_bare_fields() {
    let lf = parse_body(b"event: a\ndata: 1\ndata: 2\n\ndata\n\n");
    let crlf = parse_body(b"event: a\r\ndata: 1\r\ndata: 2\r\n\r\ndata\r\n\r\n");
    let cr = parse_body(b"event: a\rdata: 1\rdata: 2\r\rdata\r\r");
    assert_eq!(lf, crlf);
    assert_eq!(lf, cr);
    assert_eq!(lf.len(), 2);
    assert_eq!(lf[0].event.as_deref(), Some("a"));
    assert_eq!(lf[0].data, "1\n2");
    assert_eq!(lf[1].data, "");
    // The event name belongs to one event only; a last event without its blank line is kept.
    let evs = parse_body("\u{feff}event: a\n\ndata:x\n\ndata: y".as_bytes());
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].event, None);
    assert_eq!(evs[0].data, "x");
    assert_eq!(evs[1].data, "y");
}

#[test]
fn sse_split() {
    let evs = parse_body(b"event: a\ndata: {\"x\":1}\n\n: comment\n\ndata: [DONE]\n\n");
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].event.as_deref(), Some("a"));
    assert_eq!(evs[1].data, "[DONE]");
}

// ---- Each rule -----------------------------------------------------------------------------------

#[test]
fn a_byte_order_mark_is_dropped_only_at_the_start_even_split() {
    let mut s = SseParser::default();
    assert!(s.push(&[0xEF]).is_empty());
    assert!(s.push(&[0xBB]).is_empty());
    assert_eq!(s.push(b"\xBFdata: a\n\n"), vec![Ok(event(None, "a"))]);
    // Later, the same bytes are part of a line: here they make an unknown field name.
    assert!(s.push("\u{feff}data: b\n\n".as_bytes()).is_empty());
    // A stream opening with part of a byte order mark keeps those bytes.
    assert_eq!(parse_body(b"\xEF\xBBdata: c\n\n"), vec![]);
    assert_eq!(
        parse_body(b"\xEFdata: c\n\ndata: d\n\n"),
        vec![event(None, "d")]
    );
    assert_eq!(parse_body(b"\xEF"), vec![]);
}

#[test]
fn a_utf8_sequence_split_across_chunks_is_whole() {
    let text = "data: é😀\n\n".as_bytes();
    for cut in 0..=text.len() {
        let mut s = SseParser::default();
        let got = read_chunks(&mut s, [&text[..cut], &text[cut..]]);
        assert_eq!(got, vec![Ok(event(None, "é😀"))], "cut at {cut}");
    }
    // An invalid sequence is replaced, not an error.
    assert_eq!(parse_body(b"data: \xFF\n\n"), vec![event(None, "\u{FFFD}")]);
}

#[test]
fn cr_and_lf_in_separate_chunks_are_one_line_end() {
    let mut s = SseParser::default();
    assert!(s.push(b"data: a\r").is_empty());
    // The LF belongs to the CR before it: this is not yet the blank line.
    assert!(s.push(b"\n").is_empty());
    assert_eq!(s.push(b"\r"), vec![Ok(event(None, "a"))]);
    // And a CR then a CR is two line ends.
    assert!(s.push(b"data: b\r").is_empty());
    assert_eq!(s.push(b"\r"), vec![Ok(event(None, "b"))]);
}

#[test]
fn fields_colons_and_spaces() {
    let evs = parse_body(b"data:no space\n\ndata:  two spaces\n\ndata: a: b\n\nevent:x \ndata\n\n");
    let data: Vec<&str> = evs.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(data, ["no space", " two spaces", "a: b", ""]);
    // The name is the value as written (only one leading space is ever dropped).
    assert_eq!(evs[3].event.as_deref(), Some("x "));
    // Unknown fields, comments and a block without data dispatch nothing.
    assert_eq!(parse_body(b"foo: bar\n: note\nevent: e\n\n:\n\n"), vec![]);
    // A field name is exact: `Data` is not `data`.
    assert_eq!(parse_body(b"Data: x\n\n"), vec![]);
}

#[test]
fn the_last_event_id_carries_over_and_retry_sets_the_reconnection_time() {
    let mut s = SseParser::default();
    let got =
        s.push(b"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: x\0y\nretry: 1500\ndata: d\n\n");
    let ids: Vec<Option<&str>> = got
        .iter()
        .map(|e| e.as_ref().unwrap().id.as_deref())
        .collect();
    // An empty `id` resets it to empty; one with a NUL is ignored.
    assert_eq!(ids, [Some("7"), Some("7"), Some(""), Some("")]);
    assert_eq!(s.retry(), Some(1500));
    assert_eq!(s.last_event_id(), Some(""));
    // A retry that is not all digits is ignored.
    s.push(b"retry: 15s\n\nretry: -1\n\nretry:\n\n");
    assert_eq!(s.retry(), Some(1500));
}

#[test]
fn finish_dispatches_the_last_event_and_resets() {
    let mut s = SseParser::default();
    assert!(s.push(b"id: 1\nevent: e\ndata: x\ndata: y").is_empty());
    assert_eq!(
        s.finish(),
        Some(SseEvent {
            event: Some("e".into()),
            data: "x\ny".into(),
            id: Some("1".into())
        })
    );
    assert_eq!(s.last_event_id(), None);
    assert!(s.push(b"event: only a name").is_empty());
    assert_eq!(s.finish(), None);
    // After finish the reader takes a new stream, byte order mark and all.
    assert_eq!(
        s.push("\u{feff}data: new\n\n".as_bytes()),
        vec![Ok(event(None, "new"))]
    );
}

#[test]
fn the_limit_counts_what_one_event_holds() {
    // Ten bytes: the line `data: 0123` (10) fits; its data (4) and the next line (11) do not.
    let mut s = SseParser::with_max_event_bytes(10);
    let got = s.push(b"data: 0123\n\ndata: 0123\ndata: 45\n\ndata: ok\n\n");
    assert_eq!(
        got,
        vec![
            Ok(event(None, "0123")),
            Err(SseError::EventTooLarge { limit: 10 }),
            Ok(event(None, "ok")),
        ]
    );
    // A long comment is held while its line lasts, so it counts too; then it is gone.
    let mut s = SseParser::with_max_event_bytes(10);
    let got = s.push(b": a long comment\ndata: x\n\n: short\ndata: y\n\n");
    assert_eq!(
        got,
        vec![
            Err(SseError::EventTooLarge { limit: 10 }),
            Ok(event(None, "y")),
        ]
    );
    // An oversized last event is not dispatched by finish.
    assert!(!s.push(b"data: 0123456789").is_empty());
    assert_eq!(s.finish(), None);
    assert_eq!(
        SseError::EventTooLarge { limit: 10 }.to_string(),
        "a server-sent event outgrew 10 bytes: skipped to its end"
    );
}

#[test]
fn invalid_utf8_counts_as_the_bytes_it_came_as() {
    // Found by the `sse` fuzz target: four invalid bytes decode to twelve. The limit counts the
    // stream's bytes, so the event fits (its line is 10 bytes) and a whole body loses nothing.
    let stream = b"data: \xFF\xFF\xFF\xFF\n\n";
    let mut s = SseParser::with_max_event_bytes(10);
    assert_eq!(s.push(stream), vec![Ok(event(None, &"\u{FFFD}".repeat(4)))]);
    let body = b"event: \xC3\nid: \xFF\ndata: \xC3\xA9\xE9";
    assert_eq!(
        parse_body(body),
        vec![SseEvent {
            event: Some("\u{FFFD}".into()),
            data: "\u{e9}\u{FFFD}".into(),
            id: Some("\u{FFFD}".into()),
        }]
    );
}

#[test]
fn a_whole_body_never_exceeds_its_own_length() {
    let body = format!("data: {}\n\n", "x".repeat(DEFAULT_MAX_EVENT_BYTES + 1));
    let events = parse_body(body.as_bytes());
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data.len(), DEFAULT_MAX_EVENT_BYTES + 1);
}

// ---- Chunking does not matter --------------------------------------------------------------------

/// A line of an event stream, drawn from every kind the rules know (and a few they ignore).
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z{}\":, ]{0,12}".prop_map(|v| format!("data: {v}")),
        "[a-z]{0,6}".prop_map(|v| format!("data:{v}")),
        Just("data".to_owned()),
        Just("data: é😀\u{feff}".to_owned()),
        "[a-z_.]{0,10}".prop_map(|v| format!("event: {v}")),
        "[0-9a-z]{0,4}".prop_map(|v| format!("id: {v}")),
        "[0-9s]{0,5}".prop_map(|v| format!("retry: {v}")),
        "[ a-z]{0,8}".prop_map(|v| format!(":{v}")),
        "[a-z]{1,5}".prop_map(|v| format!("{v}: x")),
        Just(String::new()),
    ]
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        prop::collection::vec(
            (line(), prop_oneof![Just("\n"), Just("\r"), Just("\r\n")]),
            0..24,
        ),
    )
        .prop_map(|(bom, lines)| {
            let mut s = if bom {
                "\u{feff}".to_owned()
            } else {
                String::new()
            };
            for (line, end) in lines {
                s.push_str(&line);
                s.push_str(end);
            }
            s.into_bytes()
        })
}

/// `bytes` cut at `cuts` (positions taken modulo its length + 1, in any order).
fn chunked(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    at.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for cut in at.into_iter().chain([bytes.len()]) {
        chunks.push(bytes[from..cut].to_vec());
        from = cut;
    }
    chunks
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_reads_as_the_whole_stream(
        bytes in stream(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        limit in prop_oneof![Just(DEFAULT_MAX_EVENT_BYTES), 1usize..40],
    ) {
        let whole = read_chunks(&mut SseParser::with_max_event_bytes(limit), [bytes.as_slice()]);
        let chunks = chunked(&bytes, &cuts);
        let parts = read_chunks(
            &mut SseParser::with_max_event_bytes(limit),
            chunks.iter().map(Vec::as_slice),
        );
        prop_assert_eq!(&parts, &whole);
        // One byte at a time, the finest chunking.
        let bytewise = read_chunks(
            &mut SseParser::with_max_event_bytes(limit),
            bytes.chunks(1),
        );
        prop_assert_eq!(&bytewise, &whole);
        if limit == DEFAULT_MAX_EVENT_BYTES {
            let events: Vec<SseEvent> = whole.into_iter().map(Result::unwrap).collect();
            prop_assert_eq!(parse_body(&bytes), events);
        }
    }

    #[test]
    fn any_bytes_any_chunking_same_events(
        bytes in prop::collection::vec(
            prop_oneof![
                prop::sample::select(vec![&b"\r"[..], b"\n", b":", b" ", b"\xEF\xBB\xBF", b"\xC3",
                                          b"\xA9", b"data", b"event", b"id", b"retry", b"0"])
                    .prop_map(<[u8]>::to_vec),
                any::<u8>().prop_map(|b| vec![b]),
            ],
            0..80,
        ).prop_map(|atoms| atoms.concat()),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
        limit in 1usize..64,
    ) {
        let whole = read_chunks(&mut SseParser::with_max_event_bytes(limit), [bytes.as_slice()]);
        let chunks = chunked(&bytes, &cuts);
        let parts = read_chunks(
            &mut SseParser::with_max_event_bytes(limit),
            chunks.iter().map(Vec::as_slice),
        );
        prop_assert_eq!(parts, whole);
    }
}
