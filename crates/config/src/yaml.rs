//! The one place the configuration file's YAML is read: serde-saphyr (pure Rust, no libyaml, no
//! `unsafe`) into the file's serde types, with its errors turned into a line, a column and a
//! message meant for the person who wrote the file.
//!
//! What the parser is asked for: one document; duplicate keys are errors (a second `model:` is a
//! mistake, not an override); YAML 1.2's booleans only (`true`/`false`: `off`, `no` and `yes` stay
//! words, as settings like `recall: off` and `max_in_flight: off` read them); its default budget
//! bounds aliases and nesting (an alias bomb is an error, not an allocation). A value of the wrong
//! type is named by its key's path (`policy.overflow_max_retries`), which the parser's message
//! does not carry.

use serde::de::DeserializeOwned;
use serde_saphyr::{DuplicateKeyPolicy, MessageFormatter, UserMessageFormatter};

/// Why a text is not the expected YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlError {
    /// 1-based line (0 when the parser names none).
    pub line: usize,
    /// 1-based column (0 when the parser names none).
    pub column: usize,
    /// What is wrong, without the position (the caller puts the file, line and column first).
    pub message: String,
}

/// Reads `text`, one YAML document, as a `T`.
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = DuplicateKeyPolicy::Error;
    options.strict_booleans = true;
    options.with_snippet = false;
    serde_saphyr::from_str_with_options::<T>(text, options).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| {
            (
                usize::try_from(l.line()).unwrap_or(usize::MAX),
                usize::try_from(l.column()).unwrap_or(usize::MAX),
            )
        });
        let mut message = UserMessageFormatter.format_message(&e).into_owned();
        // Unknown fields and duplicate keys name their key already; a bad value does not.
        if !message.contains('`') {
            if let Some(path) = key_path_at(text, line, column) {
                message = format!("`{path}`: {message}");
            }
        }
        YamlError {
            line,
            column,
            message,
        }
    })
}

/// The dotted path of the block-style key whose value starts at `line`:`column` (1-based): the key
/// written before the column on that line, then each less indented `key:` line above it. `None`
/// when the line has no key before the column (a list item, a flow collection's inside).
fn key_path_at(text: &str, line: usize, column: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let here = *lines.get(line.checked_sub(1)?)?;
    let before: String = here.chars().take(column.saturating_sub(1)).collect();
    let (key_part, _) = before.rsplit_once(':')?;
    let key = plain_key(key_part.rsplit(['{', ',']).next().unwrap_or(key_part))?;
    let mut path = vec![key];
    let mut indent = indentation(here);
    for above in lines[..line - 1].iter().rev() {
        let trimmed = above.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || indentation(above) >= indent {
            continue;
        }
        indent = indentation(above);
        match trimmed.split_once(':') {
            Some((k, rest)) if rest.trim().is_empty() || rest.trim_start().starts_with('#') => {
                path.push(plain_key(k)?);
            }
            _ => return None,
        }
        if indent == 0 {
            break;
        }
    }
    path.reverse();
    Some(path.join("."))
}

/// A key as written (`name`, `"name"`, `- name`), or `None` when it is not a plain word.
fn plain_key(text: &str) -> Option<String> {
    let key = text
        .trim()
        .trim_start_matches("- ")
        .trim_matches(|c| c == '"' || c == '\'');
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.');
    plain.then(|| key.to_owned())
}

/// Leading spaces (a list item's `- ` counts as indentation).
fn indentation(line: &str) -> usize {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[spaces..];
    if rest.starts_with("- ") {
        spaces + 2
    } else {
        spaces
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Shape {
        model: Option<String>,
        window: Option<usize>,
        inner: Option<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        on: Option<bool>,
    }

    fn err(text: &str) -> YamlError {
        match from_str::<Shape>(text) {
            Ok(shape) => panic!("{text:?} read as {shape:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn errors_name_line_column_and_what_without_repeating_the_place() {
        for (text, at, says) in [
            (
                "model: a\ninner:\n  off: true\n",
                (3, 3),
                "unknown field `off`",
            ),
            ("window: many\n", (1, 9), "`window`: invalid u64"),
            (
                "inner:\n  on: maybe\n",
                (2, 7),
                "`inner.on`: invalid boolean",
            ),
            ("inner:\n  on: off\n", (2, 7), "`inner.on`: invalid boolean"),
            ("inner: {on: 3}\n", (1, 13), "`on`: "),
            (
                "model: a\nwindow: 3\nmodel: b\n",
                (3, 1),
                "duplicate mapping key `model`",
            ),
            (
                "inner:\n  on: true\n  on: false\n",
                (3, 3),
                "duplicate mapping key `on`",
            ),
            ("inner: [1,\n", (1, 8), ""),
            ("model: a\n---\nmodel: b\n", (3, 1), "multiple"),
            ("inner:\n\ton: true\n", (2, 2), "tab"),
        ] {
            let e = err(text);
            assert_eq!((e.line, e.column), at, "{text:?}: {e:?}");
            assert!(e.message.contains(says), "{text:?}: {e:?}");
            assert!(!e.message.contains("line"), "{text:?}: {e:?}");
            assert!(!e.message.contains("Options"), "{text:?}: {e:?}");
        }
    }

    #[test]
    fn an_alias_bomb_is_an_error_not_an_allocation() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let e = from_str::<std::collections::BTreeMap<String, serde::de::IgnoredAny>>(&text)
            .expect_err("10^12 nodes");
        assert!(e.line > 0, "{e:?}");
    }

    #[test]
    fn a_valid_document_reads() {
        let s: Shape = from_str("model: m\nwindow: 8000\ninner: {on: true}\n").unwrap();
        assert_eq!(s.model.as_deref(), Some("m"));
        assert_eq!(s.window, Some(8000));
        assert_eq!(s.inner.and_then(|i| i.on), Some(true));
    }
}
