//! JSON helpers shared by the wire decoders and encoders: typed field access that reports the
//! JSON-pointer path of what went wrong, and the deep merge that re-emits unknown fields.

use crate::error::DecodeError;
use compact_core::model::Extra;
use serde_json::Value;

/// The JSON pointer of member `key` under `path` (RFC 6901 escaping of `~` and `/`).
pub(crate) fn child(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// The JSON pointer of element `i` under `path`.
pub(crate) fn elem(path: &str, i: usize) -> String {
    format!("{path}/{i}")
}

/// A short name of a JSON value's type, for error messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The error for a value at `path` that is not what was `expected` ("a string or an array"...).
pub(crate) fn unexpected(path: impl Into<String>, expected: &str, got: &Value) -> DecodeError {
    DecodeError::new(path, format!("expected {expected}, got {}", type_name(got)))
}

/// The fields of one wire object being decoded. Known fields are taken out one by one; what remains
/// ([`Fields::rest`]) is the object's `extra`, re-emitted verbatim when encoding to the same format.
pub(crate) struct Fields {
    map: Extra,
    path: String,
}

impl Fields {
    /// The fields of `v`, which must be an object.
    pub(crate) fn of(v: &Value, path: &str) -> Result<Fields, DecodeError> {
        match v {
            Value::Object(map) => Ok(Fields {
                map: map.clone(),
                path: path.to_owned(),
            }),
            other => Err(unexpected(path, "an object", other)),
        }
    }

    /// The fields of a request `v` (an object), as [`Fields::of`], except that the array under
    /// `list` (the message list, the longest member by far) is not copied but returned by
    /// reference: a `null` holds its place, so taking it ([`Fields::take`]) leaves the other
    /// members in the order taking the array would. Decoding a long history again from its last
    /// message on then costs nothing in the size of the history.
    pub(crate) fn of_request<'v>(
        v: &'v Value,
        list: &str,
    ) -> Result<(Fields, Option<&'v Vec<Value>>), DecodeError> {
        let Value::Object(map) = v else {
            return Err(unexpected("", "an object", v));
        };
        let array = map.get(list).and_then(Value::as_array);
        let map = map
            .iter()
            .map(|(k, val)| {
                let spared = array.is_some() && k == list;
                (k.clone(), if spared { Value::Null } else { val.clone() })
            })
            .collect();
        Ok((
            Fields {
                map,
                path: String::new(),
            },
            array,
        ))
    }

    /// The path of the object.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The path of one of its members.
    pub(crate) fn at(&self, key: &str) -> String {
        child(&self.path, key)
    }

    /// Looks at a member without taking it.
    pub(crate) fn peek(&self, key: &str) -> Option<&Value> {
        self.map.get(key)
    }

    /// Takes a member whatever its type.
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key)
    }

    /// Takes a member unless it is absent or `null` (a `null` stays in the rest, so it is re-emitted).
    pub(crate) fn take_non_null(&mut self, key: &str) -> Option<Value> {
        match self.map.get(key) {
            None | Some(Value::Null) => None,
            Some(_) => self.map.remove(key),
        }
    }

    /// A required string member.
    pub(crate) fn req_str(&mut self, key: &str) -> Result<String, DecodeError> {
        match self.map.get(key) {
            Some(Value::String(_)) => match self.map.remove(key) {
                Some(Value::String(s)) => Ok(s),
                _ => Err(self.missing(key)),
            },
            Some(other) => Err(unexpected(self.at(key), "a string", other)),
            None => Err(self.missing(key)),
        }
    }

    /// A required tool call id: a non-empty string. The model has no empty id of its own (an item
    /// without an id is a legacy Chat `function_call`, which is given one when written), so an empty
    /// one could not be written back as it was; providers reject it too.
    pub(crate) fn req_id(&mut self, key: &str) -> Result<String, DecodeError> {
        match self.map.get(key) {
            Some(Value::String(s)) if s.is_empty() => Err(DecodeError::new(
                self.at(key),
                format!("empty `{key}` (a tool call id must not be empty)"),
            )),
            _ => self.req_str(key),
        }
    }

    /// An optional string member (`null` is left in the rest).
    pub(crate) fn opt_str(&mut self, key: &str) -> Result<Option<String>, DecodeError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(_)) => Ok(self
                .map
                .remove(key)
                .and_then(|v| v.as_str().map(str::to_owned))),
            Some(other) => Err(unexpected(self.at(key), "a string", other)),
        }
    }

    /// A required member of any type.
    pub(crate) fn req(&mut self, key: &str) -> Result<Value, DecodeError> {
        self.map.remove(key).ok_or_else(|| self.missing(key))
    }

    /// The fields of a required member that must be an object (taken).
    pub(crate) fn nested(&mut self, key: &str) -> Result<Fields, DecodeError> {
        let inner = self.req(key)?;
        Fields::of(&inner, &self.at(key))
    }

    /// Takes `key` when it is the string `expected`; leaves it otherwise. True when taken.
    pub(crate) fn take_tag(&mut self, key: &str, expected: &str) -> bool {
        if self.map.get(key).and_then(Value::as_str) == Some(expected) {
            self.map.remove(key);
            true
        } else {
            false
        }
    }

    /// The string value of `key`, if it is a string (not taken).
    pub(crate) fn peek_str(&self, key: &str) -> Option<&str> {
        self.map.get(key).and_then(Value::as_str)
    }

    /// A required string tag (`type`), not taken; an error when absent or not a string.
    pub(crate) fn tag(&self, key: &str) -> Result<String, DecodeError> {
        self.opt_tag(key)?.ok_or_else(|| self.missing(key))
    }

    /// An optional string tag, not taken: `None` when absent, an error when not a string.
    pub(crate) fn opt_tag(&self, key: &str) -> Result<Option<String>, DecodeError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(unexpected(self.at(key), "a string", other)),
        }
    }

    /// Puts a member back (used when a value turns out not to be modelled).
    pub(crate) fn put(&mut self, key: &str, v: Value) {
        self.map.insert(key.to_owned(), v);
    }

    /// The members not taken.
    pub(crate) fn rest(self) -> Extra {
        self.map
    }

    fn missing(&self, key: &str) -> DecodeError {
        DecodeError::new(self.at(key), format!("missing required field `{key}`"))
    }
}

/// Stores the untaken members of a nested object under `key` in `extra` (nothing when empty), so the
/// deep merge in [`merge`] restores them inside the re-encoded nested object.
pub(crate) fn nest(extra: &mut Extra, key: &str, rest: Extra) {
    if !rest.is_empty() {
        extra.insert(key.to_owned(), Value::Object(rest));
    }
}

/// Adds `extra` to `obj`: members `obj` lacks are inserted; where both hold objects the merge
/// recurses; otherwise the value already in `obj` (the modelled one) wins.
pub(crate) fn merge(obj: &mut Extra, extra: &Extra) {
    for (k, v) in extra {
        match (obj.get_mut(k), v) {
            (Some(Value::Object(inner)), Value::Object(more)) => merge(inner, more),
            (Some(_), _) => {}
            (None, _) => {
                obj.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Builds an object from `(key, value)` pairs.
pub(crate) fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Extra {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// `{"type": "text", "text": s}` exactly (nothing else): the shape a plain string content expands to.
pub(crate) fn is_plain_text_block(v: &Value, text_type: &str) -> Option<String> {
    let o = v.as_object()?;
    if o.len() == 2 && o.get("type").and_then(Value::as_str) == Some(text_type) {
        o.get("text").and_then(Value::as_str).map(str::to_owned)
    } else {
        None
    }
}
