//! The store's own connection-string options, taken out of the URL before the rest goes to
//! `postgres::Config` (which refuses an option it does not know, and knows only `disable`,
//! `prefer` and `require` for `sslmode`):
//!
//! - `sslmode`: `disable`, `prefer` (the default, as in libpq), `require`, `verify-ca`,
//!   `verify-full`, spelt and meant as libpq does (see [`super::tls`]);
//! - `sslrootcert`: a PEM file of the certificate authorities to trust, or `system` for the
//!   built-in roots;
//! - `pool_max_size`: how many connections the store opens at most (default
//!   [`DEFAULT_POOL_MAX_SIZE`]).
//!
//! Both spellings of a connection string are read: the URL (`postgres://...?sslmode=require`,
//! values percent-encoded) and libpq's `key=value` list (`host=db sslmode=require`, values quoted
//! with `'...'` when they hold spaces). When an option is given twice the last one counts, as in
//! libpq. Errors name the option and its value, never the rest of the string (it may hold a
//! password).

use super::tls::{RootCerts, SslMode};
use crate::store::StoreError;
use percent_encoding::percent_decode_str;
use std::path::PathBuf;
use std::str::FromStr;

/// Connections the pool opens at most when the URL does not say (`pool_max_size`). The store's
/// calls are short (one transaction each), so a handful serves a busy proxy; eight also keeps a
/// dozen replicas under PostgreSQL's default `max_connections` of 100.
pub const DEFAULT_POOL_MAX_SIZE: usize = 8;

/// The options this module takes out; every other one goes to `postgres::Config`.
const OURS: [&str; 3] = ["sslmode", "sslrootcert", "pool_max_size"];

/// What a connection string asks for.
pub(super) struct Options {
    /// Everything `postgres::Config` reads (its `ssl_mode` set from [`Options::sslmode`]).
    pub config: postgres::Config,
    /// How TLS is used.
    pub sslmode: SslMode,
    /// The certificate authorities `sslrootcert` names, if any.
    pub root_certs: Option<RootCerts>,
    /// The most connections the pool opens.
    pub pool_max_size: usize,
}

fn bad(message: String) -> StoreError {
    StoreError::Backend(format!("postgres: {message}"))
}

/// Reads a connection string (URL or `key=value` list).
pub(super) fn parse(url: &str) -> Result<Options, StoreError> {
    let (rest, ours) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        split_url(url)?
    } else {
        split_keywords(url)
    };
    let mut config = postgres::Config::from_str(&rest)
        .map_err(|e| bad(format!("bad connection string: {}", super::describe(&e))))?;
    let mut options = Options {
        config: postgres::Config::new(),
        sslmode: SslMode::Prefer,
        root_certs: None,
        pool_max_size: DEFAULT_POOL_MAX_SIZE,
    };
    for (key, value) in ours {
        match key.as_str() {
            "sslmode" => options.sslmode = SslMode::parse(&value)?,
            // Empty is libpq's "not set".
            "sslrootcert" if value.is_empty() => options.root_certs = None,
            "sslrootcert" if value == "system" => options.root_certs = Some(RootCerts::System),
            "sslrootcert" => options.root_certs = Some(RootCerts::File(PathBuf::from(value))),
            _ => {
                options.pool_max_size =
                    value.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                        bad(format!(
                        "pool_max_size `{value}`: expected a whole number of connections, 1 or more"
                    ))
                    })?;
            }
        }
    }
    config.ssl_mode(options.sslmode.negotiation());
    options.config = config;
    Ok(options)
}

/// A URL without our options, and our options (decoded). The query starts at the first `?` after
/// the credentials, which the postgres crate reads up to the first `@` (a password may hold a
/// `?`); its parameters are `key=value` separated by `&`.
fn split_url(url: &str) -> Result<(String, Vec<(String, String)>), StoreError> {
    let creds_end = url.find('@').map_or(0, |i| i + 1);
    let Some(q) = url[creds_end..].find('?').map(|i| creds_end + i) else {
        return Ok((url.to_owned(), Vec::new()));
    };
    let (head, query) = (&url[..q], &url[q + 1..]);
    let mut kept = Vec::new();
    let mut ours = Vec::new();
    for param in query.split('&') {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        let key = percent_decode_str(key).decode_utf8_lossy();
        if !OURS.contains(&key.as_ref()) {
            kept.push(param);
            continue;
        }
        let value = percent_decode_str(value)
            .decode_utf8()
            .map_err(|_| bad(format!("{key}: the value is not UTF-8 once decoded")))?;
        ours.push((key.into_owned(), value.into_owned()));
    }
    let rest = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    Ok((rest, ours))
}

/// A `key=value` list without our options, and our options (unquoted). A list that does not
/// parse is handed on whole, for the postgres crate to report.
fn split_keywords(s: &str) -> (String, Vec<(String, String)>) {
    let Some(params) = keyword_params(s) else {
        return (s.to_owned(), Vec::new());
    };
    let mut kept = Vec::new();
    let mut ours = Vec::new();
    for p in params {
        if OURS.contains(&p.key) {
            ours.push((p.key.to_owned(), p.value));
        } else {
            kept.push(p.text);
        }
    }
    (kept.join(" "), ours)
}

/// One `key = value` of a `key=value` list: the key, the value unquoted, and the whole text.
struct KeywordParam<'a> {
    key: &'a str,
    value: String,
    text: &'a str,
}

/// The parameters of a `key=value` list, read as libpq (and the postgres crate) do: whitespace
/// between parameters and around `=`, a value either a run of non-space characters or quoted in
/// `'...'`, a backslash escaping the next character in both. `None` when it does not parse.
fn keyword_params(s: &str) -> Option<Vec<KeywordParam<'_>>> {
    let mut out = Vec::new();
    let mut it = s.char_indices().peekable();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while it.next_if(|&(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_ws(&mut it);
        let Some(&(start, _)) = it.peek() else {
            return Some(out);
        };
        let mut key_end = start;
        while let Some((i, c)) = it.next_if(|&(_, c)| !c.is_whitespace() && c != '=') {
            key_end = i + c.len_utf8();
        }
        if key_end == start {
            return None;
        }
        skip_ws(&mut it);
        it.next_if(|&(_, c)| c == '=')?;
        skip_ws(&mut it);
        let quoted = it.next_if(|&(_, c)| c == '\'').is_some();
        let mut value = String::new();
        let mut end = None;
        while let Some(&(i, c)) = it.peek() {
            if (quoted && c == '\'') || (!quoted && c.is_whitespace()) {
                break;
            }
            it.next();
            end = Some(i + c.len_utf8());
            if c == '\\' {
                if let Some((j, escaped)) = it.next() {
                    value.push(escaped);
                    end = Some(j + escaped.len_utf8());
                }
            } else {
                value.push(c);
            }
        }
        if quoted {
            let (i, _) = it.next_if(|&(_, c)| c == '\'')?;
            end = Some(i + 1);
        } else if value.is_empty() {
            return None;
        }
        out.push(KeywordParam {
            key: &s[start..key_end],
            value,
            text: &s[start..end?],
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn ours(url: &str) -> (String, Vec<(String, String)>) {
        if url.starts_with("postgres") {
            split_url(url).unwrap()
        } else {
            split_keywords(url)
        }
    }

    #[test]
    fn our_options_leave_a_url_and_the_rest_stays_as_written() {
        let (rest, taken) = ours(
            "postgres://u:p%3Fw@db:5432/app?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca%20file.pem&pool_max_size=3",
        );
        assert_eq!(rest, "postgres://u:p%3Fw@db:5432/app?application_name=x");
        assert_eq!(
            taken,
            [
                ("sslmode".to_owned(), "verify-full".to_owned()),
                ("sslrootcert".to_owned(), "/tmp/ca file.pem".to_owned()),
                ("pool_max_size".to_owned(), "3".to_owned()),
            ]
        );
        let (rest, taken) = ours("postgresql://db/app?sslmode=require");
        assert_eq!((rest.as_str(), taken.len()), ("postgresql://db/app", 1));
        // A `?` in the password is not the query.
        let (rest, taken) = ours("postgres://u:a?b@db/app");
        assert_eq!((rest.as_str(), taken.len()), ("postgres://u:a?b@db/app", 0));
    }

    #[test]
    fn our_options_leave_a_keyword_list() {
        let (rest, taken) = ours(
            "host=db  sslmode = verify-ca password='a b\\'c' sslrootcert='/x/my ca.pem' user=u",
        );
        assert_eq!(rest, "host=db password='a b\\'c' user=u");
        assert_eq!(
            taken,
            [
                ("sslmode".to_owned(), "verify-ca".to_owned()),
                ("sslrootcert".to_owned(), "/x/my ca.pem".to_owned()),
            ]
        );
        // What does not parse is handed on whole.
        assert_eq!(ours("host=db sslmode=").0, "host=db sslmode=");
    }

    #[test]
    fn options_are_read_and_bad_values_named_without_the_rest() {
        let o = parse("postgres://u:secret@db/app?sslmode=verify-full&pool_max_size=2").unwrap();
        assert_eq!(o.sslmode, SslMode::VerifyFull);
        assert_eq!(o.pool_max_size, 2);
        assert_eq!(o.config.get_ssl_mode(), postgres::config::SslMode::Require);
        let o = parse("host=db user=u").unwrap();
        assert_eq!(
            (o.sslmode, o.pool_max_size),
            (SslMode::Prefer, DEFAULT_POOL_MAX_SIZE)
        );
        assert!(matches!(
            parse("host=db sslrootcert=system").unwrap().root_certs,
            Some(RootCerts::System)
        ));
        for (url, wanted) in [
            (
                "postgres://u:secret@db/app?sslmode=allow",
                "sslmode `allow`",
            ),
            (
                "postgres://u:secret@db/app?pool_max_size=0",
                "pool_max_size `0`",
            ),
            (
                "host=db password=secret pool_max_size=many",
                "pool_max_size `many`",
            ),
            (
                "postgres://u:secret@db/app?nonsense=1",
                "unknown option `nonsense`",
            ),
        ] {
            match parse(url) {
                Err(StoreError::Backend(m)) => {
                    assert!(m.contains(wanted), "{url}: {m}");
                    assert!(!m.contains("secret"), "{url}: {m}");
                }
                Err(e) => panic!("{url}: {e}"),
                Ok(_) => panic!("{url}: accepted"),
            }
        }
    }
}
