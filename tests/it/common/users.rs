//! Helpers of the configuration and authorization tests (tests/it/config_*.rs,
//! tests/it/authz_*.rs): config files written before start, and small JSON-RPC
//! conveniences; on Unix also the real OS users and groups and connecting
//! as another uid (`accounts.rs`, re-exported here).

use std::path::Path;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::Client;

#[cfg(unix)]
pub use super::accounts::*;

/// On Windows: no second principal to make (roster users are OS accounts
/// told apart by uid); the tests skip.
#[cfg(windows)]
pub struct Account;

/// Prints `SKIPPED` and gives `None` on Windows (see [`Account`]).
#[cfg(windows)]
pub fn two_principals() -> Option<(Account, super::start::Env)> {
    super::skip("a second principal is an OS account told apart by uid (Unix only)");
    None
}

#[cfg(windows)]
pub fn alice(_account: &Account, _env: &super::start::Env) -> Client {
    unreachable!("no Account is made on Windows")
}

/// The bytes of `<config_dir>/config.toml`.
pub fn config_bytes(config_dir: &Path) -> Vec<u8> {
    std::fs::read(config_dir.join("config.toml")).expect("reading config.toml")
}

/// SHA-256 of a pairing token as stored in `gateway.paired_tokens` (§6.7).
pub fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fixed, well-formed pairing token for configs written before start.
pub const ADMIN_TOKEN: &str = "zc_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

// ---------------------------------------------------------------------------
// JSON-RPC conveniences

/// `initialize` (optionally with a token); the whole answer frame.
pub fn initialize(c: &mut Client, token: Option<&str>) -> Value {
    let mut params = json!({"protocolVersion": 1});
    if let Some(t) = token {
        params["authToken"] = json!(t);
    }
    c.call_frame("initialize", params)
}

/// `config/set-many` from `(prop, value)` pairs; the whole answer frame.
pub fn set_many(c: &mut Client, sets: &[(&str, Value)]) -> Value {
    let sets: Vec<Value> = sets
        .iter()
        .map(|(p, v)| json!({"prop": p, "value": v}))
        .collect();
    c.call_frame("config/set-many", json!({ "sets": sets }))
}

/// `config/get` of one prop: its value.
pub fn get(c: &mut Client, prop: &str) -> Value {
    c.ok("config/get", json!({ "prop": prop }))["value"].clone()
}

/// A new pairing token, created by `admin` (`pairing/create`).
#[track_caller]
pub fn new_token(admin: &mut Client) -> String {
    let r = admin.ok("pairing/create", json!({}));
    r["token"]
        .as_str()
        .unwrap_or_else(|| panic!("pairing/create without a token: {r}"))
        .to_owned()
}

impl Client {
    /// `config/set` of one prop; the result.
    #[track_caller]
    pub fn config_set(&mut self, prop: &str, value: Value) -> Value {
        self.ok("config/set", json!({"prop": prop, "value": value}))
    }
}
