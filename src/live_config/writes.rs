//! The config writes a client asks for, each one verb running the pipeline
//! of §8.16 in its order: write lock, the caller re-resolved under the lock
//! (step 3), every prop checked against its write paths, staging into one
//! candidate, validation, derived views, one atomic commit, install. Any
//! failure leaves the file and the running config as they were. Pairing
//! (§6.7) runs steps 2, 3, 8 and 9 the same way, so a revocation is on disk
//! before it takes effect.

use std::sync::Arc;

use serde_json::Value;

use super::{random_bytes, LiveConfig};
use crate::authz::{require_grant, Binding};
use crate::config::{
    check_write_path, check_write_paths, stage_many, stage_one, token_digest, token_from_bytes,
    Config, Grant, Policy, Principal, Resource, Verb,
};
use crate::conn_state::Conn;
use crate::error::{ErrorData, Forbidden, RpcError};

/// Who asks for a write: the connection, the binding its request carried
/// (re-resolved under the lock: a revoked caller is refused), and the
/// method a refusal names.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    pub conn: &'a Conn,
    pub binding: &'a Arc<Binding>,
    pub method: &'static str,
}

/// A new pairing token and the digest `gateway.paired_tokens` keeps.
#[derive(Debug)]
pub struct Paired {
    pub token: String,
    pub digest: String,
}

impl LiveConfig {
    /// Step 3: the caller under the current policy, still holding `config:update`.
    fn may_update(&self, w: Writer<'_>) -> Result<Arc<Principal>, RpcError> {
        let binding = w.conn.refresh_binding(&self.authz, w.binding)?;
        let g = Grant(Resource::Config, Verb::Update);
        require_grant(&binding.principal, g, w.method).map_err(RpcError::Forbidden)?;
        Ok(binding.principal.clone())
    }

    /// Step 3 for pairing: the caller must still resolve to an admin.
    fn still_admin(&self, w: Writer<'_>) -> Result<(), RpcError> {
        let binding = w.conn.refresh_binding(&self.authz, w.binding)?;
        if binding.principal.admin {
            Ok(())
        } else {
            Err(RpcError::Forbidden(Forbidden::Revoked))
        }
    }

    /// `config/set`: one prop.
    pub async fn set_prop(&self, w: Writer<'_>, prop: &str, value: &Value) -> Result<(), RpcError> {
        let lock = self.lock().await;
        let principal = self.may_update(w)?;
        check_write_path(&principal, prop)?;
        let candidate = stage_one(&self.current(), prop, value)?;
        let policy = Policy::from_config(&candidate);
        self.commit(&lock, candidate, policy, &[prop.to_owned()])
            .await
    }

    /// `config/set-many`: every prop or none; the props as staged.
    pub async fn set_props(
        &self,
        w: Writer<'_>,
        sets: &[(String, Value)],
    ) -> Result<Vec<String>, RpcError> {
        let lock = self.lock().await;
        let principal = self.may_update(w)?;
        check_write_paths(&principal, sets.iter().map(|(p, _)| p.as_str()))?;
        let (candidate, props) = stage_many(&self.current(), sets)?;
        let policy = Policy::from_config(&candidate);
        self.commit(&lock, candidate, policy, &props).await?;
        Ok(props)
    }

    /// `config/replace`: the whole file becomes `text` when it loads and is
    /// valid (every error in `data.errors` otherwise) and the file still
    /// holds the bytes whose SHA-256 is `base_sha256`; the new file's SHA-256.
    pub async fn replace_text(
        &self,
        w: Writer<'_>,
        text: String,
        base_sha256: &str,
    ) -> Result<String, RpcError> {
        let lock = self.lock().await;
        self.may_update(w)?;
        let candidate = Config::check_toml_text(&text).map_err(|errors| {
            let message = match errors.as_slice() {
                [one] => one.clone(),
                [first, ..] => format!("{first} (and {} more)", errors.len() - 1),
                [] => "invalid configuration".to_owned(),
            };
            RpcError::InvalidParams {
                message,
                data: Some(ErrorData::default().with("errors", errors)),
            }
        })?;
        let policy = Policy::from_config(&candidate);
        let sha = crate::hex::sha256(text.as_bytes());
        self.replace(&lock, text, base_sha256, candidate, policy)
            .await?;
        Ok(sha)
    }

    /// `pairing/create`: a new token, its digest committed before it is handed out.
    pub async fn pair(&self, w: Writer<'_>) -> Result<Paired, RpcError> {
        let lock = self.lock().await;
        self.still_admin(w)?;
        let token = token_from_bytes(&random_bytes()?);
        let digest = token_digest(&token);
        let mut candidate: Config = (*self.current()).clone();
        candidate.gateway.paired_tokens.push(digest.clone());
        let policy = Policy::from_config(&candidate);
        self.commit(&lock, candidate, policy, &[]).await?;
        Ok(Paired { token, digest })
    }

    /// `pairing/revoke`: removes the token whose digest is `digest` (any
    /// case); whether one was paired.
    pub async fn revoke(&self, w: Writer<'_>, digest: &str) -> Result<bool, RpcError> {
        let lock = self.lock().await;
        self.still_admin(w)?;
        let mut candidate: Config = (*self.current()).clone();
        let before = candidate.gateway.paired_tokens.len();
        candidate
            .gateway
            .paired_tokens
            .retain(|t| !t.eq_ignore_ascii_case(digest));
        let revoked = candidate.gateway.paired_tokens.len() != before;
        if revoked {
            let policy = Policy::from_config(&candidate);
            self.commit(&lock, candidate, policy, &[]).await?;
        }
        Ok(revoked)
    }

    /// `pairing/list`: the paired tokens' digests, lowercase.
    pub fn paired_digests(&self) -> Vec<String> {
        self.current()
            .gateway
            .paired_tokens
            .iter()
            .map(|t| t.to_ascii_lowercase())
            .collect()
    }
}
