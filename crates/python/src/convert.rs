//! Python objects to JSON values and back. What JSON cannot hold (a set, bytes, a NaN, a dict with
//! a non-string key, an arbitrary object) is refused with the path of the offending value
//! (`messages[3].content[0].text`), before anything reaches the session runtime.

use crate::errors::Failure;
use crate::identity::{Renewed, Seen};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted (serde_json's own limit when parsing text).
const MAX_DEPTH: usize = 128;

/// Converts a Python object (dicts, lists, tuples, strings, numbers, booleans, `None`, and
/// objects with a pydantic `model_dump`) into a JSON value; `path` names it in errors.
pub fn py_to_value(obj: &Bound<'_, PyAny>, path: &mut String) -> Result<Value, Failure> {
    to_value(obj, path, 0, None)
}

/// [`py_to_value`] for an element of a top-level list (a message of the caller's list): nesting
/// is counted from the list, as when the whole list is converted. The objects it is converted
/// from are pushed to `snapshot`, one per node of the JSON in preorder ([`crate::identity`]).
pub fn element_to_value(
    obj: &Bound<'_, PyAny>,
    path: &mut String,
    snapshot: &mut Vec<Seen>,
) -> Result<Value, Failure> {
    to_value(obj, path, 1, Some(snapshot))
}

/// Whether `obj`, an element of a top-level list, converts ([`element_to_value`]) to exactly
/// `value`: same JSON, key order and number kinds included (a float compares by its bits, so
/// `-0.0` is not `0.0`). Checked without converting: type checks, dict, list and tuple iteration
/// (the C API's, as the conversion does) and reading text; no Python code runs. `None` for
/// whatever the conversion would refuse or must call Python code for (an object with
/// `model_dump`): such an element is always converted again.
///
/// `known` holds the objects `value` was last seen with (its snapshot, [`crate::identity`]): a
/// leaf that is the same object at its node is not read again. With `renewed`, the nodes that hold
/// other objects now (an equal text in a new object is read once, then known by identity) are
/// pushed there, to renew the snapshot with when the element matches.
pub fn element_is(
    obj: &Bound<'_, PyAny>,
    value: &Value,
    known: &[Seen],
    renewed: Option<&mut Renewed>,
) -> bool {
    let mut memo = Memo {
        known,
        next: 0,
        renewed,
    };
    same(obj, value, 1, &mut memo)
}

/// The objects an element was last seen with, and what the check found in it now.
struct Memo<'a> {
    known: &'a [Seen],
    /// The place, in the value's preorder, of the next node.
    next: usize,
    /// Nodes whose object is not the one known (their place and what they are now), when wanted.
    renewed: Option<&'a mut Renewed>,
}

impl Memo<'_> {
    /// The next node's place, and whether `obj` is the leaf known there (then it is not read).
    fn visit(&mut self, obj: &Bound<'_, PyAny>) -> (usize, bool) {
        let k = self.next;
        self.next += 1;
        (k, self.known.get(k).is_some_and(|s| s.is_leaf(obj)))
    }

    /// Notes that node `k` holds `obj` now, unless it is the object known there.
    fn renew(&mut self, k: usize, obj: &Bound<'_, PyAny>) {
        if let Some(renewed) = self.renewed.as_deref_mut() {
            if !self.known.get(k).is_some_and(|s| s.is(obj)) {
                renewed.push((k, Seen::of(obj)));
            }
        }
    }
}

/// The check of [`element_is`], branch for branch the conversion's ([`to_value`]), visiting the
/// value's nodes in the order a snapshot keeps them.
fn same(obj: &Bound<'_, PyAny>, value: &Value, depth: usize, memo: &mut Memo<'_>) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let (k, known) = memo.visit(obj);
    if known {
        return true;
    }
    if let Some(equal) = leaf_is(obj, value) {
        if equal {
            memo.renew(k, obj);
        }
        return equal;
    }
    // A container: known or not, it is walked (it may have changed in place). Its node comes
    // before its items'.
    memo.renew(k, obj);
    if let Ok(d) = obj.cast::<PyDict>() {
        let Value::Object(map) = value else {
            return false;
        };
        return d.len() == map.len()
            && d.iter().zip(map).all(|((k, v), (key, val))| {
                key_is(&k, key, memo) && same(&v, val, depth + 1, memo)
            });
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return matches!(value, Value::Array(items) if items.len() == l.len()
            && l.iter().zip(items).all(|(o, v)| same(&o, v, depth + 1, memo)));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return matches!(value, Value::Array(items) if items.len() == t.len()
            && t.iter().zip(items).all(|(o, v)| same(&o, v, depth + 1, memo)));
    }
    false
}

/// Whether `k`, a dict's key, is the string `key` (a node of its own, before its value's).
fn key_is(k: &Bound<'_, PyAny>, key: &str, memo: &mut Memo<'_>) -> bool {
    let (place, known) = memo.visit(k);
    if known {
        return true;
    }
    let equal = k
        .cast::<PyString>()
        .is_ok_and(|s| s.to_str().is_ok_and(|s| s == key));
    if equal {
        memo.renew(place, k);
    }
    equal
}

/// Whether `obj`, when it is a leaf (`None`, a string, a boolean or a number), converts to
/// `value`; `None` when it is not a leaf (a container, or what the conversion refuses).
fn leaf_is(obj: &Bound<'_, PyAny>, value: &Value) -> Option<bool> {
    if obj.is_none() {
        return Some(value.is_null());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Some(
            matches!(value, Value::String(v) if s.to_str().is_ok_and(|s| s == v.as_str())),
        );
    }
    if obj.is_instance_of::<PyBool>() {
        return Some(
            matches!(value, Value::Bool(b) if obj.extract::<bool>().is_ok_and(|o| o == *b)),
        );
    }
    if obj.is_instance_of::<PyInt>() {
        let Value::Number(n) = value else {
            return Some(false);
        };
        if let Ok(i) = obj.extract::<i64>() {
            return Some(Number::from(i) == *n);
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Some(Number::from(u) == *n);
        }
        return Some(false);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let f = f.value();
        return Some(matches!(value, Value::Number(n) if n.is_f64()
            && !f.is_nan() && !f.is_infinite()
            && n.as_f64().is_some_and(|v| v.to_bits() == f.to_bits())));
    }
    None
}

fn refuse(path: &str, message: impl std::fmt::Display) -> Failure {
    Failure::input("bad_value", format!("{path}: {message}"))
        .with(serde_json::json!({"path": path}))
}

fn to_value(
    obj: &Bound<'_, PyAny>,
    path: &mut String,
    depth: usize,
    mut snapshot: Option<&mut Vec<Seen>>,
) -> Result<Value, Failure> {
    if depth > MAX_DEPTH {
        return Err(refuse(path, "nested too deeply"));
    }
    // Each node is noted before its items (preorder); a pydantic model is no node of its own,
    // its dump is.
    if obj.is_none() {
        note(obj, &mut snapshot);
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let text = s
            .to_str()
            .map_err(|e| refuse(path, format!("not valid text: {e}")))?;
        note(obj, &mut snapshot);
        return Ok(Value::String(text.to_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        note(obj, &mut snapshot);
        let mut map = Map::with_capacity(d.len());
        let base = path.len();
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(refuse(
                    path,
                    format!("dict keys must be strings, not {}", type_name(&k)),
                ));
            };
            let key = key
                .to_str()
                .map_err(|e| refuse(path, format!("key is not valid text: {e}")))?;
            note(&k, &mut snapshot);
            path.push('.');
            path.push_str(key);
            let value = to_value(&v, path, depth + 1, snapshot.as_deref_mut())?;
            path.truncate(base);
            map.insert(key.to_owned(), value);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        note(obj, &mut snapshot);
        return seq(l.iter(), l.len(), path, depth, snapshot);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        note(obj, &mut snapshot);
        return seq(t.iter(), t.len(), path, depth, snapshot);
    }
    if obj.is_instance_of::<PyBool>() {
        note(obj, &mut snapshot);
        return obj
            .extract::<bool>()
            .map(Value::Bool)
            .map_err(|e| refuse(path, e));
    }
    if obj.is_instance_of::<PyInt>() {
        note(obj, &mut snapshot);
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(refuse(path, "integer too large for JSON"));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        note(obj, &mut snapshot);
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| refuse(path, "NaN and infinities are not JSON"));
    }
    // Pydantic models (the OpenAI and Agents SDKs' types): their JSON form.
    if let Ok(dump) = obj.getattr("model_dump") {
        let kwargs = PyDict::new(obj.py());
        let _ = kwargs.set_item("mode", "json");
        let _ = kwargs.set_item("exclude_unset", true);
        let dumped = dump
            .call((), Some(&kwargs))
            .map_err(|e| refuse(path, format!("model_dump() failed: {e}")))?;
        return to_value(&dumped, path, depth + 1, snapshot);
    }
    Err(refuse(
        path,
        format!(
            "{} is not JSON (expected dict, list, str, int, float, bool or None)",
            type_name(obj)
        ),
    ))
}

/// Pushes the node converted from `obj` to the element's snapshot, when one is taken.
fn note(obj: &Bound<'_, PyAny>, snapshot: &mut Option<&mut Vec<Seen>>) {
    if let Some(snapshot) = snapshot.as_deref_mut() {
        snapshot.push(Seen::of(obj));
    }
}

fn seq<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    path: &mut String,
    depth: usize,
    mut snapshot: Option<&mut Vec<Seen>>,
) -> Result<Value, Failure> {
    let mut out = Vec::with_capacity(len);
    let base = path.len();
    for (i, item) in items.enumerate() {
        path.push('[');
        path.push_str(&i.to_string());
        path.push(']');
        out.push(to_value(&item, path, depth + 1, snapshot.as_deref_mut())?);
        path.truncate(base);
    }
    Ok(Value::Array(out))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// Converts a JSON value into Python objects (dict, list, str, int, float, bool, None).
pub fn value_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for v in items {
                list.append(value_to_py(py, v)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, value_to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}
