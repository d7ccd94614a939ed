//! `file/attach`, `file/upload/begin`, `file/upload/chunk`,
//! `file/upload/commit` (SPEC §8.17, §8.18).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use sha2::Digest;

use super::RouteFuture;
use crate::context::Conn;
use crate::error::{ErrorData, RpcError};
use crate::files::attach::{check_entries, file_too_large, read_entries, FileEntry};
use crate::files::naming::MAX_FILENAME_BYTES;
use crate::files::staging::{Upload, UploadTarget};
use crate::files::{self, Incoming};
use crate::jsonrpc::Payload;
use crate::limits::{UPLOAD_CHUNK_BYTES, UPLOAD_MAX_BYTES};
use crate::methods::Method;
use crate::request::Request;
use crate::session::lifecycle::{check_agent, check_owner};
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
    let size = match p.size_bytes.as_ref().and_then(serde_json::Value::as_u64) {
        Some(n) if n <= UPLOAD_MAX_BYTES as u64 => n as usize,
        Some(n) => return Err(file_too_large(n)),
        None => {
            return Err(RpcError::invalid_params(
                "size_bytes must be an integer 0..=10485760",
            ))
        }
    };
    let filename = p.filename.unwrap_or_else(|| "upload".to_owned());
    if filename.len() > MAX_FILENAME_BYTES {
        return Err(RpcError::invalid_params(format!(
            "filename exceeds {MAX_FILENAME_BYTES} bytes"
        )));
    }
    let sha256 = match p.sha256 {
        Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(h.to_ascii_lowercase())
        }
        Some(_) => return Err(RpcError::invalid_params("sha256 must be 64 hex digits")),
        None => None,
    };
    let session = target(daemon, &req.binding()?.principal, &id)?;
    let upload = Upload {
        bound: UploadTarget::of(&session),
        size,
        filename,
        sha256,
        hasher: Default::default(),
        data: Vec::new(),
        released: false,
    };
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
        if bytes.is_empty() || bytes.len() > UPLOAD_CHUNK_BYTES {
            return Err(RpcError::invalid_params(format!(
                "a chunk decodes to 1..={UPLOAD_CHUNK_BYTES} bytes"
            )));
        }
        (id, offset, bytes)
    };
    let upload = daemon.staging.get(conn.id, &upload_id)?;
    let mut u = upload.lock().await;
    if u.released {
        return Err(RpcError::invalid_params_reason(
            "unknown upload",
            ErrorData::reason("unknown_upload"),
        ));
    }
    let received = u.data.len() as u64;
    // An offset near u64::MAX must not wrap: it simply does not match.
    let Some(end) = offset.checked_add(bytes.len() as u64) else {
        return Err(RpcError::invalid_params_reason(
            "offset mismatch",
            ErrorData::reason("offset_mismatch").with("expected_offset", received),
        ));
    };
    let duplicate =
        end <= received && u.data.get(offset as usize..end as usize) == Some(&bytes[..]);
    if duplicate {
        daemon.staging.touch(&upload_id);
        return Payload::new(
            &json!({"upload_id": upload_id, "received_bytes": received, "duplicate": true}),
            Default::default(),
        );
    }
    if offset != received {
        return Err(RpcError::invalid_params_reason(
            "offset mismatch",
            ErrorData::reason("offset_mismatch").with("expected_offset", received),
        ));
    }
    if end > u.size as u64 {
        return Err(RpcError::invalid_params_reason(
            format!("chunk exceeds the declared size ({} bytes)", u.size),
            ErrorData::reason("exceeds_declared_size").with("size_bytes", u.size),
        ));
    }
    if u.data.capacity() == 0 {
        let size = u.size;
        u.data.reserve_exact(size);
    }
    u.data.extend_from_slice(&bytes);
    u.hasher.update(&bytes);
    daemon.staging.touch(&upload_id);
    Payload::new(
        &json!({"upload_id": upload_id, "received_bytes": end}),
        Default::default(),
    )
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
    let upload = daemon.staging.get(conn.id, &upload_id)?;
    let mut u = upload.lock().await;
    if u.released {
        return Err(RpcError::invalid_params_reason(
            "unknown upload",
            ErrorData::reason("unknown_upload"),
        ));
    }
    if u.data.len() < u.size {
        return Err(RpcError::invalid_params_reason(
            format!("incomplete upload: received {} of {}", u.data.len(), u.size),
            ErrorData::reason("incomplete")
                .with("received_bytes", u.data.len())
                .with("size_bytes", u.size),
        ));
    }
    // From here on the upload is released whatever happens.
    u.released = true;
    daemon.staging.release(&upload_id);
    let bytes = std::mem::take(&mut u.data);
    let sha = crate::hex::lower(&std::mem::take(&mut u.hasher).finalize());
    if let Some(expected) = &u.sha256 {
        if &sha != expected {
            return Err(RpcError::invalid_params_reason(
                "sha256 mismatch",
                ErrorData::reason("sha256_mismatch"),
            ));
        }
    }
    let mime = crate::files::naming::guess_mime(&u.filename).to_owned();
    let incoming = Incoming {
        bytes,
        sha256: Some(sha),
        filename: u.filename.clone(),
        mime,
        original_path: None,
    };
    let bound = u.bound.clone();
    drop(u);
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

method_family!(FileService);

impl FileService {
    fn route(&mut self, req: Request) -> RouteFuture {
        let (d, c) = (self.daemon.clone(), self.conn.clone());
        match req.method.id {
            Method::FileAttach => RouteFuture::boxed(attach(d, c, req)),
            Method::FileUploadBegin => RouteFuture::ready(begin(&d, &c, &req)),
            Method::FileUploadChunk => RouteFuture::boxed(chunk(d, c, req)),
            Method::FileUploadCommit => RouteFuture::boxed(commit(d, c, req)),
            _ => crate::services::misrouted(&req),
        }
    }
}
