//! JSON arrays of objects with the same keys, written as one key list and rows of values. An API or
//! MCP tool listing forty records spells every key forty times; the columnar form spells it once:
//! `{"__columns__":["id","title"],"__rows__":[[1,"a"],[2,"b"]]}`. [`expand_columns`] gives back the
//! original JSON value, and a document is only rewritten when it does exactly.

use serde_json::{Map, Value};

/// Key of the column list in the columnar form.
pub const COLUMNS_KEY: &str = "__columns__";
/// Key of the rows in the columnar form.
pub const ROWS_KEY: &str = "__rows__";
/// Arrays shorter than this stay as they are.
const MIN_ROWS: usize = 3;

/// The keys of `v` when it is an object.
fn keys(v: &Value) -> Option<Vec<&String>> {
    v.as_object().map(|o| o.keys().collect())
}

fn to_columns(v: &Value) -> Value {
    match v {
        Value::Array(items) => {
            let first = items.first().and_then(keys);
            let same = items.len() >= MIN_ROWS
                && first.as_ref().is_some_and(|k| !k.is_empty())
                && items.iter().all(|i| keys(i) == first);
            if same {
                let columns: Vec<Value> = first
                    .unwrap_or_default()
                    .into_iter()
                    .map(|k| Value::String(k.clone()))
                    .collect();
                let rows: Vec<Value> = items
                    .iter()
                    .map(|i| {
                        Value::Array(
                            i.as_object()
                                .map(|o| o.values().map(to_columns).collect())
                                .unwrap_or_default(),
                        )
                    })
                    .collect();
                let mut o = Map::new();
                o.insert(COLUMNS_KEY.to_owned(), Value::Array(columns));
                o.insert(ROWS_KEY.to_owned(), Value::Array(rows));
                Value::Object(o)
            } else {
                Value::Array(items.iter().map(to_columns).collect())
            }
        }
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), to_columns(v))).collect())
        }
        other => other.clone(),
    }
}

/// The inverse of the columnar form: every `{"__columns__":[...],"__rows__":[...]}` object becomes
/// the array of objects again.
pub fn expand_columns(v: &Value) -> Value {
    match v {
        Value::Object(o) if o.len() == 2 => {
            let (Some(Value::Array(cols)), Some(Value::Array(rows))) =
                (o.get(COLUMNS_KEY), o.get(ROWS_KEY))
            else {
                return Value::Object(
                    o.iter()
                        .map(|(k, v)| (k.clone(), expand_columns(v)))
                        .collect(),
                );
            };
            let names: Vec<String> = cols
                .iter()
                .map(|c| c.as_str().unwrap_or_default().to_owned())
                .collect();
            Value::Array(
                rows.iter()
                    .map(|r| {
                        let values = r.as_array().cloned().unwrap_or_default();
                        Value::Object(
                            names
                                .iter()
                                .cloned()
                                .zip(values.iter().map(expand_columns))
                                .collect(),
                        )
                    })
                    .collect(),
            )
        }
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), expand_columns(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(expand_columns).collect()),
        other => other.clone(),
    }
}

/// The compact columnar form of `text` when the whole of it is a JSON document holding at least one
/// array of objects with the same keys, it is shorter, and [`expand_columns`] gives the same value.
/// Numbers too long for an `f64` leave the text alone (they would not survive).
pub fn columnar(text: &str) -> Option<String> {
    let value = crate::truncate::densify::json_document(text)?;
    let columns = to_columns(&value);
    if columns == value || expand_columns(&columns) != value {
        return None;
    }
    let out = serde_json::to_string(&columns).ok()?;
    (out.len() < text.len()).then_some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn records_become_rows() {
        let text = r#"{"issues": [{"id": 1, "title": "a", "labels": []}, {"id": 2, "title": "b", "labels": ["x"]}, {"id": 3, "title": "c", "labels": []}], "total": 3}"#;
        let out = columnar(text).unwrap();
        assert_eq!(
            out,
            r#"{"issues":{"__columns__":["id","title","labels"],"__rows__":[[1,"a",[]],[2,"b",["x"]],[3,"c",[]]]},"total":3}"#
        );
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            expand_columns(&back),
            serde_json::from_str::<Value>(text).unwrap()
        );
        // Different keys, or too few rows: nothing to gain.
        assert_eq!(columnar(r#"[{"a":1},{"b":2},{"a":3}]"#), None);
        assert_eq!(columnar(r#"[{"a":1},{"a":2}]"#), None);
        // A document already using the columnar keys is rewritten only when it comes back exactly.
        let tricky = json!([{"__columns__": ["a"], "__rows__": [[1]]}, {"__columns__": ["a"], "__rows__": [[1]]}, {"__columns__": ["a"], "__rows__": [[1]]}]);
        let out = columnar(&tricky.to_string()).unwrap();
        assert_eq!(expand_columns(&serde_json::from_str(&out).unwrap()), tricky);
        let single =
            json!({"__columns__": ["a"], "__rows__": [[1]], "x": [{"b": 1}, {"b": 2}, {"b": 3}]});
        if let Some(out) = columnar(&single.to_string()) {
            assert_eq!(expand_columns(&serde_json::from_str(&out).unwrap()), single);
        }
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-1000i64..1000).prop_map(|n| json!(n)),
            "[a-z_]{0,6}".prop_map(Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec(("[a-c_]{1,11}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_round_trip_is_exact(v in value(), copies in 0usize..5) {
            // Repeat the value so arrays of same-keyed objects are common.
            let doc = Value::Array(vec![v; copies]);
            let text = doc.to_string();
            if let Some(out) = columnar(&text) {
                let back: Value = serde_json::from_str(&out).unwrap();
                prop_assert_eq!(expand_columns(&back), doc);
            }
        }
    }
}
