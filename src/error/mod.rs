//! The JSON-RPC error type of the daemon and its wire codes.
//!
//! This is the one place where an error becomes a `code`, a `message` and a
//! `data` object (§7). Domain modules keep their own error enums and
//! convert into [`RpcError`]; nothing else in the crate spells a numeric code.
//! The vocabularies of `data` live beside it: `reason.rs` (every
//! `data.reason` and `data.limit`, closed enums) and `data.rs` (the ordered,
//! bounded `data` object).

use std::borrow::Cow;

use serde_json::{json, Value};

use crate::agent::ProviderFailure;
use crate::bounded::bound_text;
use crate::limits::{MAX_ECHOED_NAME_BYTES, MAX_FRAME_BYTES};
use crate::storage_fault::StorageFault;

mod data;
mod reason;

pub use data::ErrorData;
pub use reason::{AuthReason, Forbidden, InternalReason, LimitName, Reason};

/// Every error the daemon can answer with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RpcError {
    #[error("Parse error: {0}")]
    Parse(String),
    #[error("Invalid request: {0}")]
    InvalidEnvelope(Cow<'static, str>),
    #[error("Invalid request: batch arrays are not supported")]
    Batch,
    #[error("Frame exceeds {MAX_FRAME_BYTES} bytes")]
    FrameTooLarge,
    #[error("Unknown method: {0}")]
    MethodNotFound(String),
    /// `-32602`; `data` carries `reason` (and its members) or `index`/`prop`/`path`.
    #[error("{message}")]
    InvalidParams {
        message: String,
        data: Option<ErrorData>,
    },
    /// `-32603`; `reason` is absent for unexpected errors.
    #[error("{message}")]
    Internal {
        message: String,
        reason: Option<InternalReason>,
    },
    /// `-32000`; `data` is absent for a plain "Session not found".
    #[error("{message}")]
    SessionNotFound {
        message: Cow<'static, str>,
        data: Option<ErrorData>,
    },
    #[error("Session limit reached")]
    SessionLimit { max: u64 },
    #[error("Session busy: {detail}")]
    SessionBusy {
        detail: &'static str,
        data: ErrorData,
    },
    #[error("Caller does not own this session")]
    NotOwned,
    /// `-32004`: `limit` is the §7.2 limit name.
    #[error("{}", limit_message(limit))]
    LimitExceeded { limit: LimitName, max: u64 },
    #[error("{}", .0.message())]
    Auth(AuthReason),
    #[error("Protocol version mismatch: server=1, client={requested}")]
    VersionMismatch { requested: Value },
    #[error("{}", forbidden_message(.0))]
    Forbidden(Forbidden),
    /// `-32603` of a turn its model server failed (backend `openai`):
    /// `data.reason` names the class, `data.status` an HTTP error's status.
    #[error("{}", .0.message)]
    Provider(ProviderFailure),
}

fn limit_message(limit: &LimitName) -> Cow<'static, str> {
    match limit {
        LimitName::Connections => Cow::Borrowed("Too many connections"),
        other => Cow::Owned(format!("{} exceeded", other.as_str())),
    }
}

fn forbidden_message(f: &Forbidden) -> String {
    match f {
        Forbidden::MissingGrant { required, method } => {
            format!("Principal is not granted {required} (required by {method})")
        }
        Forbidden::AdminOnly { method } => {
            format!("Principal is not an admin (required by {method})")
        }
        Forbidden::AdminOnlyParam { param } => format!("Parameter {param} is admin-only"),
        Forbidden::Agent { alias } => format!("Principal is not entitled to agent {alias}"),
        Forbidden::ConfigPath {
            index: Some(i),
            prop,
        } => {
            format!("sets[{i}]: principal is not granted config write access to {prop}")
        }
        Forbidden::ConfigPath { index: None, prop } => {
            format!("principal is not granted config write access to {prop}")
        }
        Forbidden::Revoked => "Permission revoked: the principal no longer resolves".to_owned(),
        Forbidden::LocalOnly { method } => {
            let family = if method.starts_with("file/upload/") {
                "file/upload/*"
            } else {
                method
            };
            format!("{family} is only available on local connections")
        }
        Forbidden::ChannelRequired { method } => {
            format!("{method} needs a connection that stays open: use the WebSocket")
        }
        Forbidden::NoGrants => {
            "Authenticated, but no permission profile grants this identity anything".to_owned()
        }
    }
}

impl RpcError {
    /// The JSON-RPC error code (§7.1).
    pub fn code(&self) -> i32 {
        match self {
            Self::Parse(_) => -32700,
            Self::InvalidEnvelope(_) | Self::Batch | Self::FrameTooLarge => -32600,
            Self::MethodNotFound(_) => -32601,
            Self::InvalidParams { .. } => -32602,
            Self::Internal { .. } | Self::Provider(_) => -32603,
            Self::SessionNotFound { .. } => -32000,
            Self::SessionLimit { .. } => -32001,
            Self::SessionBusy { .. } => -32002,
            Self::NotOwned => -32003,
            Self::LimitExceeded { .. } => -32004,
            Self::Auth(_) => -32010,
            Self::VersionMismatch { .. } => -32011,
            Self::Forbidden(_) => -32012,
        }
    }

    /// The `data` member (§7.2), if this error has one.
    pub fn data(&self) -> Option<ErrorData> {
        fn reason(r: impl Into<Reason>) -> ErrorData {
            ErrorData::reason(r)
        }
        match self {
            Self::Parse(_) | Self::MethodNotFound(_) | Self::NotOwned => None,
            Self::InvalidEnvelope(_) => Some(reason(Reason::InvalidEnvelope)),
            Self::Batch => Some(reason(Reason::Batch)),
            Self::FrameTooLarge => {
                Some(reason(Reason::FrameTooLarge).with("max_frame_bytes", MAX_FRAME_BYTES))
            }
            Self::InvalidParams { data, .. } | Self::SessionNotFound { data, .. } => data.clone(),
            Self::Internal { reason: r, .. } => r.map(reason),
            Self::SessionLimit { max } => Some(ErrorData::default().with("max", *max)),
            Self::SessionBusy { data, .. } => Some(data.clone()),
            Self::LimitExceeded { limit, max } => Some(
                ErrorData::default()
                    .with("limit", limit.as_str())
                    .with("max", *max),
            ),
            Self::Auth(r) => Some(reason(*r)),
            Self::Provider(f) => {
                let data = reason(Reason::Provider(f.reason));
                Some(match f.status {
                    Some(status) => data.with("status", status),
                    None => data,
                })
            }
            Self::VersionMismatch { requested } => Some(
                ErrorData::default()
                    .with("supported", json!([1]))
                    .with("requested", requested.clone()),
            ),
            Self::Forbidden(f) => Some(match f {
                Forbidden::MissingGrant { required, .. } => {
                    reason(Reason::MissingGrant).with("required", required.as_str())
                }
                Forbidden::AdminOnly { .. } | Forbidden::AdminOnlyParam { .. } => {
                    reason(Reason::AdminOnly)
                }
                Forbidden::Agent { alias } => reason(Reason::Agent).with("agent", alias.as_str()),
                Forbidden::ConfigPath {
                    index: Some(i),
                    prop,
                } => reason(Reason::ConfigPath)
                    .with("index", *i)
                    .with("prop", prop.as_str()),
                Forbidden::ConfigPath { index: None, prop } => {
                    reason(Reason::ConfigPath).with("prop", prop.as_str())
                }
                Forbidden::Revoked => reason(Reason::Revoked),
                Forbidden::LocalOnly { .. } => reason(Reason::LocalOnly),
                Forbidden::ChannelRequired { .. } => reason(Reason::ChannelRequired),
                Forbidden::NoGrants => reason(Reason::NoGrants),
            }),
        }
    }

    /// A `-32602` without `data`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::InvalidParams {
            message: message.into(),
            data: None,
        }
    }

    /// A `-32602` with a `data.reason` and extra members.
    pub fn invalid_params_reason(message: impl Into<String>, data: ErrorData) -> Self {
        Self::InvalidParams {
            message: message.into(),
            data: Some(data),
        }
    }

    /// A `-32603` with an optional `data.reason`.
    pub fn internal(message: impl Into<String>, reason: Option<InternalReason>) -> Self {
        Self::Internal {
            message: message.into(),
            reason,
        }
    }

    /// `-32603` `storage`: a storage failure that is not an environment fault.
    pub fn storage(message: impl Into<String>) -> Self {
        Self::storage_fault(StorageFault::Other, message)
    }

    /// `-32603` with the `data.reason` of a storage failure of class `fault`.
    pub fn storage_fault(fault: StorageFault, message: impl Into<String>) -> Self {
        Self::internal(message, Some(InternalReason::of_storage(fault)))
    }

    /// `-32603` for a failed file system operation, classified by its error.
    pub fn storage_io(e: &std::io::Error, message: impl Into<String>) -> Self {
        Self::storage_fault(StorageFault::of_io(e), message)
    }

    /// `-32601` for `method`, its name bounded at [`MAX_ECHOED_NAME_BYTES`]
    /// so that the answer to an 8 MiB method name is not itself over 8 MiB.
    pub fn method_not_found(method: &str) -> Self {
        Self::MethodNotFound(bound_text(method, MAX_ECHOED_NAME_BYTES).into_owned())
    }

    /// Plain `-32000` "Session not found".
    pub fn session_not_found() -> Self {
        Self::SessionNotFound {
            message: Cow::Borrowed("Session not found"),
            data: None,
        }
    }

    /// `-32000` with a `data.reason`.
    pub fn session_gone(message: &'static str, reason: Reason) -> Self {
        Self::SessionNotFound {
            message: Cow::Borrowed(message),
            data: Some(ErrorData::reason(reason)),
        }
    }
}

impl From<crate::store::StoreError> for RpcError {
    /// Every storage failure is `-32603` `storage` (§7.2), or
    /// `storage_full` / `storage_read_only` for those environment faults.
    fn from(e: crate::store::StoreError) -> Self {
        Self::storage_fault(e.fault(), format!("storage failure: {e}"))
    }
}

impl From<crate::memory::OverBudget> for RpcError {
    /// The budget is spent: `-32004` `{"limit":"memory"}` with the budget.
    fn from(e: crate::memory::OverBudget) -> Self {
        Self::LimitExceeded {
            limit: LimitName::Memory,
            max: e.max,
        }
    }
}

impl From<crate::config::ConfigError> for RpcError {
    fn from(e: crate::config::ConfigError) -> Self {
        use crate::config::ConfigError as C;
        let message = e.to_string();
        let with_index = |index: Option<usize>| match index {
            Some(i) => ErrorData::default().with("index", i),
            None => ErrorData::default(),
        };
        match e {
            C::InvalidEntry { index, prop, .. } => Self::InvalidParams {
                message,
                data: Some(with_index(index).with("prop", prop)),
            },
            C::Invalid { index, path, .. } => Self::InvalidParams {
                message,
                data: Some(with_index(index).with("path", path)),
            },
            C::Forbidden { index, prop } => Self::Forbidden(Forbidden::ConfigPath { index, prop }),
            C::ConfigChanged => Self::internal(message, Some(InternalReason::ConfigChanged)),
            C::Storage { fault, .. } => Self::storage_fault(fault, message),
            C::Startup(_) | C::StartupIo { .. } => Self::internal(message, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_too_large_has_the_spec_bytes() {
        let e = RpcError::FrameTooLarge;
        assert_eq!(e.code(), -32600);
        assert_eq!(e.to_string(), "Frame exceeds 8388608 bytes");
        assert_eq!(
            serde_json::to_string(&e.data()).unwrap(),
            r#"{"reason":"frame_too_large","max_frame_bytes":8388608}"#
        );
    }

    #[test]
    fn messages_follow_the_spec() {
        assert_eq!(
            RpcError::Auth(AuthReason::NotInitialized).to_string(),
            "First call must be 'initialize'"
        );
        assert_eq!(
            RpcError::VersionMismatch {
                requested: json!(2)
            }
            .to_string(),
            "Protocol version mismatch: server=1, client=2"
        );
        assert_eq!(
            RpcError::LimitExceeded {
                limit: LimitName::Connections,
                max: 256
            }
            .to_string(),
            "Too many connections"
        );
        assert_eq!(
            RpcError::Forbidden(Forbidden::MissingGrant {
                required: "config:update".into(),
                method: "config/set".into()
            })
            .to_string(),
            "Principal is not granted config:update (required by config/set)"
        );
        assert_eq!(
            RpcError::Forbidden(Forbidden::LocalOnly {
                method: "file/upload/begin".into()
            })
            .to_string(),
            "file/upload/* is only available on local connections"
        );
    }
}
