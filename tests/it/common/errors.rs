//! The error objects the spec fixes to the letter, by name: one assertion
//! each (code, message and whole `data`, through `assert_error_exact`), so
//! a suite says which error it expects instead of spelling it again.

use serde_json::{json, Value};

use super::assert::assert_error_exact;

/// `-32000` "Session not found" (no `data`).
#[track_caller]
pub fn session_not_found(e: &Value) {
    assert_error_exact(e, -32000, Some("Session not found"), None);
}

/// `-32000` "Session closed", reason `closed`.
#[track_caller]
pub fn session_closed(e: &Value) {
    assert_error_exact(
        e,
        -32000,
        Some("Session closed"),
        Some(json!({"reason": "closed"})),
    );
}

/// `-32003` "Caller does not own this session" (no `data`).
#[track_caller]
pub fn not_owner(e: &Value) {
    assert_error_exact(e, -32003, Some("Caller does not own this session"), None);
}

/// `-32602` with no `data` (the message is the decoder's).
#[track_caller]
pub fn invalid_params(e: &Value) {
    assert_error_exact(e, -32602, None, None);
}

/// `-32602` "Agent <alias> is not configured" (no `data`).
#[track_caller]
pub fn agent_not_configured(e: &Value, alias: &str) {
    let message = format!("Agent {alias} is not configured");
    assert_error_exact(e, -32602, Some(&message), None);
}

/// `-32010` "First call must be 'initialize'", reason `not_initialized`.
#[track_caller]
pub fn not_initialized(e: &Value) {
    assert_error_exact(
        e,
        -32010,
        Some("First call must be 'initialize'"),
        Some(json!({"reason": "not_initialized"})),
    );
}

/// `-32010` "Credential rejected", reason `credential_rejected`.
#[track_caller]
pub fn credential_rejected(e: &Value) {
    assert_error_exact(
        e,
        -32010,
        Some("Credential rejected"),
        Some(json!({"reason": "credential_rejected"})),
    );
}

/// `-32012` "Principal is not granted <grant> (required by <method>)",
/// reason `missing_grant`.
#[track_caller]
pub fn missing_grant(e: &Value, grant: &str, method: &str) {
    let message = format!("Principal is not granted {grant} (required by {method})");
    assert_error_exact(
        e,
        -32012,
        Some(&message),
        Some(json!({"reason": "missing_grant", "required": grant})),
    );
}

/// `-32012` "Permission revoked: the principal no longer resolves", reason `revoked`.
#[track_caller]
pub fn revoked(e: &Value) {
    assert_error_exact(
        e,
        -32012,
        Some("Permission revoked: the principal no longer resolves"),
        Some(json!({"reason": "revoked"})),
    );
}

/// `-32603` with reason `storage` and no other `data` (any message): a
/// rename blocked by a directory in the way. Windows reports that as
/// `ERROR_ACCESS_DENIED`, which is classed `storage_read_only` there.
#[track_caller]
pub fn storage_failed(e: &Value) {
    let reason = if cfg!(windows) {
        "storage_read_only"
    } else {
        "storage"
    };
    assert_error_exact(e, -32603, None, Some(json!({ "reason": reason })));
}

/// `-32000` "Session killed", reason `killed`.
#[track_caller]
pub fn session_killed(e: &Value) {
    let data = json!({"reason": "killed"});
    assert_error_exact(e, -32000, Some("Session killed"), Some(data));
}

/// `-32000` "Session deleted", reason `deleted`.
#[track_caller]
pub fn session_deleted(e: &Value) {
    let data = json!({"reason": "deleted"});
    assert_error_exact(e, -32000, Some("Session deleted"), Some(data));
}

/// `-32000` "No active turn for this session", reason `no_active_turn`.
#[track_caller]
pub fn no_active_turn(e: &Value) {
    let data = json!({"reason": "no_active_turn"});
    assert_error_exact(
        e,
        -32000,
        Some("No active turn for this session"),
        Some(data),
    );
}

/// `-32001` "Session limit reached", `data` `{"max": 64}`.
#[track_caller]
pub fn session_limit(e: &Value) {
    let data = json!({"max": 64});
    assert_error_exact(e, -32001, Some("Session limit reached"), Some(data));
}

/// `-32603` with exactly this message, reason `agent_failed`.
#[track_caller]
pub fn agent_failed(e: &Value, message: &str) {
    let data = json!({"reason": "agent_failed"});
    assert_error_exact(e, -32603, Some(message), Some(data));
}

/// `-32012` "Principal is not entitled to agent <agent>", reason `agent`.
#[track_caller]
pub fn not_entitled(e: &Value, agent: &str) {
    let message = format!("Principal is not entitled to agent {agent}");
    let data = json!({"reason": "agent", "agent": agent});
    assert_error_exact(e, -32012, Some(&message), Some(data));
}

/// `-32012` "Principal is not an admin (required by <method>)", reason `admin_only`.
#[track_caller]
pub fn not_admin(e: &Value, method: &str) {
    let message = format!("Principal is not an admin (required by {method})");
    let data = json!({"reason": "admin_only"});
    assert_error_exact(e, -32012, Some(&message), Some(data));
}

/// `-32012` "Parameter path is admin-only", reason `admin_only`.
#[track_caller]
pub fn path_admin_only(e: &Value) {
    let data = json!({"reason": "admin_only"});
    assert_error_exact(e, -32012, Some("Parameter path is admin-only"), Some(data));
}

/// `-32602` "File exceeds 10 MB limit (<size> bytes)", reason `file_too_large`.
#[track_caller]
pub fn file_too_large(e: &Value, size: u64) {
    let message = format!("File exceeds 10 MB limit ({size} bytes)");
    let data = json!({"reason": "file_too_large", "max_bytes": super::files::MAX_FILE});
    assert_error_exact(e, -32602, Some(&message), Some(data));
}

/// `-32004` "memory exceeded", `data` `{"limit": "memory", "max": max}`.
#[track_caller]
pub fn memory_exceeded(e: &Value, max: u64) {
    let data = json!({"limit": "memory", "max": max});
    assert_error_exact(e, -32004, Some("memory exceeded"), Some(data));
}

/// `-32602` "invalid configuration: <path>: <why>", `data` `{"path": path}`.
#[track_caller]
pub fn invalid_config(e: &Value, path: &str, why: &str) {
    let message = format!("invalid configuration: {path}: {why}");
    assert_error_exact(e, -32602, Some(&message), Some(json!({ "path": path })));
}

/// `-32602` "sets[<index>]: <why>" of `config/set-many`, `data` `{"index": index}`.
#[track_caller]
pub fn bad_entry(e: &Value, index: usize, why: &str) {
    let message = format!("sets[{index}]: {why}");
    assert_error_exact(e, -32602, Some(&message), Some(json!({ "index": index })));
}
