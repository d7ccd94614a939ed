//! Params of the protocol additions: each method decodes its own
//! `#[derive(Deserialize)]` struct whose members are [`Member`]s, then
//! judges each member by name, so every bad member is `-32602` whose message
//! and `data.member` name it and a client (or its developer) knows exactly
//! what to fix. serde's own message would name the type, not the member.

use serde::de::{Deserialize, DeserializeOwned, Deserializer};
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

/// The params struct `T` of one method, from the params object. `T` is
/// `#[serde(default)]` and made of [`Member`]s, which never fail to decode.
pub fn decode<T: DeserializeOwned>(req: &Request) -> Result<T, RpcError> {
    serde_json::from_value(Value::Object(object(req)?))
        .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}

/// `-32602` for `member`.
pub fn bad(member: &'static str, rule: &str) -> RpcError {
    RpcError::InvalidParams {
        message: format!("{member} {rule}"),
        data: Some(ErrorData::default().with("member", member)),
    }
}

/// One member as decoded: absent (or `null`), of the type the method wants,
/// or of another type, kept until the handler judges it by name.
#[derive(Debug, Default)]
pub enum Member<T> {
    /// Not sent, or `null`.
    #[default]
    Absent,
    /// Sent with the wanted type.
    Given(T),
    /// Sent with another type.
    Wrong,
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Member<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => Self::Absent,
            v => serde_json::from_value(v).map_or(Self::Wrong, Self::Given),
        })
    }
}

/// What a member of this type must be, as the `-32602` message says it.
pub trait Rule {
    /// The rule after the member's name.
    const RULE: &'static str;
}

impl Rule for String {
    const RULE: &'static str = "must be a string";
}

impl Rule for bool {
    const RULE: &'static str = "must be a boolean";
}

impl<T: Rule> Member<T> {
    /// An optional member named `member`.
    pub fn opt(self, member: &'static str) -> Result<Option<T>, RpcError> {
        match self {
            Self::Absent => Ok(None),
            Self::Given(v) => Ok(Some(v)),
            Self::Wrong => Err(bad(member, T::RULE)),
        }
    }

    /// A required member named `member`.
    pub fn required(self, member: &'static str) -> Result<T, RpcError> {
        self.opt(member)?.ok_or_else(|| bad(member, "is required"))
    }
}

impl Member<u64> {
    /// An optional integer member named `member` within `lo..=hi`.
    pub fn within(self, member: &'static str, lo: u64, hi: u64) -> Result<Option<u64>, RpcError> {
        match self {
            Self::Absent => Ok(None),
            Self::Given(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(bad(member, &format!("must be an integer in {lo}..={hi}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct P {
        name: Member<String>,
        flag: Member<bool>,
        n: Member<u64>,
    }

    fn decode_text(text: &str) -> P {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn members_are_judged_by_name() {
        let p = decode_text(r#"{"name": 3, "flag": true, "n": 7}"#);
        let e = p.name.opt("name").unwrap_err();
        assert_eq!(e.to_string(), "name must be a string");
        assert_eq!(p.flag.opt("flag").unwrap(), Some(true));
        let e = p.n.within("n", 1, 5).unwrap_err();
        assert_eq!(e.to_string(), "n must be an integer in 1..=5");
        let p = decode_text(r#"{"n": -1}"#);
        assert!(p.n.within("n", 0, 5).is_err());
        let p = decode_text("{}");
        assert_eq!(
            p.name.required("name").unwrap_err().to_string(),
            "name is required"
        );
    }
}
