//! The Python objects a message was converted from, kept so that the next call can tell, by
//! identity alone, that the message still holds exactly them.
//!
//! A converted message is a JSON tree; its snapshot ([`Snapshots`]) holds, for every node of that
//! tree in preorder (a dict, then each key and its value; a list or tuple, then each item), a
//! strong reference to the object it was converted from, its kind and its length. A node's object
//! is kept only when its type is exactly one of `str`, `int`, `float`, `bool`, `None`, `dict`,
//! `list` or `tuple` (not a subclass: a subclass can override what the conversion reads).
//!
//! Why identity says enough:
//! - a leaf of those types cannot change: a `str`, `int`, `float` or `bool` is immutable, and the
//!   reference held keeps the object alive, so its address cannot be reused by another object. A
//!   leaf that is the very object kept at its node converts to the same JSON;
//! - a container can change in place, so it is never trusted by identity:
//!   [`Snapshots::unchanged`] walks it (its length, then each item or each key and value in the
//!   order the conversion reads them) down to the leaves, comparing each object's address with
//!   the one kept at its node. No text is read or compared, no key hashed, no Python code run.
//!
//! When every node matches, the message converts to exactly the JSON kept for it. Any difference
//! (an object replaced, a length changed, a node whose object was not kept) makes the walk false
//! and the message is checked by content ([`crate::convert::element_is`]), which skips the leaves
//! that are still the objects kept and renews the nodes that are not.
//!
//! The walk's cost is memory, not instructions: every container is read (a dict's object and
//! its table), and the stable ABI's iterators take a reference to each leaf, which touches it.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::ops::Range;

/// What a node's object is, as the conversion saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A string, number, boolean or null (or a node whose object is not kept).
    Leaf,
    /// A `dict` (its keys and values follow, in order).
    Dict,
    /// A `list` (its items follow, in order).
    List,
    /// A `tuple` (its items follow, in order).
    Tuple,
}

/// One node of a converted message: the object it was converted from, when that object's type is
/// one the identity check trusts, and its kind and length (16 bytes, so that a history's nodes
/// stay few cache lines: the walk is bound by memory, not by instructions).
pub struct Seen {
    object: Option<Py<PyAny>>,
    len: u32,
    kind: Kind,
}

impl Seen {
    /// The node converted from `obj`.
    pub fn of(obj: &Bound<'_, PyAny>) -> Seen {
        let container = |kind: Kind, len: usize| match u32::try_from(len) {
            Ok(len) => Seen {
                object: Some(obj.clone().unbind()),
                len,
                kind,
            },
            Err(_) => Seen::untrusted(),
        };
        if let Ok(d) = obj.cast_exact::<PyDict>() {
            container(Kind::Dict, d.len())
        } else if let Ok(l) = obj.cast_exact::<PyList>() {
            container(Kind::List, l.len())
        } else if let Ok(t) = obj.cast_exact::<PyTuple>() {
            container(Kind::Tuple, t.len())
        } else if obj.is_exact_instance_of::<PyString>()
            || obj.is_none()
            || obj.is_exact_instance_of::<PyBool>()
            || obj.is_exact_instance_of::<PyInt>()
            || obj.is_exact_instance_of::<PyFloat>()
        {
            container(Kind::Leaf, 0)
        } else {
            Seen::untrusted()
        }
    }

    /// A node whose object is not kept: it never matches by identity.
    fn untrusted() -> Seen {
        Seen {
            object: None,
            len: 0,
            kind: Kind::Leaf,
        }
    }

    /// Whether `obj` is the very object kept for this node.
    pub fn is(&self, obj: &Bound<'_, PyAny>) -> bool {
        self.object
            .as_ref()
            .is_some_and(|o| o.as_ptr() == obj.as_ptr())
    }

    /// Whether this node is a leaf whose object is `obj`: then `obj` converts to the node's JSON.
    pub fn is_leaf(&self, obj: &Bound<'_, PyAny>) -> bool {
        self.kind == Kind::Leaf && self.is(obj)
    }
}

/// Nodes of a message found changed by a check by content: their place in the message's
/// snapshot and what they hold now, in preorder.
pub type Renewed = Vec<(usize, Seen)>;

/// The snapshots of a session's leading messages, one after the other in one buffer (read in
/// order on every call, so kept together rather than one allocation per message).
#[derive(Default)]
pub struct Snapshots {
    nodes: Vec<Seen>,
    /// Where each message's nodes end in `nodes`.
    ends: Vec<usize>,
}

impl Snapshots {
    /// Messages with a snapshot (the first ones of the session's last call).
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no message has a snapshot.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn range(&self, i: usize) -> Range<usize> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        start..self.ends[i]
    }

    /// Message `i`'s nodes (none when it has no snapshot).
    pub fn of(&self, i: usize) -> &[Seen] {
        if i < self.ends.len() {
            &self.nodes[self.range(i)]
        } else {
            &[]
        }
    }

    /// Keeps the snapshots of the first `messages` messages only.
    pub fn truncate(&mut self, messages: usize) {
        if messages < self.ends.len() {
            let end = if messages == 0 {
                0
            } else {
                self.ends[messages - 1]
            };
            self.nodes.truncate(end);
            self.ends.truncate(messages);
        }
    }

    /// Where message number [`Snapshots::len`] is recorded: its nodes are pushed here, then
    /// [`Snapshots::close`] ends it.
    pub fn recording(&mut self) -> &mut Vec<Seen> {
        &mut self.nodes
    }

    /// Ends the message whose nodes were pushed since the last one.
    pub fn close(&mut self) {
        self.ends.push(self.nodes.len());
    }

    /// Brings message `i`'s snapshot up to date after a check by content found it equal (see
    /// [`crate::convert::element_is`]): nodes renewed in place, or, for the message after the
    /// last with a snapshot (then every node was renewed, in order), a new snapshot.
    pub fn renew(&mut self, i: usize, renewed: Renewed) {
        if i < self.ends.len() {
            let range = self.range(i);
            for (k, seen) in renewed {
                if let Some(node) = self.nodes[range.clone()].get_mut(k) {
                    *node = seen;
                }
            }
        } else if i == self.ends.len() {
            let start = self.nodes.len();
            for (k, seen) in renewed {
                if k == self.nodes.len() - start {
                    self.nodes.push(seen);
                }
            }
            self.close();
        }
    }

    /// Whether message `i`, `obj`, holds exactly the objects of its snapshot in the same shape,
    /// so that it converts to the JSON the snapshot was taken with. Pointer comparisons, lengths
    /// and container iteration only; false at the first difference, and for a message without a
    /// snapshot.
    pub fn unchanged(&self, i: usize, obj: &Bound<'_, PyAny>) -> bool {
        let nodes = self.of(i);
        let mut next = 0;
        !nodes.is_empty() && identical(obj, nodes, &mut next, 1) && next == nodes.len()
    }
}

/// Deepest nesting walked (the conversion refuses deeper; [`crate::convert`]).
const MAX_DEPTH: usize = 128;

fn identical(obj: &Bound<'_, PyAny>, nodes: &[Seen], next: &mut usize, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let Some(seen) = nodes.get(*next) else {
        return false;
    };
    *next += 1;
    if !seen.is(obj) {
        return false;
    }
    // The same object, so of the same exact type (a builtin's type cannot be reassigned).
    let n = seen.len as usize;
    match seen.kind {
        Kind::Leaf => true,
        Kind::Dict => obj.cast_exact::<PyDict>().is_ok_and(|d| {
            d.len() == n
                && d.iter().all(|(k, v)| {
                    identical(&k, nodes, next, depth + 1) && identical(&v, nodes, next, depth + 1)
                })
        }),
        Kind::List => obj.cast_exact::<PyList>().is_ok_and(|l| {
            l.len() == n
                && l.iter()
                    .all(|item| identical(&item, nodes, next, depth + 1))
        }),
        Kind::Tuple => obj.cast_exact::<PyTuple>().is_ok_and(|t| {
            t.len() == n
                && t.iter_borrowed()
                    .all(|item| identical(&item, nodes, next, depth + 1))
        }),
    }
}
