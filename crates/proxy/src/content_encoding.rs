//! Request bodies sent with `Content-Encoding`. A compacting route reads the body's JSON, so the
//! body is decoded first: gzip, deflate (zlib, as HTTP defines it), br and zstd, a list undone
//! last coding first (it names them in the order they were applied), `identity` skipped. The
//! decoded size is bounded by the proxy's body limit: decoding stops one byte past it, so a small
//! body that would inflate to gigabytes costs the limit, never more. A request forwarded untouched
//! is not decoded: it keeps its bytes and its header.

use crate::reply::ErrorKind;
use bytes::Bytes;
use hyper::header::{HeaderMap, CONTENT_ENCODING};
use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::StreamingDecoder;
use std::io::Read;

/// Largest zstd window accepted: RFC 9659 (zstd in HTTP) has encoders keep to 8 MB, so that a
/// decoder never needs more memory than that for one; a frame that asks for more is refused.
const MAX_ZSTD_WINDOW: u64 = 8 * 1024 * 1024;

/// The brotli decoder's input buffer: the size its own examples use.
const BROTLI_BUFFER: usize = 4096;

/// Why a request body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    /// It decodes to more than the limit.
    #[error("the request body decodes to more than the proxy's limit of {0} bytes")]
    TooLarge(usize),
    /// A coding the proxy does not decode.
    #[error(
        "the request body's Content-Encoding {0:?} is not supported: the proxy decodes gzip, \
         deflate, br and zstd"
    )]
    Unsupported(String),
    /// The bytes are not what the coding says.
    #[error("the request body is not valid {coding} data: {reason}")]
    Corrupt {
        /// The coding.
        coding: &'static str,
        /// The decoder's words.
        reason: String,
    },
}

impl DecodeError {
    /// What the client is told: 413, 415 or 400.
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            DecodeError::TooLarge(_) => ErrorKind::TooLarge,
            DecodeError::Unsupported(_) => ErrorKind::UnsupportedEncoding,
            DecodeError::Corrupt { .. } => ErrorKind::InvalidRequest,
        }
    }
}

/// One content coding the proxy decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Gzip,
    Deflate,
    Brotli,
    Zstd,
}

impl Coding {
    /// The coding a `Content-Encoding` token names; `None` for `identity` (no coding).
    fn parse(token: &str) -> Result<Option<Coding>, DecodeError> {
        let coding = match token.to_ascii_lowercase().as_str() {
            "identity" => return Ok(None),
            // RFC 9110 section 8.4.1.3: a recipient should take x-gzip as gzip.
            "gzip" | "x-gzip" => Coding::Gzip,
            "deflate" => Coding::Deflate,
            "br" => Coding::Brotli,
            "zstd" => Coding::Zstd,
            _ => return Err(DecodeError::Unsupported(token.to_owned())),
        };
        Ok(Some(coding))
    }

    fn name(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
        }
    }

    /// `input` decoded, at most `limit` bytes of it.
    fn decode(self, input: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        match self {
            // Several gzip members one after another are one body (RFC 1952).
            Coding::Gzip => self.read(flate2::read::MultiGzDecoder::new(input), limit, &mut out)?,
            Coding::Deflate => self.read(flate2::read::ZlibDecoder::new(input), limit, &mut out)?,
            Coding::Brotli => self.read(
                brotli_decompressor::Decompressor::new(input, BROTLI_BUFFER),
                limit,
                &mut out,
            )?,
            Coding::Zstd => self.zstd_frames(input, limit, &mut out)?,
        }
        Ok(out)
    }

    /// Appends what `reader` yields to `out`, failing once `out` passes `limit` (nothing more is
    /// decoded then).
    fn read(self, reader: impl Read, limit: usize, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let room = limit.saturating_sub(out.len()) as u64;
        reader
            .take(room + 1)
            .read_to_end(out)
            .map_err(|e| self.corrupt(&e))?;
        if out.len() > limit {
            return Err(DecodeError::TooLarge(limit));
        }
        Ok(())
    }

    /// Every zstd frame of `input` in turn (a body may hold several; skippable frames are
    /// skipped).
    fn zstd_frames(
        self,
        mut input: &[u8],
        limit: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DecodeError> {
        while !input.is_empty() {
            match StreamingDecoder::new_with_max_window_size(&mut input, MAX_ZSTD_WINDOW) {
                Ok(frame) => self.read(frame, limit, out)?,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => input = input.get(length as usize..).unwrap_or_default(),
                Err(e) => return Err(self.corrupt(&e)),
            }
        }
        Ok(())
    }

    fn corrupt(self, e: &dyn std::error::Error) -> DecodeError {
        DecodeError::Corrupt {
            coding: self.name(),
            reason: e.to_string(),
        }
    }
}

/// The codings `Content-Encoding` names, in the order they were applied (every header line, each
/// a comma list).
fn codings(headers: &HeaderMap) -> Result<Vec<Coding>, DecodeError> {
    let mut codings = Vec::new();
    for value in headers.get_all(CONTENT_ENCODING) {
        let text = value.to_str().map_err(|_| {
            DecodeError::Unsupported(String::from_utf8_lossy(value.as_bytes()).into())
        })?;
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            codings.extend(Coding::parse(token)?);
        }
    }
    Ok(codings)
}

/// A request body on a compacting route: as the client sent it, and decoded.
pub(crate) struct RequestBody {
    /// The client's bytes (forwarded, with their `Content-Encoding`, by a pass-through).
    pub sent: Bytes,
    /// The JSON: `sent` decoded, or `sent` itself when it names no coding.
    pub plain: Bytes,
}

/// `sent` and its decoding as its `Content-Encoding` says, at most `limit` bytes.
pub(crate) fn decode(
    headers: &HeaderMap,
    sent: Bytes,
    limit: usize,
) -> Result<RequestBody, DecodeError> {
    let mut decoded: Option<Vec<u8>> = None;
    for coding in codings(headers)?.into_iter().rev() {
        let input = decoded.as_deref().unwrap_or(&sent);
        decoded = Some(coding.decode(input, limit)?);
    }
    let plain = decoded.map_or_else(|| sent.clone(), Bytes::from);
    Ok(RequestBody { sent, plain })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_ENCODING, value.parse().unwrap());
        h
    }

    #[test]
    fn no_coding_is_the_body_itself() {
        let body = Bytes::from_static(b"{}");
        let read = decode(&HeaderMap::new(), body.clone(), 10).unwrap();
        assert_eq!(read.plain.as_ptr(), body.as_ptr());
        assert_eq!(
            decode(&headers("identity"), body.clone(), 10)
                .unwrap()
                .plain,
            body
        );
    }

    #[test]
    fn a_list_is_undone_last_coding_first() {
        let data = b"{\"model\": \"m\"}".repeat(20);
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&gzip(&data)).unwrap();
        let body = Bytes::from(zlib.finish().unwrap());
        let read = decode(&headers("GZIP, identity,deflate"), body.clone(), 1000).unwrap();
        assert_eq!(&read.plain[..], &data[..]);
        assert_eq!(read.sent, body);
        // The other order is not what was sent.
        assert!(matches!(
            decode(&headers("deflate, gzip"), body, 1000),
            Err(DecodeError::Corrupt { coding: "gzip", .. })
        ));
    }

    #[test]
    fn the_limit_is_on_the_decoded_size() {
        let data = vec![b' '; 10_000];
        let body = Bytes::from(gzip(&data));
        let read = decode(&headers("gzip"), body.clone(), 10_000).unwrap();
        assert_eq!(read.plain.len(), 10_000);
        assert!(matches!(
            decode(&headers("gzip"), body, 9_999),
            Err(DecodeError::TooLarge(9_999))
        ));
    }

    #[test]
    fn zstd_frames_one_after_another() {
        let mut body = ruzstd::encoding::compress_to_vec(
            &b"{\"a\":"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        // A skippable frame between the two.
        body.extend(0x184D_2A50_u32.to_le_bytes());
        body.extend(3_u32.to_le_bytes());
        body.extend(b"xyz");
        body.extend(ruzstd::encoding::compress_to_vec(
            &b"1}"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        ));
        let read = decode(&headers("zstd"), Bytes::from(body), 100).unwrap();
        assert_eq!(&read.plain[..], b"{\"a\":1}");
    }

    #[test]
    fn unknown_and_broken_codings_are_refused() {
        let body = Bytes::from_static(b"{}");
        let Err(e) = decode(&headers("gzip, compress"), body.clone(), 10) else {
            panic!("compress decoded")
        };
        assert_eq!(e.kind(), ErrorKind::UnsupportedEncoding);
        assert!(e.to_string().contains("\"compress\""), "{e}");
        for coding in ["gzip", "deflate", "br", "zstd"] {
            let Err(e) = decode(&headers(coding), body.clone(), 10) else {
                panic!("{coding} decoded")
            };
            assert_eq!(e.kind(), ErrorKind::InvalidRequest, "{coding}: {e}");
        }
    }
}
