//! `file/attach`, `file/upload/begin`, `file/upload/chunk`,
//! `file/upload/commit` (§8.17, §8.18).

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine;
use serde::Deserialize;
use serde_json::json;

use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::files;
use crate::files::attach::FileEntry;
use crate::files::upload::Appended;
use crate::jsonrpc::Payload;
use crate::jsonrpc::ReplyFuture;
use crate::limits::{UPLOAD_CHUNK_BYTES, UPLOAD_MAX_BYTES};
use crate::methods::FileMethod;
use crate::request::Request;
use crate::session::parse_session_id as session_id;
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

#[derive(Deserialize)]
struct AttachParams<'a> {
    session_id: Option<String>,
    #[serde(borrow)]
    files: Option<Vec<FileEntry<'a>>>,
}

async fn attach(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let p: AttachParams<'_> = req.params()?;
    let binding = req.binding()?;
    let entries = p
        .files
        .ok_or_else(|| RpcError::invalid_params("files is required"))?;
    let handles = daemon.file_handles();
    let method = req.method.name;
    let stored = files::attach(handles, &conn, binding, p.session_id, entries, method).await?;
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
    let principal = &req.binding()?.principal;
    let handles = daemon.file_handles();
    let upload_id = files::begin(handles, conn, principal, &id, size, p.filename, p.sha256)?;
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
    let handles = daemon.file_handles();
    let stored = files::commit(handles, &conn, req.binding()?, &upload_id, req.method.name).await?;
    Payload::new(&stored, Default::default())
}

impl FileService {
    pub(super) fn route(&mut self, req: Request, m: FileMethod) -> ReplyFuture {
        let (d, c) = (self.daemon.clone(), self.conn.clone());
        match m {
            FileMethod::Attach => ReplyFuture::boxed(attach(d, c, req)),
            FileMethod::UploadBegin => ReplyFuture::ready(begin(&d, &c, &req)),
            FileMethod::UploadChunk => ReplyFuture::boxed(chunk(d, c, req)),
            FileMethod::UploadCommit => ReplyFuture::boxed(commit(d, c, req)),
        }
    }
}
