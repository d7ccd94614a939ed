//! Principals, bindings and the live authorization state (§5.2, §6.1, §6.5).
//!
//! The accepted policy and the paired-token set live in one snapshot with a
//! generation number. The gate compares a binding's generation with the
//! current one (one atomic load per request) and re-resolves the binding
//! only when the policy moved.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::config::{Grant, Resolution};
pub use crate::config::{Policy, Principal, SHARED_OPERATOR_ID};
use crate::error::{AuthReason, Forbidden, RpcError};

/// What a connection authenticated with; replayed when the policy changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A pairing token, kept as its SHA-256 digest.
    Token(String),
    /// The peer's uid from the kernel.
    Uid(u32),
    /// No credential (Windows pipe, or the kernel query failed).
    None,
}

/// A connection's binding: who it is, under which policy generation.
#[derive(Debug)]
pub struct Binding {
    pub principal: Arc<Principal>,
    pub generation: u64,
    pub credential: Credential,
}

/// One accepted authorization state.
#[derive(Debug)]
pub struct AuthzSnapshot {
    pub generation: u64,
    pub policy: Policy,
    /// SHA-256 digests of the paired tokens (lowercase hex).
    pub tokens: Vec<String>,
}

/// The live authorization state of the daemon.
#[derive(Debug)]
pub struct AuthzState {
    /// Lock (3) of §6.8: held for reading across the checks and the write of
    /// a store step, for writing while a new policy is installed.
    pub state_lock: tokio::sync::RwLock<()>,
    generation: AtomicU64,
    current: RwLock<Arc<AuthzSnapshot>>,
    daemon_uid: Option<u32>,
    /// The generation, for those that act on a change at once (`state::revocation`).
    changed: tokio::sync::watch::Sender<u64>,
}

impl AuthzState {
    /// The initial state; `tokens` are digests (any case).
    pub fn new(policy: Policy, tokens: Vec<String>, daemon_uid: Option<u32>) -> Self {
        let tokens = tokens.into_iter().map(|t| t.to_ascii_lowercase()).collect();
        Self {
            state_lock: tokio::sync::RwLock::new(()),
            generation: AtomicU64::new(1),
            current: RwLock::new(Arc::new(AuthzSnapshot {
                generation: 1,
                policy,
                tokens,
            })),
            daemon_uid,
            changed: tokio::sync::watch::Sender::new(1),
        }
    }

    /// Sees each new generation as it is installed.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The current generation (one atomic load).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<AuthzSnapshot> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Installs a new policy and token set and bumps the generation.
    pub fn install(&self, policy: Policy, tokens: Vec<String>) {
        let tokens = tokens.into_iter().map(|t| t.to_ascii_lowercase()).collect();
        let mut cur = self.current.write().unwrap_or_else(|p| p.into_inner());
        let generation = cur.generation + 1;
        *cur = Arc::new(AuthzSnapshot {
            generation,
            policy,
            tokens,
        });
        self.generation.store(generation, Ordering::Release);
        drop(cur);
        self.changed.send_replace(generation);
    }

    /// Maps a credential to a principal under `snap` (the table of §5.2).
    pub fn resolve(
        &self,
        snap: &AuthzSnapshot,
        credential: &Credential,
    ) -> Result<Principal, RpcError> {
        let resolution = match credential {
            Credential::Token(digest) if snap.tokens.iter().any(|t| t == digest) => {
                Resolution::Bound(Principal::shared_operator())
            }
            Credential::Token(_) => Resolution::CredentialRejected,
            Credential::Uid(uid) => match self.daemon_uid {
                Some(daemon_uid) => snap.policy.resolve_uid(*uid, daemon_uid),
                None => Resolution::CredentialRejected,
            },
            Credential::None => snap.policy.resolve_no_uid(),
        };
        let principal = match resolution {
            Resolution::Bound(p) => p,
            Resolution::CredentialRejected => {
                return Err(RpcError::Auth(AuthReason::CredentialRejected))
            }
            Resolution::RosterRequired => return Err(RpcError::Auth(AuthReason::RosterRequired)),
        };
        if !principal.has_any_grant() {
            return Err(RpcError::Forbidden(Forbidden::NoGrants));
        }
        Ok(principal)
    }

    /// `binding` under the current policy (§6.5 steps 1–2): `None` when the
    /// generation did not move, else the credential replayed into a renewed
    /// binding, or the error that revokes it. The connection applies the
    /// verdict (`ConnCtx::refresh_binding`): this state never edits one.
    pub fn renew(&self, binding: &Binding) -> Result<Option<Arc<Binding>>, RpcError> {
        if binding.generation == self.generation() {
            return Ok(None);
        }
        let snap = self.snapshot();
        let principal = match self.resolve(&snap, &binding.credential) {
            Ok(p) if p.id == binding.principal.id => p,
            Err(_) if matches!(binding.credential, Credential::Token(_)) => {
                return Err(RpcError::Auth(AuthReason::TokenRevoked))
            }
            _ => return Err(RpcError::Forbidden(Forbidden::Revoked)),
        };
        Ok(Some(Arc::new(Binding {
            principal: Arc::new(principal),
            generation: snap.generation,
            credential: binding.credential.clone(),
        })))
    }
}

/// The one grant check (§6.3): `principal` holds `grant`, or the
/// `missing_grant` refusal naming it and `method`. The authz layer asks it
/// for every method's grant; the verbs that must check again under the
/// policy lock (a config write, a file's store step) ask it too.
pub fn require_grant(principal: &Principal, grant: Grant, method: &str) -> Result<(), Forbidden> {
    if principal.has(grant) {
        return Ok(());
    }
    Err(Forbidden::MissingGrant {
        required: grant.to_string(),
        method: method.to_owned(),
    })
}
