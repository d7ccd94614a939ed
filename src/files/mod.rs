//! Files handed to a session's agent (§8.17, §8.18): naming, staged
//! uploads, and the one store step that `file/attach`, upload commits and
//! prompt attachments share.
//!
//! The store step (§8.18.4) runs under the session lock (lock (2) of §6.8)
//! and, inside it, the authorization-state lock for reading (lock (3)), so a
//! close, a recreation, a revocation or a token removal is ordered entirely
//! before or entirely after it: nothing is written unless every check passed
//! under the state that holds while writing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

pub mod attach;
pub mod naming;
pub mod staging;
pub mod upload;
mod verbs;
pub mod write;

use crate::authz::{require_grant, AuthzState, Binding as AuthBinding};
use crate::config::{Grant, Resource, Verb};
use crate::conn_state::Conn;
use crate::error::{Reason, RpcError};
use crate::faults::{FaultPoint, Faults};
use crate::live_config::LiveConfig;
use crate::session::access::{check_agent, check_owner};
use crate::session::lifecycle::agent_workspace;
use crate::session::Sessions;

pub use staging::UploadTarget;
pub use verbs::{attach, begin, commit, store_attachments};

/// One stored file, as `file/attach` and commit report it.
#[derive(Debug, Clone, Serialize)]
pub struct FileResult {
    pub ref_id: String,
    pub marker: String,
    pub workspace_path: String,
    pub size_bytes: u64,
    pub deduplicated: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub restored: bool,
}

/// A file to store.
#[derive(Debug)]
pub struct FileToStore {
    pub bytes: Vec<u8>,
    /// Lowercase hex SHA-256 of `bytes` when already known (an upload hashes
    /// its chunks as they arrive); computed by the store step otherwise.
    pub sha256: Option<String>,
    pub filename: String,
    pub mime: String,
    /// The path a path-mode attachment was read from (image markers name it).
    pub original_path: Option<String>,
}

/// Removes, in every configured agent's `uploads/`, the temporaries that a
/// daemon killed mid-store left behind (see [`write::remove_stale_temporaries`]).
/// Run at startup, so no partial upload outlives a restart; each store step
/// also sweeps its own directory. Creates nothing.
pub fn remove_crash_temporaries(config: &crate::config::Config, config_dir: &Path) {
    for alias in config.agents.keys() {
        let uploads = config
            .agent_workspace_dir(config_dir, alias)
            .join("uploads");
        write::remove_stale_temporaries(&uploads);
    }
}

fn session_changed() -> RpcError {
    RpcError::session_gone(
        "Session changed since the upload began",
        Reason::SessionChanged,
    )
}

/// The daemon's parts the files' verbs read, and nothing else of it: the
/// session and its lock, the live policy, the fault points, the agents'
/// workspaces, the staged uploads.
#[derive(Debug, Clone, Copy)]
pub struct Handles<'a> {
    pub sessions: &'a Sessions,
    pub staging: &'a staging::Staging,
    pub authz: &'a AuthzState,
    pub faults: &'a Faults,
    pub config: &'a LiveConfig,
    /// Where relative agent workspaces are resolved from.
    pub config_dir: &'a Path,
}

/// Stores `files` in order through the store step; the first failure fails
/// the whole call, and files already stored stay stored. Shared by
/// `file/attach`, an upload's commit and a prompt's attachments.
pub async fn store_all(
    daemon: Handles<'_>,
    conn: &Conn,
    binding: &Arc<AuthBinding>,
    bound: &UploadTarget,
    files: Vec<FileToStore>,
    method: &str,
) -> Result<Vec<FileResult>, RpcError> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        out.push(store(daemon, conn, binding, bound, f, method).await?);
    }
    Ok(out)
}

/// The store step (§8.18.4): check again under both locks, then write and index.
/// `method` names the request in a missing-grant error.
async fn store(
    daemon: Handles<'_>,
    conn: &Conn,
    binding: &Arc<AuthBinding>,
    bound: &UploadTarget,
    mut file: FileToStore,
    method: &str,
) -> Result<FileResult, RpcError> {
    let sessions = daemon.sessions;
    // 1. The same live session as recorded, under its lock.
    let _session_lock = sessions.locks.lock(&bound.session_id).await;
    let session = sessions
        .get(&bound.session_id)
        .filter(|s| {
            s.incarnation == bound.incarnation
                && s.owner == bound.owner
                && s.agent_alias == bound.agent_alias
        })
        .ok_or_else(session_changed)?;
    // 2. Credentials and grants under the policy in effect now, held across the write.
    let _policy_lock = daemon.authz.state_lock.read().await;
    let current = conn.refresh_binding(daemon.authz, binding)?;
    let principal = &current.principal;
    let g = Grant(Resource::Files, Verb::Create);
    require_grant(principal, g, method).map_err(RpcError::Forbidden)?;
    check_owner(principal, &session.owner)?;
    check_agent(principal, &session.agent_alias)?;
    // 3. Write and index.
    if daemon.faults.is_active(FaultPoint::UploadWrite) {
        return Err(RpcError::storage(
            "storage failure: injected fault: upload_write",
        ));
    }
    let config = daemon.config.current();
    let uploads: PathBuf =
        agent_workspace(&config, daemon.config_dir, &session.agent_alias)?.join("uploads");
    let sha = match file.sha256.take() {
        Some(sha) => sha,
        None => crate::hex::sha256(&file.bytes),
    };
    let ext = naming::extension(&file.filename);
    let indexed = session.indexed_upload(&sha);
    let size = file.bytes.len() as u64;
    let written = tokio::task::spawn_blocking({
        let (uploads, sha) = (uploads.clone(), sha.clone());
        move || {
            write::store(
                &uploads,
                &sha,
                ext.as_deref(),
                &file.bytes,
                indexed.as_deref(),
            )
        }
    })
    .await
    .map_err(|e| RpcError::storage(format!("storage failure: {e}")))?
    .map_err(|e| match &e {
        write::WriteError::Io(io) => RpcError::storage_io(io, format!("storage failure: {e}")),
        write::WriteError::UnsafeDir(_) => RpcError::storage(format!("storage failure: {e}")),
    })?;
    session.index_upload(&sha, &written.path);
    let workspace_path = written.path.to_string_lossy().into_owned();
    Ok(FileResult {
        ref_id: format!("sha256:{sha}"),
        marker: naming::marker(
            &file.mime,
            &file.filename,
            &workspace_path,
            file.original_path.as_deref(),
        ),
        workspace_path,
        size_bytes: size,
        deduplicated: written.deduplicated,
        restored: written.restored,
    })
}
