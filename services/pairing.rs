//! `pairing/list`, `pairing/create`, `pairing/revoke` (§6.7, §8.19), and
//! `pairing/code` (docs/protocol-additions.md): the gateway's open pairing
//! code for `zeroclaw pair`.
//!
//! Tokens are stored only as SHA-256 digests in `gateway.paired_tokens`.
//! Create and revoke run steps 2, 3, 8 and 9 of the config pipeline, so a
//! revocation is committed to disk before it takes effect, and bumps the
//! policy generation: connections that used the token fail their next request.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use crate::config::token_digest;
use crate::conn_state::Conn;
use crate::error::RpcError;
use crate::jsonrpc::Payload;
use crate::jsonrpc::ReplyFuture;
use crate::live_config::Writer;
use crate::methods::PairingMethod;
use crate::request::Request;
use crate::state::Daemon;

/// The `pairing/*` service of one connection.
#[derive(Debug)]
pub struct PairingService {
    daemon: Arc<Daemon>,
    conn: Conn,
}

impl PairingService {
    /// `pairing/*` for `conn`.
    pub fn new(daemon: Arc<Daemon>, conn: Conn) -> Self {
        Self { daemon, conn }
    }
}

/// `pairing/list` takes no params: only an object (or nothing).
#[derive(Deserialize)]
struct ListParams {}

/// `pairing/create` takes no params: only an object (or nothing).
#[derive(Deserialize)]
struct CreateParams {}

/// `pairing/code` takes no params: only an object (or nothing).
#[derive(Deserialize)]
struct CodeParams {}

#[derive(Deserialize)]
struct RevokeParams {
    token: Option<String>,
    token_hash: Option<String>,
}

/// The caller of a write, as the live config re-resolves it.
fn writer<'a>(conn: &'a Conn, req: &'a Request) -> Result<Writer<'a>, RpcError> {
    Ok(Writer {
        conn,
        binding: req.binding()?,
        method: req.method.name,
    })
}

async fn create(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let CreateParams {} = req.params()?;
    let paired = daemon.config.pair(writer(&conn, &req)?).await?;
    Payload::new(
        &json!({"token": paired.token, "token_hash": paired.digest}),
        Default::default(),
    )
}

async fn revoke(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let p: RevokeParams = req.params()?;
    let digest = match (p.token, p.token_hash) {
        (Some(t), None) => token_digest(&t),
        (None, Some(h)) => h.to_ascii_lowercase(),
        _ => {
            return Err(RpcError::invalid_params(
                "give exactly one of token and token_hash",
            ))
        }
    };
    let revoked = daemon.config.revoke(writer(&conn, &req)?, &digest).await?;
    Payload::new(&json!({ "revoked": revoked }), Default::default())
}

/// `pairing/code`: the open code, or a new one. Local and admin-only: the
/// code is worth a token. The code itself is not logged here (the caller
/// has it); the startup code is logged as before.
async fn code(daemon: Arc<Daemon>, req: Request) -> Result<Payload, RpcError> {
    let CodeParams {} = req.params()?;
    let (code, issued) = daemon.pairing_code.current_or_issue().await?;
    let g = &daemon.config.current().gateway;
    let redeemable = g.enabled && g.require_pairing;
    tracing::info!(event = "pairing_code_shown", issued, redeemable);
    Payload::new(
        &json!({"code": code, "issued": issued, "redeemable": redeemable}),
        Default::default(),
    )
}

fn list(daemon: &Daemon, req: &Request) -> Result<Payload, RpcError> {
    let ListParams {} = req.params()?;
    let hashes = daemon.config.paired_digests();
    Payload::new(&json!({ "token_hashes": hashes }), Default::default())
}

impl PairingService {
    pub(super) fn route(&mut self, req: Request, m: PairingMethod) -> ReplyFuture {
        let (daemon, conn) = (self.daemon.clone(), self.conn.clone());
        match m {
            PairingMethod::List => ReplyFuture::ready(list(&daemon, &req)),
            PairingMethod::Create => ReplyFuture::boxed(create(daemon, conn, req)),
            PairingMethod::Revoke => ReplyFuture::boxed(revoke(daemon, conn, req)),
            PairingMethod::Code => ReplyFuture::boxed(code(daemon, req)),
        }
    }
}
