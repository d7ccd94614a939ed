//! The values a command line carries, checked when clap parses them: a
//! typo exits 2 at once with clap's message (naming the valid values where
//! there is a closed set), before any connection is made (docs/decisions.md,
//! "Everyday frictions").

use std::time::Duration;

use serde_json::Value;

/// `zeroclaw rpc --approve DECISION`: the decisions `session/approve` takes
/// without a replacement text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Decision {
    AllowOnce,
    AllowAlways,
    Reject,
}

impl Decision {
    /// The decision as `session/approve` spells it.
    pub fn wire(self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow_once",
            Decision::AllowAlways => "allow_always",
            Decision::Reject => "reject",
        }
    }
}

/// A JSON object (`zeroclaw rpc`'s PARAMS_JSON).
pub fn json_object(s: &str) -> Result<Value, String> {
    match serde_json::from_str(s) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("must be a JSON object".to_owned()),
        Err(e) => Err(format!("must be a JSON object: {e}")),
    }
}

/// Any JSON value (`--elicitation-reply`).
pub fn json_value(s: &str) -> Result<Value, String> {
    serde_json::from_str(s).map_err(|e| format!("must be JSON: {e}"))
}

/// A non-negative, finite number of seconds (`--timeout`).
pub fn seconds(s: &str) -> Result<Duration, String> {
    let t: f64 = s
        .parse()
        .map_err(|_| "must be a number of seconds".to_owned())?;
    Duration::try_from_secs_f64(t)
        .map_err(|_| "must be a non-negative number of seconds".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked() {
        assert!(json_object("{}").is_ok());
        assert!(json_object("[]").is_err());
        assert!(json_object("{").is_err());
        assert!(json_value("null").is_ok());
        assert!(json_value("nul").is_err());
        assert_eq!(seconds("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["-1", "NaN", "inf", "x", ""] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }
}
