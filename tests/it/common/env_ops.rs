//! The operations the environment-fault tests (tests/it/env_*.rs) run before,
//! during and after a fault: the state they store first and the snapshot of
//! what must not change, and each writing operation (upload commit,
//! attachment, config commit).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::assert::assert_error;
use super::files::{b64, sha256_hex, tree, Node};
use super::tmpfs::TmpfsEnv;
use super::Client as Rpc;

/// What a fault must not change, taken right after [`store_state`].
#[derive(Debug)]
pub struct Before {
    pub pid: u32,
    pub config_bytes: Vec<u8>,
    pub files: BTreeMap<PathBuf, Node>,
}

impl Before {
    /// `config.toml` and every file but the database are as they were.
    pub fn assert_files_unchanged(&self, env: &TmpfsEnv) {
        assert_eq!(std::fs::read(env.config_file()).unwrap(), self.config_bytes);
        assert_eq!(files_except_db(env.config_dir()), self.files);
    }
}

/// A daemon on a tmpfs config dir (see [`TmpfsEnv::start`]) with
/// [`store_state`] done: the env, its client, and what must not change.
pub fn start_with_state(config: &str, size: u64) -> Result<(TmpfsEnv, Rpc, Before), String> {
    let env = TmpfsEnv::start(config, size)?;
    let mut rpc = env.rpc();
    store_state(&mut rpc);
    let before = Before {
        pid: env.d().pid,
        config_bytes: std::fs::read(env.config_file()).unwrap(),
        files: files_except_db(env.config_dir()),
    };
    Ok((env, rpc, before))
}

/// Stores what a fault must leave intact: an ACP session `a1` and a Chat
/// session `c1` with one turn each, a config commit
/// (`daemon.ask_timeout_secs = 77`) and an upload into `a1`.
pub fn store_state(rpc: &mut Rpc) {
    rpc.new_session("a1", "acp");
    rpc.prompt_ok("a1", "hello");
    rpc.new_session("c1", "chat");
    rpc.prompt_ok("c1", "hi chat");
    set_ask_timeout(rpc, 77).unwrap();
    upload(rpc, "a1", b"first upload").unwrap();
}

/// A chunked upload of `bytes` into `sid` (begin, one chunk, commit); the
/// commit's answer.
pub fn upload(rpc: &mut Rpc, sid: &str, bytes: &[u8]) -> Result<Value, Value> {
    let up = rpc.ok(
        "file/upload/begin",
        json!({"session_id": sid, "size_bytes": bytes.len(), "sha256": sha256_hex(bytes),
               "filename": "notes.txt"}),
    );
    let id = up["upload_id"].as_str().unwrap().to_owned();
    rpc.ok(
        "file/upload/chunk",
        json!({"upload_id": id, "offset": 0, "data_b64": b64(bytes)}),
    );
    rpc.request("file/upload/commit", json!({ "upload_id": id }))
}

/// `file/attach` of one file.
pub fn attach(rpc: &mut Rpc, sid: &str, bytes: &[u8]) -> Result<Value, Value> {
    rpc.request(
        "file/attach",
        json!({"session_id": sid, "files": [{"data_b64": b64(bytes), "filename": "a.bin"}]}),
    )
}

/// `config/set` of `daemon.ask_timeout_secs`.
pub fn set_ask_timeout(rpc: &mut Rpc, secs: u32) -> Result<Value, Value> {
    rpc.request(
        "config/set",
        json!({"prop": "daemon.ask_timeout_secs", "value": secs}),
    )
}

/// A config commit (`ask_timeout_secs` 77 → 78) must fail with `-32603`
/// `reason` ("Config save failed: …") and leave the running config at 77.
pub fn assert_config_commit_fails(rpc: &mut Rpc, reason: &str) {
    let e = set_ask_timeout(rpc, 78).unwrap_err();
    assert_error(&e, -32603, Some(reason));
    let message = e["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Config save failed: "), "{e}");
    assert_eq!(ask_timeout(rpc), 77, "the running config changed");
}

/// The running `daemon.ask_timeout_secs`.
pub fn ask_timeout(rpc: &mut Rpc) -> Value {
    rpc.ok("config/get", json!({"prop": "daemon.ask_timeout_secs"}))["value"].clone()
}

/// Every file below the config dir except the session database (whose WAL
/// may hold uncommitted frames of a failed write) and a test's `filler`.
pub fn files_except_db(cfg: &Path) -> BTreeMap<PathBuf, Node> {
    let mut t = tree(cfg);
    t.retain(|p, _| !p.starts_with("data/sessions") && p != Path::new("filler"));
    t
}
