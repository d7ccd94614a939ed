//! `initialize` (§5, §8.1): version negotiation, authentication, the
//! connection's wire dialect and client capabilities.
//!
//! It always authenticates afresh (§5.3). Any failure leaves the connection
//! unbound (fail closed). Extra members a client sends are ignored and never
//! logged: ZeroClaw's terminal client sends its whole environment.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::authz::{Binding, Credential};
use crate::config::token_digest;
use crate::conn_state::{Conn, Transport};
use crate::dialect::Dialect;
use crate::error::{AuthReason, RpcError};
use crate::jsonrpc::Payload;
use crate::jsonrpc::ReplyFuture;
use crate::limits::{
    MAX_FRAME_BYTES, MAX_IN_FLIGHT_REQUESTS, MAX_STAGED_UPLOADS, UPLOAD_CHUNK_BYTES,
    UPLOAD_MAX_BYTES,
};
use crate::methods::{self, InitializeMethod};
use crate::request::Request;
use crate::state::Daemon;

/// The `initialize` service of one connection.
#[derive(Debug)]
pub struct Initialize {
    daemon: Arc<Daemon>,
    conn: Conn,
}

impl Initialize {
    /// `initialize` for `conn`.
    pub fn new(daemon: Arc<Daemon>, conn: Conn) -> Self {
        Self { daemon, conn }
    }
}

/// Params in both spellings (§3.8); `null` members count as absent.
#[derive(Deserialize)]
struct Params<'a> {
    #[serde(rename = "protocolVersion", borrow)]
    version_camel: Option<&'a RawValue>,
    #[serde(rename = "protocol_version", borrow)]
    version_snake: Option<&'a RawValue>,
    #[serde(rename = "clientCapabilities", borrow)]
    caps_camel: Option<&'a RawValue>,
    #[serde(rename = "client_capabilities", borrow)]
    caps_snake: Option<&'a RawValue>,
    #[serde(rename = "authToken", borrow)]
    token_camel: Option<&'a RawValue>,
    #[serde(rename = "auth_token", borrow)]
    token_snake: Option<&'a RawValue>,
    #[serde(rename = "authProvider", borrow)]
    provider_camel: Option<&'a RawValue>,
    #[serde(rename = "auth_provider", borrow)]
    provider_snake: Option<&'a RawValue>,
}

/// One member given in either spelling; both with different values is `-32602`.
fn either<'a>(
    camel: Option<&'a RawValue>,
    snake: Option<&'a RawValue>,
    name: &str,
) -> Result<Option<Value>, RpcError> {
    let parse = |r: &RawValue| {
        serde_json::from_str::<Value>(r.get()).map_err(|e| RpcError::invalid_params(e.to_string()))
    };
    match (camel.map(parse).transpose()?, snake.map(parse).transpose()?) {
        (Some(a), Some(b)) if a != b => Err(RpcError::invalid_params(format!(
            "{name} is given in both spellings with different values"
        ))),
        (a, b) => Ok(a.or(b)),
    }
}

fn string(v: Option<Value>, name: &str) -> Result<Option<String>, RpcError> {
    match v {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RpcError::invalid_params(format!("{name} must be a string"))),
    }
}

/// `{"elicitation":{"form":{}}}` or `{"elicitation":{}}` advertise form elicitation.
fn supports_elicitation(caps: Option<&Value>) -> Result<bool, RpcError> {
    let Some(caps) = caps else { return Ok(false) };
    let caps = caps
        .as_object()
        .ok_or_else(|| RpcError::invalid_params("clientCapabilities must be an object"))?;
    Ok(match caps.get("elicitation") {
        Some(Value::Object(e)) => e.is_empty() || e.get("form").is_some_and(Value::is_object),
        _ => false,
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Limits {
    max_frame_bytes: usize,
    max_in_flight_requests: usize,
    upload_chunk_bytes: usize,
    upload_max_bytes: usize,
    max_staged_uploads: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult<'a> {
    protocol_version: u32,
    server_version: &'a str,
    server_pid: u32,
    principal_id: &'a str,
    auth_methods: &'static [&'static str],
    transport: &'static str,
    capabilities: Vec<&'static str>,
    limits: Limits,
}

#[cfg(unix)]
const AUTH_METHODS: &[&str] = &["native", "peercred"];
#[cfg(not(unix))]
const AUTH_METHODS: &[&str] = &["native"];

impl Initialize {
    fn answer(&self, req: &Request) -> Result<Payload, RpcError> {
        let p: Params<'_> = req.params()?;
        let dialect = if p.version_snake.is_some() {
            Dialect::Snake
        } else {
            Dialect::Camel
        };
        let version = either(p.version_camel, p.version_snake, "protocolVersion")?
            .ok_or_else(|| RpcError::invalid_params("protocolVersion is required"))?;
        if !(version.is_i64() || version.is_u64()) {
            return Err(RpcError::invalid_params(
                "protocolVersion must be an integer",
            ));
        }
        if version != 1 {
            return Err(RpcError::VersionMismatch { requested: version });
        }
        let elicitation = supports_elicitation(
            either(p.caps_camel, p.caps_snake, "clientCapabilities")?.as_ref(),
        )?;
        let token = string(
            either(p.token_camel, p.token_snake, "authToken")?,
            "authToken",
        )?;
        let provider = string(
            either(p.provider_camel, p.provider_snake, "authProvider")?,
            "authProvider",
        )?;

        let (credential, auth_provider) = match token {
            Some(token) => {
                if provider.as_deref().is_some_and(|p| p != "native") {
                    return Err(RpcError::Auth(AuthReason::UnknownAuthProvider));
                }
                (Credential::Token(token_digest(&token)), "native")
            }
            None if self.conn.transport != Transport::Local => {
                return Err(RpcError::Auth(AuthReason::TokenRequired))
            }
            None => match self.conn.peer.uid {
                Some(uid) => (Credential::Uid(uid), "peercred"),
                None => (Credential::None, "os"),
            },
        };
        let authz = &self.daemon.authz;
        let snap = authz.snapshot();
        let principal = Arc::new(authz.resolve(&snap, &credential)?);
        tracing::info!(
            event = "principal_bound",
            peer = %self.conn.peer.label,
            principal_id = %principal.id,
            auth_provider,
        );
        // `daemon.advertised_server_version` (docs/protocol-additions.md):
        // snake-dialect clients built in lock-step with their own daemon
        // (zerocode) refuse any other version; camel clients always see the truth.
        let running = self.daemon.config.current();
        let server_version = match (&running.daemon.advertised_server_version, dialect) {
            (Some(v), Dialect::Snake) => v.as_str(),
            _ => env!("CARGO_PKG_VERSION"),
        };
        let result = InitializeResult {
            protocol_version: 1,
            server_version,
            server_pid: std::process::id(),
            principal_id: &principal.id,
            auth_methods: AUTH_METHODS,
            transport: self.conn.transport.as_str(),
            capabilities: methods::capabilities(
                self.conn.transport == Transport::Local,
                self.conn.transport != Transport::Http,
                self.daemon.test_faults,
            )
            .collect(),
            limits: Limits {
                max_frame_bytes: MAX_FRAME_BYTES,
                max_in_flight_requests: MAX_IN_FLIGHT_REQUESTS,
                upload_chunk_bytes: UPLOAD_CHUNK_BYTES,
                upload_max_bytes: UPLOAD_MAX_BYTES,
                max_staged_uploads: MAX_STAGED_UPLOADS,
            },
        };
        let payload = Payload::new(&result, dialect)?;
        self.conn.set_dialect(dialect);
        self.conn.set_elicitation(elicitation);
        self.conn.set_binding(Some(Arc::new(Binding {
            principal,
            generation: snap.generation,
            credential,
        })));
        Ok(payload)
    }
}

impl Initialize {
    pub(super) fn route(&mut self, req: Request, m: InitializeMethod) -> ReplyFuture {
        let reply = match m {
            InitializeMethod::Initialize => self.answer(&req),
        };
        if reply.is_err() {
            // Fail closed (§5.3): a failed re-initialize leaves the connection unbound.
            self.conn.set_binding(None);
        }
        ReplyFuture::ready(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_capability_forms() {
        let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert!(supports_elicitation(Some(&v(r#"{"elicitation":{"form":{}}}"#))).unwrap());
        assert!(supports_elicitation(Some(&v(r#"{"elicitation":{}}"#))).unwrap());
        assert!(!supports_elicitation(Some(&v(r#"{"elicitation":{"url":{}}}"#))).unwrap());
        assert!(!supports_elicitation(Some(&v(r#"{}"#))).unwrap());
        assert!(!supports_elicitation(None).unwrap());
        assert!(supports_elicitation(Some(&v("[]"))).is_err());
    }
}
