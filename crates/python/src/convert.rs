//! Python objects to JSON values and back. What JSON cannot hold (a set, bytes, a NaN, a dict with
//! a non-string key, an arbitrary object) is refused with the path of the offending value
//! (`messages[3].content[0].text`), before anything reaches the session runtime.

use crate::errors::Failure;
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

/// Strings of at least this many bytes (of UTF-8) are remembered by object: see [`Noted`].
pub const NOTED_BYTES: usize = 64;

/// The long strings (at least [`NOTED_BYTES`]) of one converted element, as Python objects, in
/// the order its JSON holds them. A Python `str` cannot change, and the reference held here keeps
/// the object (and its address) alive, so an element that holds the very same object at the same
/// place next time holds the same text: [`element_is`] then skips reading it. That is what makes
/// the check cheap for a host that resends its history: the texts are almost all of its bytes.
pub type Noted = Vec<Py<PyString>>;

/// [`py_to_value`] for an element of a top-level list (a message of the caller's list): nesting
/// is counted from the list, as when the whole list is converted. Its long strings are pushed
/// to `noted`.
pub fn element_to_value(
    obj: &Bound<'_, PyAny>,
    path: &mut String,
    noted: &mut Noted,
) -> Result<Value, Failure> {
    to_value(obj, path, 1, Some(noted))
}

/// Whether `obj`, an element of a top-level list, converts ([`element_to_value`]) to exactly
/// `value`: same JSON, key order and number kinds included (a float compares by its bits, so
/// `-0.0` is not `0.0`). Checked without converting or allocating: type checks, dict, list and
/// tuple iteration (the C API's, as the conversion does) and reading text; no Python code runs.
/// False for whatever the conversion would refuse or must call Python code for (an object with
/// `model_dump`): such an element is always converted again.
///
/// `noted` holds the long strings `value` was last seen with ([`Noted`]): one that is the same
/// object is not read again. When the element matches, `noted` is brought up to date with the
/// objects it holds now (an equal text in a new object is read once, then remembered).
pub fn element_is(obj: &Bound<'_, PyAny>, value: &Value, noted: &mut Noted) -> bool {
    let mut memo = Memo {
        known: noted,
        next: 0,
        renewed: Vec::new(),
    };
    if !same(obj, value, 1, &mut memo) {
        return false;
    }
    for (k, s) in memo.renewed {
        if k < noted.len() {
            noted[k] = s.unbind();
        } else if k == noted.len() {
            noted.push(s.unbind());
        }
    }
    true
}

/// The long strings an element was last seen with, and what the check found in it now.
struct Memo<'a, 'py> {
    known: &'a [Py<PyString>],
    /// The place, among the value's long strings, of the next one.
    next: usize,
    /// Long strings equal to the value's but not the objects known (their place and object).
    renewed: Vec<(usize, Bound<'py, PyString>)>,
}

/// The check of [`element_is`], branch for branch the conversion's ([`to_value`]).
fn same<'py>(
    obj: &Bound<'py, PyAny>,
    value: &Value,
    depth: usize,
    memo: &mut Memo<'_, 'py>,
) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    if obj.is_none() {
        return value.is_null();
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let Value::String(v) = value else {
            return false;
        };
        if v.len() < NOTED_BYTES {
            return s.to_str().is_ok_and(|s| s == v.as_str());
        }
        let k = memo.next;
        memo.next += 1;
        if memo.known.get(k).is_some_and(|o| o.as_ptr() == s.as_ptr()) {
            return true;
        }
        if s.to_str().is_ok_and(|s| s == v.as_str()) {
            memo.renewed.push((k, s.clone()));
            return true;
        }
        return false;
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let Value::Object(map) = value else {
            return false;
        };
        return d.len() == map.len()
            && d.iter().zip(map).all(|((k, v), (key, val))| {
                k.cast::<PyString>()
                    .is_ok_and(|k| k.to_str().is_ok_and(|k| k == key.as_str()))
                    && same(&v, val, depth + 1, memo)
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
    if obj.is_instance_of::<PyBool>() {
        return matches!(value, Value::Bool(b) if obj.extract::<bool>().is_ok_and(|o| o == *b));
    }
    if obj.is_instance_of::<PyInt>() {
        let Value::Number(n) = value else {
            return false;
        };
        if let Ok(i) = obj.extract::<i64>() {
            return Number::from(i) == *n;
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Number::from(u) == *n;
        }
        return false;
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let f = f.value();
        return matches!(value, Value::Number(n) if n.is_f64()
            && !f.is_nan() && !f.is_infinite()
            && n.as_f64().is_some_and(|v| v.to_bits() == f.to_bits()));
    }
    false
}

fn refuse(path: &str, message: impl std::fmt::Display) -> Failure {
    Failure::input("bad_value", format!("{path}: {message}"))
        .with(serde_json::json!({"path": path}))
}

fn to_value(
    obj: &Bound<'_, PyAny>,
    path: &mut String,
    depth: usize,
    mut noted: Option<&mut Noted>,
) -> Result<Value, Failure> {
    if depth > MAX_DEPTH {
        return Err(refuse(path, "nested too deeply"));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let text = s
            .to_str()
            .map_err(|e| refuse(path, format!("not valid text: {e}")))?;
        if let Some(noted) = noted {
            if text.len() >= NOTED_BYTES {
                noted.push(s.clone().unbind());
            }
        }
        return Ok(Value::String(text.to_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
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
            path.push('.');
            path.push_str(key);
            let value = to_value(&v, path, depth + 1, noted.as_deref_mut())?;
            path.truncate(base);
            map.insert(key.to_owned(), value);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return seq(l.iter(), l.len(), path, depth, noted);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return seq(t.iter(), t.len(), path, depth, noted);
    }
    if obj.is_instance_of::<PyBool>() {
        return obj
            .extract::<bool>()
            .map(Value::Bool)
            .map_err(|e| refuse(path, e));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(refuse(path, "integer too large for JSON"));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
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
        return to_value(&dumped, path, depth + 1, noted);
    }
    Err(refuse(
        path,
        format!(
            "{} is not JSON (expected dict, list, str, int, float, bool or None)",
            type_name(obj)
        ),
    ))
}

fn seq<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    path: &mut String,
    depth: usize,
    mut noted: Option<&mut Noted>,
) -> Result<Value, Failure> {
    let mut out = Vec::with_capacity(len);
    let base = path.len();
    for (i, item) in items.enumerate() {
        path.push('[');
        path.push_str(&i.to_string());
        path.push(']');
        out.push(to_value(&item, path, depth + 1, noted.as_deref_mut())?);
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
