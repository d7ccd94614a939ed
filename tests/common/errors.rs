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

/// `-32603` with reason `storage` and no other `data` (any message).
#[track_caller]
pub fn storage_failed(e: &Value) {
    assert_error_exact(e, -32603, None, Some(json!({"reason": "storage"})));
}
