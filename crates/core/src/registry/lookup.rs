//! Name matching for the model registry: normalisation, exact/alias match, segment-prefix match.

use super::ModelInfo;

/// Lower-cases, drops any `vendor/` path prefix and maps `.`, `_`, `:`, `@` and spaces to `-`.
pub(crate) fn normalize(name: &str) -> String {
    normalized(name).collect()
}

/// The characters of [`normalize`]`(name)`, without building the string.
fn normalized(name: &str) -> impl Iterator<Item = char> + '_ {
    let name = name.trim();
    let last = name.rsplit('/').next().unwrap_or(name);
    last.chars().map(|c| match c {
        '.' | '_' | ':' | '@' | ' ' => '-',
        c => c.to_ascii_lowercase(),
    })
}

/// All names of a model as given: canonical name first, then aliases.
fn names(m: &ModelInfo) -> impl Iterator<Item = &str> + '_ {
    std::iter::once(m.name.as_str()).chain(m.aliases.iter().map(String::as_str))
}

/// The length in bytes of `name` normalised, when that is a prefix of `key` (or `key` itself).
/// Compared character by character: a lookup allocates nothing per model name.
fn normalized_prefix(name: &str, key: &str) -> Option<usize> {
    let mut rest = key.chars();
    let mut len = 0;
    for c in normalized(name) {
        if rest.next() != Some(c) {
            return None;
        }
        len += c.len_utf8();
    }
    Some(len)
}

/// The longest key of any model that equals `key` or that `key` extends by whole `-` segments.
fn best_prefix<'a>(models: &'a [ModelInfo], key: &str) -> Option<&'a ModelInfo> {
    let mut best: Option<(usize, &ModelInfo)> = None;
    for m in models {
        for name in names(m) {
            let Some(len) = normalized_prefix(name, key) else {
                continue;
            };
            let fits = len == key.len() || key[len..].starts_with('-');
            if fits && best.is_none_or(|(l, _)| len > l) {
                best = Some((len, m));
            }
        }
    }
    best.map(|(_, m)| m)
}

/// See [`super::ModelRegistry::lookup`].
pub(crate) fn find<'a>(models: &'a [ModelInfo], name: &str) -> Option<&'a ModelInfo> {
    let key = normalize(name);
    if key.is_empty() {
        return None;
    }
    let exact = |name: &str| normalized_prefix(name, &key) == Some(key.len());
    if let Some(m) = models.iter().find(|m| names(m).any(exact)) {
        return Some(m);
    }
    // Try the whole name, then without each leading segment (`anthropic-claude-...`, `us-anthropic-...`).
    let mut rest = key.as_str();
    loop {
        if let Some(m) = best_prefix(models, rest) {
            return Some(m);
        }
        rest = rest.split_once('-')?.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::ModelRegistry;

    /// The lookup written the plain way: every name normalised into a string, then compared.
    fn reference<'a>(models: &'a [ModelInfo], name: &str) -> Option<&'a ModelInfo> {
        let key = normalize(name);
        if key.is_empty() {
            return None;
        }
        let keys = |m: &'a ModelInfo| {
            std::iter::once(normalize(&m.name)).chain(m.aliases.iter().map(|a| normalize(a)))
        };
        if let Some(m) = models.iter().find(|m| keys(m).any(|k| k == key)) {
            return Some(m);
        }
        let mut rest = key.as_str();
        loop {
            let mut best: Option<(usize, &ModelInfo)> = None;
            for m in models {
                for k in keys(m) {
                    let fits =
                        rest == k || (rest.starts_with(&k) && rest[k.len()..].starts_with('-'));
                    if fits && best.is_none_or(|(len, _)| k.len() > len) {
                        best = Some((k.len(), m));
                    }
                }
            }
            if let Some((_, m)) = best {
                return Some(m);
            }
            rest = rest.split_once('-')?.1;
        }
    }

    #[test]
    fn the_lookup_finds_what_normalising_every_name_finds() {
        let registry = ModelRegistry::builtin();
        let models = registry.models();
        let mut names: Vec<String> = Vec::new();
        for m in models {
            for n in std::iter::once(&m.name).chain(&m.aliases) {
                names.push(n.clone());
                names.push(n.to_uppercase());
                names.push(format!("vendor/{n}"));
                names.push(format!("us.anthropic.{n}"));
                names.push(format!("{n}-2025-01-01"));
                names.push(format!("{n}x"));
                names.push(n.replace('-', "_"));
                names.push(n[..n.len() / 2].to_owned());
            }
        }
        names.extend(
            [
                "",
                " ",
                "-",
                "bench-model",
                "Ünïcode-model",
                "gpt",
                "claude-",
            ]
            .map(String::from),
        );
        for name in &names {
            assert_eq!(
                find(models, name).map(|m| &m.name),
                reference(models, name).map(|m| &m.name),
                "{name:?}"
            );
        }
    }
}
