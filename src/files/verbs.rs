//! The verbs the `file/*` services and a prompt's attachments call, one a
//! request (§8.17, §8.18): each runs its domain steps in the order the spec
//! fixes, which is what decides the error a bad request gets, and ends in
//! the one store step of `mod.rs`.

use std::sync::Arc;
use std::time::Duration;

use super::attach::{check_entries, read_entries, FileEntry};
use super::upload::Upload;
use super::{store, store_all, FileResult, Handles, UploadTarget};
use crate::authz::Binding as AuthBinding;
use crate::config::Principal;
use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::session::access::live_for;
use crate::session::{parse_session_id, Session};

/// `file/attach` (§8.17): the entries' shape and admin-only checks, the
/// session id, the live target (owner, agent), every entry's size and
/// bytes, then the store step for each in order.
pub async fn attach(
    h: Handles<'_>,
    conn: &Conn,
    binding: &Arc<AuthBinding>,
    session_id: Option<String>,
    entries: Vec<FileEntry<'_>>,
    method: &str,
) -> Result<Vec<FileResult>, RpcError> {
    let principal = &binding.principal;
    check_entries(&entries, conn.transport, principal)?;
    let id = parse_session_id(session_id)?;
    let bound = UploadTarget::of(&*live_for(h.sessions, principal, &id)?);
    let incoming = read_entries(entries)?;
    store_all(h, conn, binding, &bound, incoming, method).await
}

/// `file/upload/begin` (§8.18.1): the declaration is checked before the
/// session is looked at, then the live target (owner, agent), then the
/// registry (count, budget, memory), idle uploads reclaimed after the
/// configured `upload_idle_secs`. The new upload's id.
pub fn begin(
    h: Handles<'_>,
    conn: &Conn,
    principal: &Principal,
    session_id: &str,
    size: Option<u64>,
    filename: Option<String>,
    sha256: Option<String>,
) -> Result<String, RpcError> {
    let declared = Upload::declare(size, filename, sha256)?;
    let session = live_for(h.sessions, principal, session_id)?;
    let upload = declared.to(UploadTarget::of(&session));
    let idle = Duration::from_secs(u64::from(h.config.current().daemon.upload_idle_secs));
    h.staging.begin(conn.id, upload, idle)
}

/// `file/upload/commit` (§8.18.3): the upload leaves the registry once
/// complete, whatever follows; its file goes through the store step.
pub async fn commit(
    h: Handles<'_>,
    conn: &Conn,
    binding: &Arc<AuthBinding>,
    upload_id: &str,
    method: &str,
) -> Result<FileResult, RpcError> {
    let (bound, incoming) = h.staging.commit(conn.id, upload_id).await?;
    store(h, conn, binding, &bound, incoming, method).await
}

/// A prompt's attachments (§8.4 step 1a), checked when the params were
/// decoded: read, then stored for `session` in order. Their markers, in
/// the same order, for the prompt text.
pub async fn store_attachments(
    h: Handles<'_>,
    conn: &Conn,
    binding: &Arc<AuthBinding>,
    session: &Session,
    entries: Vec<FileEntry<'_>>,
    method: &str,
) -> Result<Vec<String>, RpcError> {
    let incoming = read_entries(entries)?;
    let bound = UploadTarget::of(session);
    let stored = store_all(h, conn, binding, &bound, incoming, method).await?;
    Ok(stored.into_iter().map(|f| f.marker).collect())
}
