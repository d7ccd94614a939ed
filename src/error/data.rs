//! The `data` member of an error: its members in the order given (`reason`
//! first, as the spec writes them), each echoed value bounded so that no
//! error frame outgrows the frame limit (§3.1).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::Reason;
use crate::bounded::bound_text;
use crate::limits::MAX_ERROR_DATA_MEMBER_BYTES;

/// The `data` member of an error: an object whose members keep the order
/// they were given in (`reason` first, as the spec writes them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorData(pub Vec<(&'static str, Value)>);

impl ErrorData {
    /// `{"reason": reason}`.
    pub fn reason(reason: impl Into<Reason>) -> Self {
        Self(vec![("reason", Value::from(reason.into().as_str()))])
    }

    /// Adds one member. A member echoing what the peer sent is bounded
    /// (§3.1 "no frame over 8 MiB"): a string at
    /// [`MAX_ERROR_DATA_MEMBER_BYTES`], any other value whose JSON is longer
    /// becomes that JSON text, bounded.
    pub fn with(mut self, key: &'static str, value: impl Into<Value>) -> Self {
        self.0.push((key, bound_member(value.into())));
        self
    }
}

fn bound_member(value: Value) -> Value {
    match value {
        Value::String(s) if s.len() > MAX_ERROR_DATA_MEMBER_BYTES => {
            Value::String(bound_text(&s, MAX_ERROR_DATA_MEMBER_BYTES).into_owned())
        }
        v @ (Value::Array(_) | Value::Object(_)) => {
            let text = v.to_string();
            if text.len() > MAX_ERROR_DATA_MEMBER_BYTES {
                Value::String(bound_text(&text, MAX_ERROR_DATA_MEMBER_BYTES).into_owned())
            } else {
                v
            }
        }
        v => v,
    }
}

impl Serialize for ErrorData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
