//! Params of the protocol additions, member by member: every bad member is
//! `-32602` whose message and `data.member` name it, so a client (or its
//! developer) knows exactly what to fix.

use serde_json::{Map, Value};

use crate::error::{ErrorData, RpcError};
use crate::request::Request;

/// The params object (absent → empty). A `null` member counts as absent (§1.3).
pub fn object(req: &Request) -> Result<Map<String, Value>, RpcError> {
    let text = req.raw_params().unwrap_or("{}");
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(mut m)) => {
            m.retain(|_, v| !v.is_null());
            Ok(m)
        }
        _ => Err(RpcError::invalid_params("params must be an object")),
    }
}

/// `-32602` for `member`.
pub fn bad(member: &'static str, rule: &str) -> RpcError {
    RpcError::InvalidParams {
        message: format!("{member} {rule}"),
        data: Some(ErrorData::default().with("member", member)),
    }
}

/// An optional string member.
pub fn opt_str(m: &Map<String, Value>, member: &'static str) -> Result<Option<String>, RpcError> {
    match m.get(member) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(member, "must be a string")),
    }
}

/// A required string member.
pub fn req_str(m: &Map<String, Value>, member: &'static str) -> Result<String, RpcError> {
    opt_str(m, member)?.ok_or_else(|| bad(member, "is required"))
}

/// An optional integer member within `lo..=hi`.
pub fn opt_int(
    m: &Map<String, Value>,
    member: &'static str,
    lo: u64,
    hi: u64,
) -> Result<Option<u64>, RpcError> {
    match m.get(member) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(bad(member, &format!("must be an integer in {lo}..={hi}"))),
        },
    }
}

/// An optional boolean member.
pub fn opt_bool(m: &Map<String, Value>, member: &'static str) -> Result<Option<bool>, RpcError> {
    match m.get(member) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(bad(member, "must be a boolean")),
    }
}
