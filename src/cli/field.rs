//! A member of a daemon's answer as display text, the way every command
//! shows one.

use serde_json::Value;

/// Member `k` of `v` as display text: a string as it is, any other value
/// as compact JSON, a missing one as "".
pub fn field_text(v: &Value, k: &str) -> String {
    v.get(k)
        .map(|x| {
            x.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| x.to_string())
        })
        .unwrap_or_default()
}
