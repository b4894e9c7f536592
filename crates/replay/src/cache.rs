//! Prompt-cache accounting: the tokens of a request that a provider's prefix cache would serve.
//!
//! Providers cache the longest prefix a request shares with an earlier one. The replay approximates
//! this at item granularity: the shared prefix is the tool declarations (when unchanged, since they
//! come first) plus the longest run of leading items identical to the previous request's (same id and
//! same content, by [`crate::fingerprint`]); its tokens are the tokens of those items. The first item
//! that differs ends the prefix even if it shares leading text with the old one, so the figure is a
//! slight underestimate when a strategy edits an item in place. Only the previous request is
//! remembered (a live cache holds several, but an agent's requests form one growing chain). A shared
//! prefix below the provider's minimum cacheable size counts as no hit.

/// One request, as the cache sees it.
#[derive(Debug, Clone, Copy)]
pub struct RequestShape<'a> {
    /// Fingerprint of the tool declarations.
    pub tools_fingerprint: u64,
    /// Tokens of the tool declarations.
    pub tools_tokens: usize,
    /// Fingerprints of the items the model sees, in order.
    pub items: &'a [u64],
    /// Tokens of each of those items (content plus framing).
    pub item_tokens: &'a [u32],
}

/// Remembers the previous request and measures the prefix each new one shares with it.
#[derive(Debug, Clone, Default)]
pub struct PrefixCache {
    previous: Option<(u64, Vec<u64>)>,
    min_prefix_tokens: usize,
}

impl PrefixCache {
    /// A cache that serves only shared prefixes of at least `min_prefix_tokens` tokens.
    pub fn new(min_prefix_tokens: usize) -> Self {
        PrefixCache {
            previous: None,
            min_prefix_tokens,
        }
    }

    /// Records `request` and returns how many of its tokens the cache serves.
    pub fn observe(&mut self, request: RequestShape<'_>) -> usize {
        let mut cached = 0usize;
        let mut shared_items = 0usize;
        if let Some((tools, items)) = &self.previous {
            if *tools == request.tools_fingerprint {
                cached = request.tools_tokens;
                shared_items = items
                    .iter()
                    .zip(request.items)
                    .take_while(|(a, b)| a == b)
                    .count();
                cached += request.item_tokens[..shared_items]
                    .iter()
                    .map(|&n| n as usize)
                    .sum::<usize>();
            }
        }
        match &mut self.previous {
            Some((tools, items)) if *tools == request.tools_fingerprint => {
                items.truncate(shared_items);
                items.extend_from_slice(&request.items[shared_items..]);
            }
            _ => self.previous = Some((request.tools_fingerprint, request.items.to_vec())),
        }
        if cached < self.min_prefix_tokens {
            0
        } else {
            cached
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape<'a>(items: &'a [u64], tokens: &'a [u32]) -> RequestShape<'a> {
        RequestShape {
            tools_fingerprint: 7,
            tools_tokens: 10,
            items,
            item_tokens: tokens,
        }
    }

    #[test]
    fn growing_chain_is_cached_and_rewrites_are_not() {
        let mut cache = PrefixCache::new(0);
        assert_eq!(cache.observe(shape(&[1, 2], &[5, 6])), 0);
        // Appending: tools + both old items are served.
        assert_eq!(cache.observe(shape(&[1, 2, 3], &[5, 6, 7])), 10 + 5 + 6);
        // A rewrite of item 2 keeps only tools + item 1.
        assert_eq!(cache.observe(shape(&[1, 9, 3], &[5, 2, 7])), 10 + 5);
        // New tools: nothing is served.
        let other = RequestShape {
            tools_fingerprint: 8,
            ..shape(&[1, 9, 3], &[5, 2, 7])
        };
        assert_eq!(cache.observe(other), 0);
    }

    #[test]
    fn minimum_prefix_applies() {
        let mut cache = PrefixCache::new(100);
        cache.observe(shape(&[1], &[50]));
        assert_eq!(cache.observe(shape(&[1, 2], &[50, 50])), 0);
        assert_eq!(cache.observe(shape(&[1, 2, 3], &[50, 50, 50])), 110);
    }
}
