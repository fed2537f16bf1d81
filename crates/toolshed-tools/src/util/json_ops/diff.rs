//! `diff`: two values compared structurally, the result an RFC 6902 JSON Patch.
//!
//! Objects are compared key by key, arrays index by index. When an array grows, the new
//! elements are added at their indices in order; when it shrinks, the surplus is removed from
//! the highest index down, so every operation is valid when the patch is applied in order.
//! There is no move or copy detection: inserting at the front of an array shows up as a
//! replace of every element and an add at the end. That is a longer patch than an LCS diff
//! would give, but it is predictable and linear in the size of the documents.

use serde_json::{Map, Value, json};
use toolshed_core::ToolOutput;

/// At most this many changes are reported.
pub(super) const MAX_CHANGES: usize = 1000;

/// The changes that turn `left` into `right`, and whether the list was cut at
/// [`MAX_CHANGES`].
pub(super) fn diff(left: &Value, right: &Value) -> (Vec<Value>, bool) {
    let mut differ = Differ {
        changes: Vec::new(),
        truncated: false,
        path: String::new(),
    };
    differ.value(left, right);
    (differ.changes, differ.truncated)
}

struct Differ {
    changes: Vec<Value>,
    truncated: bool,
    /// The JSON pointer of the values being compared.
    path: String,
}

impl Differ {
    fn push(&mut self, change: Value) {
        if self.changes.len() >= MAX_CHANGES {
            self.truncated = true;
        } else {
            self.changes.push(change);
        }
    }

    fn value(&mut self, left: &Value, right: &Value) {
        if self.truncated {
            return;
        }
        match (left, right) {
            (Value::Object(l), Value::Object(r)) => self.object(l, r),
            (Value::Array(l), Value::Array(r)) => self.array(l, r),
            _ if same(left, right) => {}
            _ => self.push(json!({"op": "replace", "path": self.path, "value": right})),
        }
    }

    fn object(&mut self, left: &Map<String, Value>, right: &Map<String, Value>) {
        for (key, l) in left {
            let len = self.enter(key);
            match right.get(key) {
                Some(r) => self.value(l, r),
                None => self.push(json!({"op": "remove", "path": self.path})),
            }
            self.path.truncate(len);
        }
        for (key, r) in right {
            if !left.contains_key(key) {
                let len = self.enter(key);
                self.push(json!({"op": "add", "path": self.path, "value": r}));
                self.path.truncate(len);
            }
        }
    }

    fn array(&mut self, left: &[Value], right: &[Value]) {
        for (i, (l, r)) in left.iter().zip(right).enumerate() {
            let len = self.enter(&i.to_string());
            self.value(l, r);
            self.path.truncate(len);
        }
        for (i, r) in right.iter().enumerate().skip(left.len()) {
            let len = self.enter(&i.to_string());
            self.push(json!({"op": "add", "path": self.path, "value": r}));
            self.path.truncate(len);
        }
        for i in (right.len()..left.len()).rev() {
            let len = self.enter(&i.to_string());
            self.push(json!({"op": "remove", "path": self.path}));
            self.path.truncate(len);
        }
    }

    /// Appends one pointer segment (escaped per RFC 6901) and returns the length to restore.
    fn enter(&mut self, segment: &str) -> usize {
        let len = self.path.len();
        self.path.push('/');
        self.path
            .push_str(&segment.replace('~', "~0").replace('/', "~1"));
        len
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub(super) fn same(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(l), Value::Number(r)) => {
            if l == r {
                return true;
            }
            match (l.as_i64(), r.as_i64(), l.as_u64(), r.as_u64()) {
                (Some(a), Some(b), _, _) => a == b,
                (_, _, Some(a), Some(b)) => a == b,
                _ => l.as_f64() == r.as_f64(),
            }
        }
        (Value::Array(l), Value::Array(r)) => {
            l.len() == r.len() && l.iter().zip(r).all(|(a, b)| same(a, b))
        }
        (Value::Object(l), Value::Object(r)) => {
            l.len() == r.len() && l.iter().all(|(k, a)| r.get(k).is_some_and(|b| same(a, b)))
        }
        _ => left == right,
    }
}

pub(super) fn diff_output(left: &Value, right: &Value) -> ToolOutput {
    let (changes, truncated) = diff(left, right);
    let equal = changes.is_empty();
    let mut text = if equal {
        "Equal: no differences.".to_string()
    } else if truncated {
        format!(
            "Different: the first {MAX_CHANGES} changes (more exist; diff smaller parts to see \
             them), as a JSON Patch:"
        )
    } else {
        format!(
            "Different: {} change{} as a JSON Patch:",
            changes.len(),
            if changes.len() == 1 { "" } else { "s" }
        )
    };
    for change in &changes {
        text.push('\n');
        text.push_str(&super::compact(change));
    }
    ToolOutput::text_and_structured(
        text,
        json!({
            "equal": equal,
            "count": changes.len(),
            "changes": changes,
            "truncated": truncated,
        }),
    )
}
