//! A minimal HTTP/1.1 client over `TcpStream` for the scale-out test: one request per connection
//! (`Connection: close`), the whole response read, chunked bodies decoded. A response cut short
//! (the replica killed mid-reply) is an error, as an SDK sees a broken connection.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Longest wait for a response (a turn that compacts in a debug build takes well under this).
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// One response.
pub struct Response {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `POST path` with a JSON body and `headers`.
pub fn post(addr: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> io::Result<Response> {
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    exchange(addr, head.as_bytes(), body)
}

/// `GET path`.
pub fn get(addr: &str, path: &str) -> io::Result<Response> {
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    exchange(addr, head.as_bytes(), &[])
}

fn exchange(addr: &str, head: &[u8], body: &[u8]) -> io::Result<Response> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.write_all(head)?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse(&raw)
}

fn broken(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, what.to_owned())
}

fn parse(raw: &[u8]) -> io::Result<Response> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| broken("the connection closed before the response head"))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| broken("no status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let find = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let body = if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(rest)?
    } else if let Some(len) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
        if rest.len() < len {
            return Err(broken("the body is shorter than its content-length"));
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// The body of a chunked response; an error when the closing chunk never came.
fn dechunk(mut rest: &[u8]) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| broken("a chunked body cut short"))?;
        let size_text = String::from_utf8_lossy(&rest[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| broken("a bad chunk size"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err(broken("a chunked body cut short"));
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}
