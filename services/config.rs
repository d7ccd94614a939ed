//! `config/get`, `config/set`, `config/set-many` (§8.14–§8.16), and the
//! addition `config/replace` (docs/protocol-additions.md).
//!
//! Each handler decodes its params (the shape check of §8.16 step 1) and
//! calls one verb of the live config (`src/live_config/writes.rs`), which
//! runs the rest of the pipeline.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::config;
use crate::conn_state::Conn;
use crate::error::{ErrorData, RpcError};
use crate::jsonrpc::Payload;
use crate::jsonrpc::ReplyFuture;
use crate::live_config::Writer;
use crate::methods::ConfigMethod;
use crate::request::Request;
use crate::state::Daemon;

/// Most entries in one `config/set-many`.
const MAX_SETS: usize = 256;

/// The `config/*` service of one connection.
#[derive(Debug)]
pub struct ConfigService {
    daemon: Arc<Daemon>,
    conn: Conn,
}

impl ConfigService {
    /// `config/*` for `conn`.
    pub fn new(daemon: Arc<Daemon>, conn: Conn) -> Self {
        Self { daemon, conn }
    }
}

#[derive(Deserialize)]
struct GetParams {
    prop: Option<String>,
}

#[derive(Deserialize)]
struct SetParams {
    prop: String,
    value: Value,
}

fn get(daemon: &Daemon, req: &Request) -> Result<Payload, RpcError> {
    let p: GetParams = req.params()?;
    let running = daemon.config.current();
    match p.prop {
        None => Payload::new(
            &daemon.config.effective_view(&daemon.paths.config_dir),
            Default::default(),
        ),
        Some(prop) => {
            // Masked by `props::get`, the one place that masks secrets.
            let value = config::props::get(&running, &prop)
                .map_err(|e| RpcError::invalid_params(e.to_string()))?;
            Payload::new(&json!({"prop": prop, "value": value}), Default::default())
        }
    }
}

/// Step 1: `sets` is an array of 1–256 objects with a string `prop` and a `value`.
fn shape(req: &Request) -> Result<Vec<(String, Value)>, RpcError> {
    #[derive(Deserialize)]
    struct Raw {
        sets: Option<Value>,
    }
    let raw: Raw = req.params()?;
    let sets = match raw.sets {
        Some(Value::Array(a)) if (1..=MAX_SETS).contains(&a.len()) => a,
        Some(Value::Array(_)) => {
            return Err(RpcError::invalid_params(format!(
                "sets must have 1 to {MAX_SETS} entries"
            )))
        }
        _ => return Err(RpcError::invalid_params("sets must be an array")),
    };
    sets.into_iter()
        .enumerate()
        .map(|(i, entry)| {
            let bad = |why: &str| RpcError::InvalidParams {
                message: format!("sets[{i}]: {why}"),
                data: Some(ErrorData::default().with("index", i)),
            };
            let Value::Object(mut o) = entry else {
                return Err(bad("must be an object"));
            };
            let prop = match o.remove("prop") {
                Some(Value::String(p)) => p,
                _ => return Err(bad("prop must be a string")),
            };
            let value = o.remove("value").ok_or_else(|| bad("value is required"))?;
            Ok((prop, value))
        })
        .collect()
}

/// The caller of a write, as the config verbs re-resolve it.
fn writer<'a>(conn: &'a Conn, req: &'a Request) -> Result<Writer<'a>, RpcError> {
    Ok(Writer {
        conn,
        binding: req.binding()?,
        method: req.method.name,
    })
}

async fn set_many(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let sets = shape(&req)?;
    let props = daemon.config.set_props(writer(&conn, &req)?, &sets).await?;
    Payload::new(&json!({"props": props, "set": true}), Default::default())
}

async fn set(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let p: SetParams = req.params()?;
    daemon
        .config
        .set_prop(writer(&conn, &req)?, &p.prop, &p.value)
        .await?;
    Payload::new(&json!({"prop": p.prop, "set": true}), Default::default())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplaceParams {
    text: String,
    base_sha256: String,
}

/// Most bytes of a `config/replace` text (a config file is a few KiB).
const MAX_REPLACE_BYTES: usize = 1 << 20;

/// `config/replace {text, base_sha256}` (protocol addition, local-only, admin-only;
/// `zeroclaw config edit`): the whole file replaced by `text` when it loads and is valid (every
/// error listed in `data.errors` otherwise) and the file still holds the bytes whose SHA-256 is
/// `base_sha256` (else `config_changed`); installed like a `config/set-many` commit.
async fn replace(daemon: Arc<Daemon>, conn: Conn, req: Request) -> Result<Payload, RpcError> {
    let p: ReplaceParams = req.params()?;
    if p.text.len() > MAX_REPLACE_BYTES {
        return Err(RpcError::invalid_params(format!(
            "text must be at most {MAX_REPLACE_BYTES} bytes"
        )));
    }
    let sha = daemon
        .config
        .replace_text(writer(&conn, &req)?, p.text, &p.base_sha256)
        .await?;
    Payload::new(
        &json!({"replaced": true, "sha256": sha}),
        Default::default(),
    )
}

impl ConfigService {
    pub(super) fn route(&mut self, req: Request, m: ConfigMethod) -> ReplyFuture {
        let (daemon, conn) = (self.daemon.clone(), self.conn.clone());
        match m {
            ConfigMethod::Get => ReplyFuture::ready(get(&daemon, &req)),
            ConfigMethod::Set => ReplyFuture::boxed(set(daemon, conn, req)),
            ConfigMethod::SetMany => ReplyFuture::boxed(set_many(daemon, conn, req)),
            ConfigMethod::Replace => ReplyFuture::boxed(replace(daemon, conn, req)),
        }
    }
}
