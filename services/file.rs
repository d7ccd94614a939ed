//! `file/attach`, `file/upload/begin`, `file/upload/chunk`,
//! `file/upload/commit` (§8.17, §8.18).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde::Deserialize;
use serde_json::json;

use super::RouteFuture;
use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::files::attach::{check_entries, read_entries, FileEntry};
use crate::files::upload::{Appended, Upload};
use crate::files::{self, UploadTarget};
use crate::jsonrpc::Payload;
use crate::limits::{UPLOAD_CHUNK_BYTES, UPLOAD_MAX_BYTES};
use crate::methods::FileMethod;
use crate::request::Request;
use crate::session::access::{check_agent, check_owner};
use crate::session::{parse_session_id as session_id, Session};
use crate::state::Daemon;

/// The `file/*` service of one connection.
#[derive(Debug)]
pub struct FileService {
    daemon: Arc<Daemon>,
    conn: Conn,
}

impl FileService {
    /// `file/*` for `conn`.
    pub fn new(daemon: Arc<Daemon>, conn: Conn) -> Self {
        Self { daemon, conn }
    }
}

/// The live session a file goes to, with ownership and agent checks (§8.17, §8.18.1).
pub fn target(
    daemon: &Daemon,
    principal: &crate::config::Principal,
    id: &str,
) -> Result<Arc<Session>, RpcError> {
    let s = daemon
        .sessions
        .get(id)
        .ok_or_else(RpcError::session_not_found)?;
    check_owner(principal, &s.owner)?;
    check_agent(principal, &s.agent_alias)?;
    Ok(s)
}

#[derive(Deserialize)]
struct AttachParams<'a> {
    session_id: Option<String>,
    #[serde(borrow)]
    files: Option<Vec<FileEntry<'a>>>,
}

async fn attach(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let (bound, incoming) = {
        let p: AttachParams<'_> = req.params()?;
        let principal = &req.binding()?.principal;
        let entries = p
            .files
            .ok_or_else(|| RpcError::invalid_params("files is required"))?;
        check_entries(&entries, conn.transport, principal)?;
        let id = session_id(p.session_id)?;
        let session = target(&daemon, principal, &id)?;
        (UploadTarget::of(&session), read_entries(entries)?)
    };
    let stored = files::store_all(
        daemon.file_handles(),
        &conn,
        req.binding()?,
        &bound,
        incoming,
        req.method.name,
    )
    .await?;
    Payload::new(&json!({ "files": stored }), Default::default())
}

#[derive(Deserialize)]
struct BeginParams {
    session_id: Option<String>,
    size_bytes: Option<serde_json::Value>,
    filename: Option<String>,
    sha256: Option<String>,
}

fn begin(daemon: &Daemon, conn: &Conn, req: &Request) -> Result<Payload, RpcError> {
    let p: BeginParams = req.params()?;
    let id = session_id(p.session_id)?;
    let size = p.size_bytes.as_ref().and_then(serde_json::Value::as_u64);
    let declared = Upload::declare(size, p.filename, p.sha256)?;
    let session = target(daemon, &req.binding()?.principal, &id)?;
    let upload = declared.to(UploadTarget::of(&session));
    let idle = Duration::from_secs(u64::from(daemon.config.current().daemon.upload_idle_secs));
    let upload_id = daemon.staging.begin(conn.id, upload, idle)?;
    Payload::new(
        &json!({"upload_id": upload_id, "chunk_bytes": UPLOAD_CHUNK_BYTES, "max_bytes": UPLOAD_MAX_BYTES}),
        Default::default(),
    )
}

#[derive(Deserialize)]
struct ChunkParams<'a> {
    upload_id: Option<String>,
    offset: Option<u64>,
    #[serde(borrow)]
    data_b64: Option<Cow<'a, str>>,
}

async fn chunk(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let (upload_id, offset, bytes) = {
        let p: ChunkParams<'_> = req.params()?;
        let id = p
            .upload_id
            .ok_or_else(|| RpcError::invalid_params("upload_id is required"))?;
        let offset = p
            .offset
            .ok_or_else(|| RpcError::invalid_params("offset must be a non-negative integer"))?;
        let b64 = p
            .data_b64
            .ok_or_else(|| RpcError::invalid_params("data_b64 is required"))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map_err(|e| RpcError::invalid_params(format!("data_b64: {e}")))?;
        (id, offset, bytes)
    };
    let result = match daemon
        .staging
        .append(conn.id, &upload_id, offset, &bytes)
        .await?
    {
        Appended::Accepted { received } => {
            json!({"upload_id": upload_id, "received_bytes": received})
        }
        Appended::Duplicate { received } => {
            json!({"upload_id": upload_id, "received_bytes": received, "duplicate": true})
        }
    };
    Payload::new(&result, Default::default())
}

#[derive(Deserialize)]
struct CommitParams {
    upload_id: Option<String>,
}

async fn commit(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let p: CommitParams = req.params()?;
    let upload_id = p
        .upload_id
        .ok_or_else(|| RpcError::invalid_params("upload_id is required"))?;
    let (bound, incoming) = daemon.staging.commit(conn.id, &upload_id).await?;
    let mut stored = files::store_all(
        daemon.file_handles(),
        &conn,
        req.binding()?,
        &bound,
        vec![incoming],
        req.method.name,
    )
    .await?;
    let result = stored
        .pop()
        .ok_or_else(|| RpcError::internal("nothing stored", None))?;
    Payload::new(&result, Default::default())
}

impl FileService {
    pub(super) fn route(&mut self, req: Request, m: FileMethod) -> RouteFuture {
        let (d, c) = (self.daemon.clone(), self.conn.clone());
        match m {
            FileMethod::Attach => RouteFuture::boxed(attach(d, c, req)),
            FileMethod::UploadBegin => RouteFuture::ready(begin(&d, &c, &req)),
            FileMethod::UploadChunk => RouteFuture::boxed(chunk(d, c, req)),
            FileMethod::UploadCommit => RouteFuture::boxed(commit(d, c, req)),
        }
    }
}
