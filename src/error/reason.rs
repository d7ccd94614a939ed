//! The closed vocabularies of an error's `data`: every `data.reason`
//! (§7.2) and every `data.limit`, each spelled once in its `as_str`,
//! and the reasons of `-32012` with their members. Which code and message
//! each becomes is `mod.rs`'s job.

use crate::agent::ProviderReason;
use crate::storage_fault::StorageFault;

/// Every `data.reason` the daemon answers with (§7.2), mapped to its
/// wire value here and nowhere else. The reasons of `-32010` and `-32603`
/// keep their own enums (they also choose the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Auth(AuthReason),
    Internal(InternalReason),
    /// `-32603` of a model server failure (backend `openai`, docs/agents.md).
    Provider(ProviderReason),
    // -32600
    InvalidEnvelope,
    Batch,
    FrameTooLarge,
    // -32602
    UnknownUpload,
    OffsetMismatch,
    ExceedsDeclaredSize,
    Incomplete,
    Sha256Mismatch,
    FileTooLarge,
    RequestTooLarge,
    PathNotAllowed,
    // -32000
    UnsupportedInteractionSurface,
    Closed,
    Killed,
    Deleted,
    SessionChanged,
    // -32002
    QueueFull,
    QueueTimeout,
    /// `session/attach`: the session has its most attached clients.
    TooManyClients,
    // -32000 (`session/cancel`)
    NoActiveTurn,
    // -32012
    MissingGrant,
    AdminOnly,
    Agent,
    ConfigPath,
    Revoked,
    LocalOnly,
    ChannelRequired,
    NoGrants,
}

impl Reason {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth(r) => r.as_str(),
            Self::Internal(r) => r.as_str(),
            Self::Provider(r) => match r {
                ProviderReason::Unreachable => "provider_unreachable",
                ProviderReason::Error => "provider_error",
                ProviderReason::Timeout => "provider_timeout",
                ProviderReason::Protocol => "provider_protocol",
            },
            Self::InvalidEnvelope => "invalid_envelope",
            Self::Batch => "batch",
            Self::FrameTooLarge => "frame_too_large",
            Self::UnknownUpload => "unknown_upload",
            Self::OffsetMismatch => "offset_mismatch",
            Self::ExceedsDeclaredSize => "exceeds_declared_size",
            Self::Incomplete => "incomplete",
            Self::Sha256Mismatch => "sha256_mismatch",
            Self::FileTooLarge => "file_too_large",
            Self::RequestTooLarge => "request_too_large",
            Self::PathNotAllowed => "path_not_allowed",
            Self::UnsupportedInteractionSurface => "unsupported_interaction_surface",
            Self::Closed => "closed",
            Self::Killed => "killed",
            Self::Deleted => "deleted",
            Self::SessionChanged => "session_changed",
            Self::QueueFull => "queue_full",
            Self::QueueTimeout => "queue_timeout",
            Self::TooManyClients => "too_many_clients",
            Self::NoActiveTurn => "no_active_turn",
            Self::MissingGrant => "missing_grant",
            Self::AdminOnly => "admin_only",
            Self::Agent => "agent",
            Self::ConfigPath => "config_path",
            Self::Revoked => "revoked",
            Self::LocalOnly => "local_only",
            Self::ChannelRequired => "channel_required",
            Self::NoGrants => "no_grants",
        }
    }
}

impl From<AuthReason> for Reason {
    fn from(r: AuthReason) -> Self {
        Self::Auth(r)
    }
}

impl From<InternalReason> for Reason {
    fn from(r: InternalReason) -> Self {
        Self::Internal(r)
    }
}

/// The limit names of `-32004` (§7.2, plus `memory`: docs/reliability.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitName {
    Connections,
    Memory,
    RequestBytesInFlight,
    RequestsInFlight,
    StagedBytes,
    UploadsPerConnection,
}

impl LimitName {
    /// The wire value of `data.limit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connections => "connections",
            Self::Memory => "memory",
            Self::RequestBytesInFlight => "request_bytes_in_flight",
            Self::RequestsInFlight => "requests_in_flight",
            Self::StagedBytes => "staged_bytes",
            Self::UploadsPerConnection => "uploads_per_connection",
        }
    }
}

/// Reasons of `-32010` (§7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthReason {
    NotInitialized,
    CredentialRejected,
    UnknownAuthProvider,
    RosterRequired,
    TokenRequired,
    TokenRevoked,
}

impl AuthReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotInitialized => "not_initialized",
            Self::CredentialRejected => "credential_rejected",
            Self::UnknownAuthProvider => "unknown_auth_provider",
            Self::RosterRequired => "roster_required",
            Self::TokenRequired => "token_required",
            Self::TokenRevoked => "token_revoked",
        }
    }

    pub(super) fn message(self) -> &'static str {
        match self {
            Self::NotInitialized => "First call must be 'initialize'",
            Self::CredentialRejected => "Credential rejected",
            Self::UnknownAuthProvider => "Unknown auth provider",
            Self::RosterRequired => {
                "A local user roster is configured: connect from a mapped uid or present authToken"
            }
            Self::TokenRequired => "Remote connections must present authToken",
            Self::TokenRevoked => "Pairing token revoked: re-pair and re-initialize",
        }
    }
}

/// Reasons of `-32603` (§7.2, plus the two storage classes of
/// `src/storage_fault.rs`, this project's extension: docs/decisions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InternalReason {
    /// A storage failure of no more specific class.
    Storage,
    /// The file system holding the config or data dir is full.
    StorageFull,
    /// The config or data dir (or a file in it) cannot be written.
    StorageReadOnly,
    ResponseTooLarge,
    AgentFailed,
    ConfigChanged,
}

impl InternalReason {
    /// The `data.reason` of a storage failure of class `fault`.
    pub fn of_storage(fault: StorageFault) -> Self {
        match fault {
            StorageFault::Full => Self::StorageFull,
            StorageFault::ReadOnly => Self::StorageReadOnly,
            StorageFault::Corrupt | StorageFault::Other => Self::Storage,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Storage => "storage",
            Self::StorageFull => "storage_full",
            Self::StorageReadOnly => "storage_read_only",
            Self::ResponseTooLarge => "response_too_large",
            Self::AgentFailed => "agent_failed",
            Self::ConfigChanged => "config_changed",
        }
    }
}

/// Reasons of `-32012` (§7.2), with their members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forbidden {
    MissingGrant { required: String, method: String },
    AdminOnly { method: String },
    AdminOnlyParam { param: &'static str },
    Agent { alias: String },
    ConfigPath { index: Option<usize>, prop: String },
    Revoked,
    LocalOnly { method: String },
    ChannelRequired { method: String },
    NoGrants,
}
