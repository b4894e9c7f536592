//! Secret redaction: finds credentials in text (API keys and tokens of the common providers, cloud
//! keys, private key blocks, passwords in URLs and in `key=value` form, bearer headers, JWTs, the
//! values of secret-named variables in `.env` files, shell exports and config files...) and
//! replaces each with a placeholder that names its kind and a short fingerprint,
//! `[REDACTED:aws_access_key:3f9a1c]`.
//!
//! The fingerprint is a 24-bit hash of the secret salted with a caller-chosen string (the session
//! id): the same secret gets the same placeholder everywhere in a session and after any restart,
//! without the redactor keeping the secret anywhere, and two sessions do not share placeholders.
//! Twenty-four bits tell the secrets of one session apart but say nothing useful about a secret.
//!
//! The session runtime applies a [`Redactor`] to every record before it is stored, archived or
//! handed to an exporter. A [`Redactor`] is built once (its patterns compile in about a
//! millisecond) and shared; scanning text that holds no secret costs one pass of a combined
//! automaton over it.
//!
//! ```
//! use compact_core::redact::Redactor;
//!
//! let redactor = Redactor::new();
//! let text = "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE and call it";
//! let out = redactor.redact("session-1", text);
//! assert!(!out.contains("AKIAIOSFODNN7EXAMPLE"));
//! assert!(out.contains("[REDACTED:aws_access_key:"));
//! // The same secret, the same placeholder.
//! assert_eq!(out, redactor.redact("session-1", text));
//! ```

use crate::model::{Arguments, Item, ItemBody, MediaSource, Part, PartKind};
use regex::{Regex, RegexSet};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// Shortest text redacted.
const MIN_SECRET: usize = 6;

/// Start of every placeholder (text starting with it is never redacted again).
pub const PLACEHOLDER_PREFIX: &str = "[REDACTED:";

/// A built-in detector: its kind, its pattern, and where the secret is (0: the whole match; 1: the
/// first capture group that took part in the match).
struct Builtin {
    kind: &'static str,
    pattern: &'static str,
    group: usize,
}

/// The built-in detectors. Order matters only for overlapping matches of equal start and length
/// (the first listed wins): specific kinds come before generic ones.
const BUILTINS: &[Builtin] = &[
    Builtin {
        kind: "private_key",
        // The header, the base64 body (with real or JSON-escaped line breaks), and the footer.
        pattern: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=:,\s]|\\[nr])*(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?",
        group: 0,
    },
    Builtin {
        kind: "gcp_private_key_id",
        pattern: r#""private_key_id"\s*:\s*"([a-f0-9]{40})""#,
        group: 1,
    },
    Builtin {
        kind: "anthropic_key",
        pattern: r"\bsk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{20,}",
        group: 0,
    },
    Builtin {
        kind: "openai_key",
        pattern: r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
        group: 0,
    },
    Builtin {
        kind: "aws_access_key",
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
        group: 0,
    },
    Builtin {
        kind: "aws_secret_key",
        pattern: r#"(?i)aws.{0,24}?(?:secret|private)[_\- ]?(?:access)?[_\- ]?key\W{0,4}?["'\s:=]+\s*["']?([A-Za-z0-9/+]{40})\b"#,
        group: 1,
    },
    Builtin {
        kind: "google_api_key",
        pattern: r"\bAIza[0-9A-Za-z_\-]{35}\b",
        group: 0,
    },
    Builtin {
        kind: "azure_storage_key",
        pattern: r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)",
        group: 1,
    },
    Builtin {
        kind: "azure_client_secret",
        pattern: r"\b[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}\b",
        group: 0,
    },
    Builtin {
        kind: "github_token",
        pattern: r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b",
        group: 0,
    },
    Builtin {
        kind: "github_fine_grained_token",
        pattern: r"\bgithub_pat_[A-Za-z0-9_]{60,255}\b",
        group: 0,
    },
    Builtin {
        kind: "gitlab_token",
        pattern: r"\bgl(?:pat|dt|ptt|rt|oas|cbt|imt|agent)-[A-Za-z0-9_\-]{20,}\b",
        group: 0,
    },
    Builtin {
        kind: "slack_token",
        pattern: r"\bxox[abposre]-[A-Za-z0-9\-]{10,}\b",
        group: 0,
    },
    Builtin {
        kind: "slack_webhook",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{20,}",
        group: 0,
    },
    Builtin {
        kind: "stripe_key",
        pattern: r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
        group: 0,
    },
    Builtin {
        kind: "twilio_key",
        pattern: r"\bSK[0-9a-f]{32}\b",
        group: 0,
    },
    Builtin {
        kind: "sendgrid_key",
        pattern: r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b",
        group: 0,
    },
    Builtin {
        kind: "npm_token",
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
        group: 0,
    },
    Builtin {
        kind: "pypi_token",
        pattern: r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
        group: 0,
    },
    Builtin {
        kind: "huggingface_token",
        pattern: r"\bhf_[A-Za-z0-9]{34,}\b",
        group: 0,
    },
    Builtin {
        kind: "jwt",
        pattern: r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        group: 0,
    },
    Builtin {
        kind: "bearer_token",
        pattern: r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{16,}=*)",
        group: 1,
    },
    Builtin {
        kind: "database_url",
        pattern: r"(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql|sqlserver|clickhouse)://([^\s:/@'\x22]+:[^\s@/'\x22]+)@",
        group: 1,
    },
    Builtin {
        kind: "url_password",
        pattern: r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@'\x22]+:([^\s@/'\x22]{3,})@",
        group: 1,
    },
    // `user:password@host` without a scheme (a URL quoted in part, a path list).
    Builtin {
        kind: "url_password",
        pattern: r"(?:^|[^A-Za-z0-9._%+\-:/])[A-Za-z0-9._%+\-]{1,64}:([^\s:@/'\x22]{6,})@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*(?::[0-9]{1,5})?",
        group: 1,
    },
    // A literal after a credential-like name: quoted, or unquoted with a digit or a symbol in it
    // (so that `api_key = config.key` or `password: String` in code is left alone); references,
    // fill-ins and paths are left alone as for secret assignments (`PWD=/home/dev`).
    Builtin {
        kind: PASSWORD_ASSIGNMENT,
        pattern: r#"(?i)\b(?:password|passwd|pwd|passphrase|secret|secret[_\-]?key|api[_\-]?key|apikey|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|client[_\-]?secret|private[_\-]?key)\b["']?\s*[:=]\s*(?:"([^"\s]{6,})"|'([^'\s]{6,})'|([^\s"'`,;{}()\[\]<>]*[0-9!@#$%^&*+/~\-][^\s"'`,;{}()\[\]<>]*))"#,
        group: 1,
    },
    // The value of a variable or key whose name ends in a secret's name (`DB_PASSWORD=…`, `export
    // GITHUB_TOKEN=…`, `"clientSecret": "…"`, `stripe_api_key = "…"`, `X-Auth-Token: …`): `.env`
    // files, shell exports, YAML, JSON, TOML and INI. Only the value is redacted; what is a
    // reference, a placeholder or code rather than a value is left alone ([`is_assigned_value`]).
    Builtin {
        kind: SECRET_ASSIGNMENT,
        pattern: r#"(?i)(?:^|[^a-z0-9_.\-/])[a-z0-9_.\-]*?(?:passw(?:or)?d|[_.\-]pwd|secret|token|api[_\-]?key|(?:secret|private|access|encryption|master|client|app|auth|session|service|account|license|jwt|hmac)[_\-]?key|signing[_\-]key|credentials?|auth)\\?["']?[ \t]*(?::=|[:=])[ \t]*(?:\\?"([^"\s\\]+)\\?"|'([^'\s]+)'|([^\s"'`,;{}()\[\]<>\\]+))"#,
        group: 1,
    },
];

/// Kinds of the detectors of assignments to a credential's name, whose values are checked
/// ([`is_assigned_value`]).
const PASSWORD_ASSIGNMENT: &str = "password_assignment";
const SECRET_ASSIGNMENT: &str = "secret_assignment";

/// Last words of a value that describes a secret rather than being one (`signed-token`,
/// `my-secret`).
const DESCRIBING_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "key",
    "apikey",
    "credentials",
];

/// Values of a secret-named key that stand for a value without being one (a type, a flag, a mode).
const STAND_IN_VALUES: &[&str] = &[
    "null",
    "none",
    "nil",
    "undefined",
    "true",
    "false",
    "string",
    "required",
    "optional",
    "unset",
    "default",
    "hidden",
    "masked",
    "secret",
    "secrets",
    "password",
    "token",
    "bearer",
    "basic",
    "digest",
    "oauth",
    "oauth2",
    "include",
    "omit",
    "same-origin",
    "placeholder",
];

/// Custom detectors and hooks could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedactError {
    /// A custom pattern does not compile.
    #[error("redaction pattern `{name}` is not a valid regular expression: {message}")]
    BadPattern {
        /// The pattern's name.
        name: String,
        /// Why.
        message: String,
    },
    /// A custom pattern's name is empty or has characters other than letters, digits and `_`.
    #[error("redaction pattern name `{0}` must be letters, digits and `_`")]
    BadName(String),
}

/// A function that finds secrets of its own: byte ranges of `text` and their kinds.
pub type Hook = Arc<dyn Fn(&str) -> Vec<(Range<usize>, String)> + Send + Sync>;

#[derive(Clone)]
struct Detector {
    kind: String,
    regex: Regex,
    group: usize,
    /// Whether a match (its range in the text) is a secret, when the pattern alone cannot say.
    check: Option<fn(&str, &Range<usize>) -> bool>,
}

/// Finds and replaces secrets. See the [module documentation](self).
#[derive(Clone)]
pub struct Redactor {
    set: Arc<RegexSet>,
    detectors: Arc<Vec<Detector>>,
    hooks: Vec<Hook>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("kinds", &self.kinds().collect::<Vec<_>>())
            .field("hooks", &self.hooks.len())
            .finish()
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new()
    }
}

impl Redactor {
    /// A redactor with every built-in detector.
    pub fn new() -> Redactor {
        let detectors: Vec<Detector> = BUILTINS
            .iter()
            .filter_map(|b| {
                // The built-in patterns are constants checked by the tests; one that failed to
                // compile would only be left out.
                Regex::new(b.pattern).ok().map(|regex| Detector {
                    kind: b.kind.to_owned(),
                    regex,
                    group: b.group,
                    check: [PASSWORD_ASSIGNMENT, SECRET_ASSIGNMENT]
                        .contains(&b.kind)
                        .then_some(is_assigned_value as fn(&str, &Range<usize>) -> bool),
                })
            })
            .collect();
        Redactor::from_detectors(detectors, Vec::new())
    }

    fn from_detectors(detectors: Vec<Detector>, hooks: Vec<Hook>) -> Redactor {
        let set = RegexSet::new(detectors.iter().map(|d| d.regex.as_str()))
            .unwrap_or_else(|_| RegexSet::empty());
        Redactor {
            set: Arc::new(set),
            detectors: Arc::new(detectors),
            hooks,
        }
    }

    /// The same redactor with a custom detector: `pattern` (a regular expression; its first
    /// capture group is the secret when it has one, else the whole match) reported as `name`.
    pub fn with_pattern(self, name: &str, pattern: &str) -> Result<Redactor, RedactError> {
        let regex = check_pattern(name, pattern)?;
        let group = usize::from(regex.captures_len() > 1);
        let mut detectors: Vec<Detector> = self.detectors.as_ref().clone();
        detectors.push(Detector {
            kind: name.to_owned(),
            regex,
            group,
            check: None,
        });
        Ok(Redactor::from_detectors(detectors, self.hooks))
    }

    /// The same redactor that also finds `known` secrets (kind, text) wherever they appear, and each
    /// run of at least six letters and digits inside them: text derived from a redacted item (a
    /// list of the names an output mentions, a summary) can carry a secret's value without the
    /// context that gave it away.
    pub fn with_known(&self, known: &[(String, String)]) -> Redactor {
        let mut detectors: Vec<Detector> = self.detectors.as_ref().clone();
        let mut seen = std::collections::HashSet::new();
        for (kind, secret) in known {
            let words = secret
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| w.len() >= MIN_SECRET && w.len() < secret.len());
            for part in std::iter::once(secret.as_str()).chain(words) {
                if part.len() < MIN_SECRET || !seen.insert(part.to_owned()) {
                    continue;
                }
                if let Ok(regex) = Regex::new(&regex::escape(part)) {
                    detectors.push(Detector {
                        kind: kind.clone(),
                        regex,
                        group: 0,
                        check: None,
                    });
                }
            }
        }
        Redactor::from_detectors(detectors, self.hooks.clone())
    }

    /// The secrets an item's texts hold: (kind, secret) pairs, in order of appearance.
    pub fn secrets(&self, item: &Item) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut take = |text: &str| {
            for (range, kind) in self.find(text) {
                out.push((kind.to_owned(), text[range].to_owned()));
            }
        };
        visit_texts(item, true, &mut take);
        out
    }

    /// The same redactor with a function that finds secrets of its own.
    #[must_use]
    pub fn with_hook(mut self, hook: Hook) -> Redactor {
        self.hooks.push(hook);
        self
    }

    /// The kinds of secret this redactor finds with patterns (built-in, then custom).
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.detectors.iter().map(|d| d.kind.as_str())
    }

    /// The secrets in `text`: non-overlapping byte ranges with their kinds, in order.
    pub fn find(&self, text: &str) -> Vec<(Range<usize>, &str)> {
        let mut found: Vec<(Range<usize>, &str)> = Vec::new();
        // Most text holds no secret: one pass that stops at the first match of any pattern says
        // so, far cheaper than the overlapping pass that names every pattern matching (and no
        // pattern's match is shorter than a secret, so shorter text is not searched at all).
        let matching =
            (text.len() >= MIN_SECRET && self.set.is_match(text)).then(|| self.set.matches(text));
        for i in matching.iter().flat_map(|m| m.iter()) {
            let Some(d) = self.detectors.get(i) else {
                continue;
            };
            for caps in d.regex.captures_iter(text) {
                let m = if d.group == 0 {
                    caps.get(0)
                } else {
                    (1..caps.len()).find_map(|g| caps.get(g))
                };
                // Shorter than this, a "secret" is a word of the text, not a credential; and a
                // variable reference or an already masked value holds no secret.
                if let Some(m) = m.filter(|m| {
                    m.len() >= MIN_SECRET
                        && !is_placeholder(m.as_str())
                        && d.check.is_none_or(|check| check(text, &m.range()))
                }) {
                    found.push((m.range(), d.kind.as_str()));
                }
            }
        }
        let mut hooked: Vec<(Range<usize>, String)> = Vec::new();
        for hook in &self.hooks {
            hooked.extend(hook(text).into_iter().filter(|(r, _)| {
                r.start < r.end && text.is_char_boundary(r.start) && text.is_char_boundary(r.end)
            }));
        }
        // Kinds from hooks borrow from the redactor's list when they name a known kind; others
        // are reported as `custom`.
        for (range, kind) in &hooked {
            let kind = self.kinds().find(|k| *k == kind).unwrap_or("custom");
            found.push((range.clone(), kind));
        }
        // Earliest first, longest first at one start; then drop what overlaps a kept range, and
        // what is already a placeholder.
        found.sort_by(|a, b| a.0.start.cmp(&b.0.start).then(b.0.end.cmp(&a.0.end)));
        let mut kept: Vec<(Range<usize>, &str)> = Vec::with_capacity(found.len());
        for (range, kind) in found {
            if kept.last().is_some_and(|(last, _)| range.start < last.end) {
                continue;
            }
            if text[range.start..].starts_with(PLACEHOLDER_PREFIX)
                || inside_placeholder(text, &range)
            {
                continue;
            }
            kept.push((range, kind));
        }
        kept
    }

    /// `text` with every secret replaced by its placeholder (borrowed when there is none).
    pub fn redact<'a>(&self, salt: &str, text: &'a str) -> Cow<'a, str> {
        let found = self.find(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        Cow::Owned(replaced(salt, text, &found))
    }

    /// Redacts `text` in place; returns the number of secrets replaced.
    pub fn redact_string(&self, salt: &str, text: &mut String) -> usize {
        let found = self.find(text);
        if !found.is_empty() {
            *text = replaced(salt, text, &found);
        }
        found.len()
    }

    /// Redacts every string (and every object key's value, not the keys) of a JSON value in place;
    /// returns the number of secrets replaced.
    pub fn redact_value(&self, salt: &str, value: &mut Value) -> usize {
        match value {
            Value::String(s) => self.redact_string(salt, s),
            Value::Array(items) => items.iter_mut().map(|v| self.redact_value(salt, v)).sum(),
            Value::Object(map) => map
                .iter_mut()
                .map(|(_, v)| self.redact_value(salt, v))
                .sum(),
            _ => 0,
        }
    }

    /// Redacts every text an item carries: message and tool-output parts (and their unmodelled
    /// fields), tool-call arguments, reasoning text and summaries, checkpoint text, opaque items,
    /// and the unmodelled fields of its wire message. Signatures and encrypted reasoning are opaque
    /// provider tokens and stay as they are. Returns the number of secrets replaced.
    pub fn redact_item(&self, salt: &str, item: &mut Item) -> usize {
        let mut n = 0;
        if let Some(env) = item.meta.envelope.as_mut() {
            let mut extra = Value::Object(env.extra.clone());
            let found = self.redact_value(salt, &mut extra);
            if found > 0 {
                if let Value::Object(map) = extra {
                    Arc::make_mut(env).extra = map;
                }
                n += found;
            }
        }
        // Look before touching the body: `body_mut` forgets the item's token count and wire
        // fingerprint, which an item without secrets should keep.
        if !self.has_secret(item) {
            return n;
        }
        let parts = |parts: &mut Vec<Part>| -> usize {
            parts.iter_mut().map(|p| self.redact_part(salt, p)).sum()
        };
        n += match item.body_mut() {
            ItemBody::Message(m) => parts(&mut m.parts),
            ItemBody::ToolCall(c) => {
                let args = match &mut c.arguments {
                    Arguments::Json(v) => self.redact_value(salt, v),
                    Arguments::Text(s) => self.redact_string(salt, s),
                };
                args + self.redact_extra(salt, &mut c.extra)
            }
            ItemBody::ToolResult(r) => parts(&mut r.parts) + self.redact_extra(salt, &mut r.extra),
            ItemBody::Reasoning(r) => {
                let text = r.text.as_mut().map_or(0, |t| self.redact_string(salt, t));
                text + r
                    .summary
                    .iter_mut()
                    .map(|s| self.redact_string(salt, s))
                    .sum::<usize>()
            }
            ItemBody::Checkpoint(c) => self.redact_string(salt, &mut c.text),
            ItemBody::Opaque(o) => self.redact_value(salt, &mut o.value),
            // Redacted like signed thinking: the readable summary only; the encrypted payload and
            // the signature are never read.
            ItemBody::ProviderCompaction(p) => {
                let mut value = p.value().clone();
                let n = match value.get_mut("content") {
                    Some(serde_json::Value::String(s)) => self.redact_string(salt, s),
                    _ => 0,
                };
                *p = crate::model::ProviderCompaction::new(p.wire(), value);
                n
            }
        };
        n
    }

    /// True when some text of the item's body holds a secret.
    fn has_secret(&self, item: &Item) -> bool {
        let mut found = false;
        visit_texts(item, false, &mut |t| {
            found = found || !self.find(t).is_empty()
        });
        found
    }

    fn redact_extra(&self, salt: &str, extra: &mut crate::model::Extra) -> usize {
        extra
            .iter_mut()
            .map(|(_, v)| self.redact_value(salt, v))
            .sum()
    }

    fn redact_part(&self, salt: &str, part: &mut Part) -> usize {
        let n = match &mut part.kind {
            PartKind::Text(t) => self.redact_string(salt, t),
            PartKind::Image(m) | PartKind::File(m) | PartKind::Audio(m) => match &mut m.source {
                MediaSource::Url(s) | MediaSource::Text(s) => self.redact_string(salt, s),
                _ => 0,
            },
            PartKind::Opaque(v) => self.redact_value(salt, v),
        };
        n + self.redact_extra(salt, &mut part.extra)
    }
}

/// A custom detector's pattern, compiled, when its name and its regular expression are usable (what
/// [`Redactor::with_pattern`] and a configuration file's check accept).
pub fn check_pattern(name: &str, pattern: &str) -> Result<Regex, RedactError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(RedactError::BadName(name.to_owned()));
    }
    Regex::new(pattern).map_err(|e| RedactError::BadPattern {
        name: name.to_owned(),
        message: e.to_string(),
    })
}

/// `text` with each of the `found` ranges (in order, not overlapping) replaced by its placeholder.
fn replaced(salt: &str, text: &str, found: &[(Range<usize>, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, kind) in found {
        out.push_str(&text[at..range.start]);
        out.push_str(&placeholder(salt, kind, &text[range.clone()]));
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Calls `f` on every text of an item that redaction looks at.
fn visit_texts(item: &Item, with_envelope: bool, f: &mut dyn FnMut(&str)) {
    fn value(v: &Value, f: &mut dyn FnMut(&str)) {
        match v {
            Value::String(s) => f(s),
            Value::Array(items) => items.iter().for_each(|v| value(v, f)),
            Value::Object(map) => map.values().for_each(|v| value(v, f)),
            _ => {}
        }
    }
    fn part(p: &Part, f: &mut dyn FnMut(&str)) {
        match &p.kind {
            PartKind::Text(t) => f(t),
            PartKind::Image(m) | PartKind::File(m) | PartKind::Audio(m) => match &m.source {
                MediaSource::Url(s) | MediaSource::Text(s) => f(s),
                _ => {}
            },
            PartKind::Opaque(v) => value(v, f),
        }
        p.extra.values().for_each(|v| value(v, f));
    }
    if let Some(env) = item.meta.envelope.as_ref().filter(|_| with_envelope) {
        env.extra.values().for_each(|v| value(v, f));
    }
    match item.body() {
        ItemBody::Message(m) => m.parts.iter().for_each(|p| part(p, f)),
        ItemBody::ToolCall(c) => {
            match &c.arguments {
                Arguments::Json(v) => value(v, f),
                Arguments::Text(s) => f(s),
            }
            c.extra.values().for_each(|v| value(v, f));
        }
        ItemBody::ToolResult(r) => {
            r.parts.iter().for_each(|p| part(p, f));
            r.extra.values().for_each(|v| value(v, f));
        }
        ItemBody::Reasoning(r) => {
            if let Some(t) = &r.text {
                f(t);
            }
            r.summary.iter().for_each(|s| f(s));
        }
        ItemBody::Checkpoint(c) => f(&c.text),
        ItemBody::Opaque(o) => value(&o.value, f),
        ItemBody::ProviderCompaction(p) => {
            if let Some(s) = p.summary() {
                f(s);
            }
        }
    }
}

/// True for values that stand for a secret without being one: a variable reference (`${TOKEN}`,
/// `$TOKEN`), a masked or elided value (`********`, `sk-ant-api03-...`), a fill-in
/// (`your-api-key`), or text someone already redacted.
fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.starts_with('$')
        || value.ends_with("...")
        || value.ends_with('…')
        || lower.starts_with("your")
        || value
            .chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '•' | '.' | '<' | '>'))
        || value.to_ascii_uppercase().contains("REDACTED")
}

/// Whether the value at `range` of a secret-named assignment in `text` is a value: not a reference
/// (`${VAR}`, `%VAR%`, `"OPENAI_API_KEY"` naming a variable), a fill-in (`<your-token>`,
/// `[PAD]`, `XXXX-XXXX`), a stand-in word (`null`, `false`, `string`, `include`), a number, a file
/// path (`GOOGLE_APPLICATION_CREDENTIALS=/path/creds.json`), or code: a call (`get_token()`), an
/// attribute (`process.env.API_KEY`, `os.environ`), or a bare word that names a variable
/// (`api_key=api_key`, `password: SecretStr`). A bare word counts only in `.env` / shell form: an
/// upper-case name and `=` with no space around it (`SECRET_KEY=supersecretvalue`).
fn is_assigned_value(text: &str, range: &Range<usize>) -> bool {
    let value = &text[range.clone()];
    let before = &text[..range.start];
    let quoted = before.ends_with(['"', '\'']);
    let lower = value.to_ascii_lowercase();
    let wrapped = |open: char, close: char| value.starts_with(open) && value.ends_with(close);
    if value.contains("${")
        || value.contains("{{")
        || value.contains("$(")
        || wrapped('<', '>')
        || wrapped('[', ']')
        || wrapped('{', '}')
        || wrapped('%', '%')
        || STAND_IN_VALUES.contains(&lower.as_str())
        || value
            .chars()
            .all(|c| matches!(c, 'x' | 'X' | '*' | '•' | '.' | '-' | '_' | '#' | '0'))
        || value.starts_with("~/")
        || value.starts_with("./")
        || value.starts_with("../")
        || (value.starts_with('/')
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')))
    {
        return false;
    }
    // A masked value after a kind's prefix (`ghp_xxxxxxxx`, `gho_*****`), a description of the
    // value (`signed-token`, `my-secret`), a relative path to a file (`logs/app.jsonl`).
    let (head, last) = value.rsplit_once(['_', '-', '.']).unwrap_or(("", value));
    let masked = last.len() >= 3 && last.chars().all(|c| matches!(c, 'x' | 'X' | '*' | '•'));
    let described =
        !head.is_empty() && DESCRIBING_WORDS.contains(&last.to_ascii_lowercase().as_str());
    let file = value.contains('/')
        && value.rsplit_once('.').is_some_and(|(_, ext)| {
            (2..=5).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_lowercase())
        });
    if masked || described || file {
        return false;
    }
    // An upper-case word without digits names a variable (`"api_key": "OPENAI_API_KEY"`).
    let names_a_variable =
        value.chars().all(|c| c.is_ascii_uppercase() || c == '_') && value.len() > 1;
    if names_a_variable {
        return false;
    }
    if quoted {
        return true;
    }
    let after = &text[range.end..];
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let attribute = value.contains('.')
        && value.split('.').all(|p| {
            p.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && p.chars().all(is_word)
        });
    if after.starts_with('(') || attribute || value.chars().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let bare_word = value.chars().all(is_word);
    !bare_word || value.chars().any(|c| c.is_ascii_digit()) || env_style(before)
}

/// True when `before` (the text before an unquoted value) ends in `NAME=` with an upper-case name
/// and no space around `=`: a `.env` line or a shell assignment.
fn env_style(before: &str) -> bool {
    let Some(name_end) = before.strip_suffix('=') else {
        return false;
    };
    let name: String = name_end
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    !name.is_empty()
        && name.chars().any(|c| c.is_ascii_uppercase())
        && !name.chars().any(|c| c.is_ascii_lowercase())
}

/// True when `range` falls inside a placeholder already in `text` (such as its fingerprint).
fn inside_placeholder(text: &str, range: &Range<usize>) -> bool {
    let before = &text[..range.start];
    match before.rfind(PLACEHOLDER_PREFIX) {
        Some(open) => !text[open..range.start].contains(']'),
        None => false,
    }
}

/// Whether a secret someone presented (a bearer token) equals the expected one, compared without
/// stopping at the first difference, so the time taken does not tell how much of it was right (its
/// length is not secret).
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The placeholder of `secret` of `kind` in the session salted by `salt`.
pub fn placeholder(salt: &str, kind: &str, secret: &str) -> String {
    // FNV-1a 64 over salt, a separator no UTF-8 text holds, and the secret.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in salt.bytes().chain([0xff]).chain(secret.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{PLACEHOLDER_PREFIX}{kind}:{:06x}]", h >> 40)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Role, ToolCall, ToolResult};
    use serde_json::json;

    #[test]
    fn same_secret_needs_every_byte_and_the_length() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"xbc", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"", b"abc"));
    }

    /// One planted secret per built-in kind (all fake: right shape, random content).
    pub(crate) fn samples() -> Vec<(&'static str, String)> {
        let b64 = "Zm9vYmFyYmF6cXV4+/1234567890".repeat(4);
        vec![
            ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3+example\nabc\n-----END RSA PRIVATE KEY-----".to_owned()),
            ("gcp_private_key_id", r#"{"type": "service_account", "private_key_id": "0123456789abcdef0123456789abcdef01234567"}"#.to_owned()),
            ("anthropic_key", "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAA".to_owned()),
            ("openai_key", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6h".to_owned()),
            ("aws_access_key", "AKIAQ3EGRIV5EXAMPLE7".to_owned()),
            ("aws_secret_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_owned()),
            ("google_api_key", "AIzaSyD4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9t".to_owned()),
            ("azure_storage_key", format!("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={}==;", &b64[..86])),
            ("azure_client_secret", "abc8Q~Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb".to_owned()),
            ("github_token", "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d".to_owned()),
            ("github_fine_grained_token", format!("github_pat_11AB3DEF0{}", "x7Yz".repeat(18))),
            ("gitlab_token", "glpat-Ab3dEf6hIj9kLm2nOp5q".to_owned()),
            ("slack_token", "xoxb-123456789012-1234567890123-Ab3dEf6hIj9kLm2nOp5qRs8t".to_owned()),
            ("slack_webhook", "https://hooks.slack.com/services/T00000000/B00000000/Ab3dEf6hIj9kLm2nOp5qRs8t".to_owned()),
            ("stripe_key", "sk_live_Ab3dEf6hIj9kLm2nOp5qRs8t".to_owned()),
            ("twilio_key", "SK0123456789abcdef0123456789abcdef".to_owned()),
            ("sendgrid_key", "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".to_owned()),
            ("npm_token", "npm_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d".to_owned()),
            ("pypi_token", format!("pypi-AgEIcHlwaS5vcmc{}", "Ab3dEf6hIj".repeat(6))),
            ("huggingface_token", "hf_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb".to_owned()),
            ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U".to_owned()),
            ("bearer_token", "Authorization: Bearer Ab3dEf6hIj9kLm2nOp5qRs8t".to_owned()),
            ("database_url", "DATABASE_URL=postgres://app:s3cr3tpass@db.internal:5432/app".to_owned()),
            ("url_password", "git clone https://deploy:hunter2hunter@git.example.com/repo.git".to_owned()),
            ("password_assignment", "password=correct-horse-battery".to_owned()),
            ("secret_assignment", "DB_PASSWORD=hunter2-prod-9f8e".to_owned()),
        ]
    }

    /// The part of a sample that is the secret itself.
    fn secret_of(kind: &str, sample: &str) -> String {
        match kind {
            "gcp_private_key_id" => "0123456789abcdef0123456789abcdef01234567".to_owned(),
            "aws_secret_key" => "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_owned(),
            "azure_storage_key" => sample
                .split("AccountKey=")
                .nth(1)
                .unwrap()
                .trim_end_matches(';')
                .to_owned(),
            "bearer_token" => "Ab3dEf6hIj9kLm2nOp5qRs8t".to_owned(),
            "database_url" => "s3cr3tpass".to_owned(),
            "url_password" => "hunter2hunter".to_owned(),
            "password_assignment" => "correct-horse-battery".to_owned(),
            "secret_assignment" => "hunter2-prod-9f8e".to_owned(),
            _ => sample.to_owned(),
        }
    }

    #[test]
    fn every_built_in_pattern_compiles_and_finds_its_kind() {
        let r = Redactor::new();
        assert_eq!(r.kinds().count(), BUILTINS.len());
        assert!(BUILTINS.len() >= 20);
        for (kind, sample) in samples() {
            let text = format!("before {sample} after");
            let found = r.find(&text);
            assert_eq!(found.len(), 1, "{kind}: {found:?}");
            assert_eq!(found[0].1, kind, "{sample}");
            let out = r.redact("s", &text);
            let secret = secret_of(kind, &sample);
            assert!(!out.contains(&secret), "{kind}: {out}");
            assert!(
                out.starts_with("before ") && out.ends_with(" after"),
                "{out}"
            );
            assert!(out.contains(&format!("[REDACTED:{kind}:")), "{out}");
            // Idempotent: a redacted text has nothing left to redact.
            assert_eq!(r.redact("s", &out), out, "{kind}");
        }
    }

    #[test]
    fn a_url_password_is_found_with_or_without_its_scheme() {
        let r = Redactor::new();
        for text in [
            "DATABASE_URL=postgres://app:pwAb12cd34ef56@db:5432/app",
            "Files: app:pwAb12cd34ef56@db:5432/app, src/x.rs",
            "(app:pwAb12cd34ef56@db.internal)",
        ] {
            let out = r.redact("s", text);
            assert!(!out.contains("pwAb12cd34ef56"), "{out}");
            assert!(out.contains("@db"), "{out}");
        }
        // An e-mail address or an scp-style remote is not a password.
        for text in [
            "mail alice@example.com",
            "git@github.com:org/repo.git",
            "time 12:30:45@host",
        ] {
            assert_eq!(r.redact("s", text), text);
        }
    }

    #[test]
    fn placeholders_are_stable_per_secret_and_salt() {
        let r = Redactor::new();
        let a = "token ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d";
        let b = "token ghp_Zb3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d";
        assert_eq!(r.redact("s1", a), r.redact("s1", a));
        assert_ne!(r.redact("s1", a), r.redact("s1", b));
        assert_ne!(r.redact("s1", a), r.redact("s2", a));
        let both = r.redact("s1", &format!("{a} and again {a}")).into_owned();
        let p = placeholder("s1", "github_token", &a[6..]);
        assert_eq!(both.matches(&p).count(), 2, "{both}");
    }

    #[test]
    fn ordinary_text_and_code_are_left_alone() {
        let r = Redactor::new();
        for text in [
            "fn main() { let password_len = 12; }",
            "The skeleton key is in src/keys.rs; see sk-learn docs.",
            "git clone https://github.com/rust-lang/rust.git",
            "postgres://localhost:5432/app",
            "Authorization headers are documented in RFC 6750.",
            "password: (see vault)",
            "let token = get_token(); // api_key = config.key",
            "commit 3f9a1c0b2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a",
            "git clone https://oauth2:${GITLAB_TOKEN}@gitlab.example.com/repo.git",
            "password=********",
            "api_key: \"\u{1b}[1;3mREDACTED\u{1b}[0m\"",
            "export GITHUB_TOKEN=$GH_TOKEN_FROM_VAULT",
            "api_key = \"your-api-key-here\"",
            "ANTHROPIC_API_KEY=sk-ant-api03-...",
            "hash: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(r.redact("s", text), text);
        }
    }

    /// Secret-named variables as agents see them: `.env` files, shell exports, YAML, JSON, TOML and
    /// INI, HTTP headers. The value is redacted, the name kept.
    #[test]
    fn secret_assignments_keep_their_name_and_lose_their_value() {
        let r = Redactor::new();
        for (text, secret) in [
            ("DB_PASSWORD=hunter2-prod-9f8e", "hunter2-prod-9f8e"),
            ("export DB_PASSWORD=hunter2-prod-9f8e", "hunter2-prod-9f8e"),
            ("DB_PASSWORD=\"hunter2 prod\"", ""),
            ("POSTGRES_PASSWORD='Tr0ub4dor&3'", "Tr0ub4dor&3"),
            ("MYSQL_ROOT_PASSWD=changeme", "changeme"),
            ("DB_PWD=s3cr3t-value", "s3cr3t-value"),
            ("SECRET_KEY=supersecretvalue", "supersecretvalue"),
            ("JWT_SECRET=9f8e7d6c5b4a", "9f8e7d6c5b4a"),
            ("JWT_SIGNING_KEY=9f8e7d6c5b4a", "9f8e7d6c5b4a"),
            (
                "export GITHUB_TOKEN=gho_short_but_real1",
                "gho_short_but_real1",
            ),
            ("STRIPE_API_KEY=rk_prod_51Hx", "rk_prod_51Hx"),
            ("AWS_SECRET_ACCESS_KEY=abc/def+ghi123", "abc/def+ghi123"),
            ("APP_KEY=base64:Zm9vYmFyYmF6cXV4", "base64:Zm9vYmFyYmF6cXV4"),
            (
                "GOOGLE_CREDENTIALS=eyJ0eXBlIjoic2Vydmlj",
                "eyJ0eXBlIjoic2Vydmlj",
            ),
            ("NPM_AUTH=dXNlcjpwYXNzd29yZA", "dXNlcjpwYXNzd29yZA"),
            ("  db_password: hunter2-prod-9f8e", "hunter2-prod-9f8e"),
            ("    POSTGRES_PASSWORD: \"example-pw\"", "example-pw"),
            (
                "{\"clientSecret\": \"cs_9f8e7d6c5b4a\", \"id\": 3}",
                "cs_9f8e7d6c5b4a",
            ),
            (
                "{\\\"DB_PASSWORD\\\": \\\"hunter2-prod-9f8e\\\"}",
                "hunter2-prod-9f8e",
            ),
            ("stripe_api_key = \"rk_prod_51Hx\"", "rk_prod_51Hx"),
            ("accessToken: 'at-9f8e7d6c5b4a'", "at-9f8e7d6c5b4a"),
            ("smtp_password = hunter2-prod", "hunter2-prod"),
            ("X-Auth-Token: 9f8e7d6c5b4a3f2e", "9f8e7d6c5b4a3f2e"),
            ("token := \"tok_9f8e7d6c5b4a\"", "tok_9f8e7d6c5b4a"),
        ] {
            let out = r.redact("s", text);
            if secret.is_empty() {
                // A quoted value with a space is not taken (descriptions, prose).
                continue;
            }
            assert!(!out.contains(secret), "{text} -> {out}");
            assert!(out.contains("[REDACTED:"), "{text} -> {out}");
            let name_end = text.find(['=', ':']).unwrap();
            assert!(out.starts_with(&text[..name_end]), "{text} -> {out}");
        }
        // The same secret has the same placeholder whatever the file's syntax, per salt.
        let env = r.redact("s1", "DB_PASSWORD=hunter2-prod-9f8e").into_owned();
        let json = r
            .redact("s1", "{\"DB_PASSWORD\": \"hunter2-prod-9f8e\"}")
            .into_owned();
        let p = placeholder("s1", "secret_assignment", "hunter2-prod-9f8e");
        assert_eq!(env, format!("DB_PASSWORD={p}"));
        assert_eq!(json, format!("{{\"DB_PASSWORD\": \"{p}\"}}"));
        assert_ne!(r.redact("s2", "DB_PASSWORD=hunter2-prod-9f8e"), env);
    }

    /// What looks like a secret assignment but holds no secret: empty values, references,
    /// fill-ins, stand-in words, numbers, paths, and code.
    #[test]
    fn references_placeholders_and_code_are_not_secret_assignments() {
        let r = Redactor::new();
        for text in [
            "DB_PASSWORD=",
            "DB_PASSWORD=\"\"",
            "DB_PASSWORD=${DB_PASSWORD}",
            "export API_TOKEN=$API_TOKEN_FROM_VAULT",
            "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
            "set DB_PASSWORD=%DB_PASSWORD%",
            "api_token = \"<your-token>\"",
            "OPENAI_API_KEY=<your-key-here>",
            "SECRET_KEY=xxxxxxxxxxxx",
            "DB_PASSWORD=********",
            "LICENSE_KEY=XXXX-XXXX-XXXX",
            "\"api_key\": null",
            "\"api_key\": \"OPENAI_API_KEY\"",
            "\"password\": \"string\"",
            "auth_token: None",
            "VERIFY_TOKEN=true",
            "credentials: 'include'",
            "  pad_token: \"[PAD]\"",
            "eos_token = \"<|endoftext|>\"",
            "API_KEY = os.environ[\"API_KEY\"]",
            "api_key = os.environ.get(\"API_KEY\")",
            "const apiKey = process.env.OPENAI_API_KEY;",
            "secret = secrets.token_hex(32)",
            "token = get_token()",
            "token = tokenizer2(text)",
            "client = OpenAI(api_key=api_key)",
            "  db_password: SecretStr",
            "password_len = 12",
            "token_count = 0",
            "max_tokens=4096",
            "TOKENIZERS_PARALLELISM=false",
            "KEY_LENGTH=32",
            "max_token = 100000",
            "GOOGLE_APPLICATION_CREDENTIALS=/home/dev/.config/gcloud/creds.json",
            "SSH_PRIVATE_KEY=~/.ssh/id_ed25519",
            "PWD=/home/dev/project",
            "PWD=/workspace",
            "OLDPWD=/home/dev",
            "if password == \"\": return",
            "export GITHUB_TOKEN=ghp_xxxxxxxxxxxx",
            "  - Token: gho_************************************",
            "{\"user\": {\"id\": \"u-1\"}, \"token\": \"signed-token\"}",
            "Initial HEAD on feature/auth: d5a174d",
            "user.signingkey=8E1F899571345D06",
            "logs.txt:398 twilio-api-key: CHAT_LOGS/c7d2069e-c561.jsonl",
            "\"   GH_TOKEN=ghp_xxx\\n   CODEX_ENV=prod\\n\"",
        ] {
            assert_eq!(r.redact("s", text), text);
        }
    }

    #[test]
    fn custom_patterns_and_hooks_add_to_the_built_ins() {
        let r = Redactor::new()
            .with_pattern("employee_id", r"EMP-(\d{6})")
            .unwrap()
            .with_hook(Arc::new(|t: &str| {
                t.find("magic")
                    .map(|i| (i..i + 5, "incantation".to_owned()))
                    .into_iter()
                    .collect()
            }));
        let out = r.redact("s", "EMP-123456 said magic");
        assert!(out.starts_with("EMP-[REDACTED:employee_id:"), "{out}");
        assert!(
            out.ends_with("said [REDACTED:custom:") || out.contains("said [REDACTED:custom:"),
            "{out}"
        );
        assert!(matches!(
            Redactor::new().with_pattern("bad", "(unclosed"),
            Err(RedactError::BadPattern { .. })
        ));
        assert!(matches!(
            Redactor::new().with_pattern("no spaces", "x"),
            Err(RedactError::BadName(_))
        ));
    }

    #[test]
    fn items_are_redacted_everywhere_their_text_lives() {
        let r = Redactor::new();
        let key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6h";
        let mut call = Item::new(ItemBody::ToolCall(ToolCall::function(
            "c1",
            "bash",
            json!({"command": format!("curl -H 'Authorization: Bearer {key}' https://api")}),
        )));
        assert!(r.redact_item("s", &mut call) >= 1);
        assert!(!format!("{:?}", call.body()).contains(key));
        let mut result = Item::new(ItemBody::ToolResult(ToolResult::text(
            "c1",
            format!("OPENAI_API_KEY={key}"),
        )));
        assert_eq!(r.redact_item("s", &mut result), 1);
        assert!(!result.plain_text().contains(key));
        let mut clean = Item::text(Role::User, "nothing secret here");
        clean.set_wire_digest(7);
        assert_eq!(r.redact_item("s", &mut clean), 0);
        assert_eq!(
            clean.wire_digest(),
            Some(7),
            "an item without secrets is untouched"
        );
    }
}
