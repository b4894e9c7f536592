//! Item fingerprints: a 64-bit hash of an item's id, visibility and full content, so that two requests
//! can be compared item by item without keeping copies of either.

use compact_core::model::{Item, ToolSpec};
use std::collections::hash_map::DefaultHasher;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

/// Feeds formatted text straight into a hasher (no intermediate string).
struct HashWriter<'a>(&'a mut DefaultHasher);

impl std::fmt::Write for HashWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// Fingerprint of an item: equal for items with the same id and the same content (the body, in full,
/// including unmodelled wire fields). Metadata that does not reach the model is ignored.
pub fn fingerprint(item: &Item) -> u64 {
    let mut hasher = DefaultHasher::new();
    item.meta.id.hash(&mut hasher);
    item.meta.visibility.model.hash(&mut hasher);
    // Debug output of the body covers every field; formatting into the hasher allocates nothing.
    let _ = write!(HashWriter(&mut hasher), "{:?}", item.body());
    hasher.finish()
}

/// Fingerprint of a request's tool declarations.
pub fn tools_fingerprint(tools: &[ToolSpec]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for tool in tools {
        tool.name.hash(&mut hasher);
        tool.description.hash(&mut hasher);
        let _ = write!(HashWriter(&mut hasher), "{}", tool.schema);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use compact_core::model::Role;

    #[test]
    fn same_content_same_id_same_fingerprint() {
        let a = Item::text(Role::User, "hello").with_id("a");
        assert_eq!(fingerprint(&a), fingerprint(&a.clone()));
        assert_ne!(
            fingerprint(&a),
            fingerprint(&Item::text(Role::User, "hello").with_id("b"))
        );
        assert_ne!(
            fingerprint(&a),
            fingerprint(&Item::text(Role::User, "hello!").with_id("a"))
        );
    }
}
