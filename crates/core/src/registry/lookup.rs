//! Name matching for the model registry: normalisation, exact/alias match, segment-prefix match.

use super::ModelInfo;

/// Lower-cases, drops any `vendor/` path prefix and maps `.`, `_`, `:`, `@` and spaces to `-`.
pub(crate) fn normalize(name: &str) -> String {
    let name = name.trim();
    let last = name.rsplit('/').next().unwrap_or(name);
    last.chars()
        .map(|c| match c {
            '.' | '_' | ':' | '@' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// All normalised names of a model: canonical name first, then aliases.
fn keys(m: &ModelInfo) -> impl Iterator<Item = String> + '_ {
    std::iter::once(normalize(&m.name)).chain(m.aliases.iter().map(|a| normalize(a)))
}

/// The longest key of any model that equals `key` or that `key` extends by whole `-` segments.
fn best_prefix<'a>(models: &'a [ModelInfo], key: &str) -> Option<&'a ModelInfo> {
    let mut best: Option<(usize, &ModelInfo)> = None;
    for m in models {
        for k in keys(m) {
            let fits = key == k || (key.starts_with(&k) && key[k.len()..].starts_with('-'));
            if fits && best.is_none_or(|(len, _)| k.len() > len) {
                best = Some((k.len(), m));
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
    if let Some(m) = models.iter().find(|m| keys(m).any(|k| k == key)) {
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
