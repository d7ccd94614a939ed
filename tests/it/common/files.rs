//! Helpers of the file tests (tests/it/files_*.rs, §8.17, §8.18, §8.4
//! step 1a): where an [`Env`]'s daemon stores files, the `file/*` calls, prompts read up to their answer, a roster user (another
//! uid) for the non-admin cases, and exact snapshots of directory trees so a
//! test can prove that a refused request wrote nothing anywhere.
//!
//! Every wait is bounded: a helper gets what it waits for before its
//! deadline or fails the test with what it saw.

#![allow(dead_code)]

use std::collections::BTreeMap;
#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::assert::assert_error_exact;
// Re-exported for the suites' glob imports.
#[allow(unused_imports)]
pub use super::assert::{err_of, res_of};
use super::rpc::next_id;
use super::start::Env;
#[cfg(unix)]
use super::start::{start_in, traversable_dir};
#[cfg(unix)]
use super::users::{client_as, Accounts, OsGroup, OsUser};
use super::{Client, RECV_TIMEOUT};

/// Largest file (§4).
pub const MAX_FILE: usize = 10 * 1024 * 1024;
/// Largest decoded `file/attach` request (§4).
pub const MAX_REQUEST: usize = 20 * 1024 * 1024;
/// Largest decoded chunk (§4).
pub const CHUNK: usize = 1024 * 1024;
/// Staged bytes, all connections (§4).
pub const BUDGET: usize = 256 * 1024 * 1024;
/// Fixed charge per staged upload (§8.18.1).
pub const OVERHEAD: usize = 256;
/// The admin principal of the test's own uid (§6.1).
pub const OPERATOR: &str = "shared-operator";

// ---------------------------------------------------------------------------
// Daemons

impl Env {
    /// `<config_dir>/agents/echo/workspace` (the default workspace, §10.2).
    pub fn workspace(&self) -> PathBuf {
        self.daemon
            .config_dir
            .join("agents")
            .join("echo")
            .join("workspace")
    }

    /// The echo agent's `uploads/` directory.
    pub fn uploads(&self) -> PathBuf {
        self.workspace().join("uploads")
    }

    /// Where content `bytes` with extension `ext` is stored.
    pub fn stored(&self, bytes: &[u8], ext: Option<&str>) -> PathBuf {
        let name = match ext {
            Some(e) => format!("{}.{e}", sha256_hex(bytes)),
            None => sha256_hex(bytes),
        };
        self.uploads().join(name)
    }

    /// A scratch directory outside the daemon's dirs (for path-mode files,
    /// link targets), created on first use.
    pub fn scratch(&self) -> PathBuf {
        let p = self.dir.path().join("scratch");
        std::fs::create_dir_all(&p).expect("creating the scratch dir");
        p
    }
}

// ---------------------------------------------------------------------------
// A roster user (root only; Unix only: OS accounts made with useradd)

/// A daemon whose roster maps one OS user to `user:<name>` with profile
/// `uploader` (`profile` is the body of that profile's table).
#[cfg(unix)]
#[derive(Debug)]
pub struct Roster {
    pub env: Env,
    pub user: OsUser,
    pub group: OsGroup,
    // Dropped last: the accounts outlive the daemon.
    pub accounts: Accounts,
}

/// The profile most roster tests use: sessions and files, the echo agent.
pub const UPLOADER: &str = r#"allowed_agents = ["echo"]
grants = { sessions = ["create", "read", "update", "delete", "execute"], files = ["create"], system = ["read"] }
"#;

/// On Windows there are no roster users to make (OS accounts with
/// `useradd`, peers told apart by uid): [`Roster::start`] says so and the
/// tests skip.
#[cfg(windows)]
#[derive(Debug)]
pub struct Roster {
    pub env: Env,
}

#[cfg(windows)]
impl Roster {
    pub fn start(_profile: &str, _extra: &str) -> Result<Self, String> {
        Err("roster users are OS accounts told apart by uid (Unix only)".to_owned())
    }

    pub fn principal(&self) -> String {
        unreachable!("no Roster is made on Windows")
    }

    pub fn client(&self) -> Client {
        unreachable!("no Roster is made on Windows")
    }
}

#[cfg(unix)]
impl Roster {
    /// The roster daemon, or why real accounts are unavailable here.
    pub fn start(profile: &str, extra: &str) -> Result<Self, String> {
        let mut accounts = Accounts::new()?;
        let group = accounts.group();
        let user = accounts.user(Some(&group));
        let config = format!(
            "schema_version = 1\n\n[security]\nsocket_group = \"{g}\"\n\n[agents.echo]\nbackend = \"echo\"\n\n\
             [permission_profiles.uploader]\n{profile}\n[users.{u}]\nuid = {uid}\npermission_profiles = [\"uploader\"]\n\n{extra}",
            g = group.name,
            u = user.name,
            uid = user.uid,
        );
        let env = start_in(traversable_dir(), &config);
        Ok(Self {
            env,
            user,
            group,
            accounts,
        })
    }

    /// The roster user's principal id.
    pub fn principal(&self) -> String {
        format!("user:{}", self.user.name)
    }

    /// A connection as the roster user that completed `initialize`.
    pub fn client(&self) -> Client {
        let mut c = client_as(&self.env.socket, &self.user);
        let r = c.ok("initialize", json!({"protocolVersion": 1}));
        assert_eq!(r["principalId"], self.principal(), "{r}");
        c
    }
}

// ---------------------------------------------------------------------------
// Bytes

/// Standard padded base64.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `len` deterministic pseudo-random bytes (different for each `seed`).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Writes `bytes` to `path` and returns the path as a string.
pub fn put(path: &Path, bytes: &[u8]) -> String {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path.to_str().expect("UTF-8 path").to_owned()
}

// ---------------------------------------------------------------------------
// Directory snapshots

/// One entry of a directory tree, compared exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A regular file: its bytes and inode (a rewrite shows as a new inode).
    File {
        bytes: Vec<u8>,
        ino: u64,
    },
    Dir,
    Link(PathBuf),
    Fifo,
    Other,
}

/// Every entry below `root` (links are not followed), by relative path;
/// empty if `root` does not exist.
pub fn tree(root: &Path) -> BTreeMap<PathBuf, Node> {
    let mut out = BTreeMap::new();
    walk(root, Path::new(""), &mut out);
    out
}

fn walk(root: &Path, rel: &Path, out: &mut BTreeMap<PathBuf, Node>) {
    let Ok(rd) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    for e in rd {
        let e = e.expect("reading a directory entry");
        let r = rel.join(e.file_name());
        let p = root.join(&r);
        let m = std::fs::symlink_metadata(&p).expect("lstat");
        let ft = m.file_type();
        let node = if ft.is_symlink() {
            Node::Link(std::fs::read_link(&p).expect("readlink"))
        } else if ft.is_dir() {
            walk(root, &r, out);
            Node::Dir
        } else if ft.is_file() {
            Node::File {
                bytes: std::fs::read(&p).expect("reading a file"),
                ino: inode(&m),
            }
        } else if is_fifo(&ft) {
            Node::Fifo
        } else {
            Node::Other
        };
        out.insert(r, node);
    }
}

/// The file's inode number (a replaced file has a new one); 0 on Windows,
/// whose stable std has no file index (the bytes are still compared).
fn inode(m: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    return m.ino();
    #[cfg(windows)]
    {
        let _ = m;
        0
    }
}

fn is_fifo(ft: &std::fs::FileType) -> bool {
    #[cfg(unix)]
    return ft.is_fifo();
    #[cfg(windows)]
    {
        let _ = ft;
        false
    }
}

/// The names directly in `dir` (sorted); empty if it does not exist.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Asserts that `dir` holds exactly these regular files (name → bytes) and nothing else.
#[track_caller]
pub fn assert_files(dir: &Path, expected: &[(&Path, &[u8])]) {
    let got = tree(dir);
    let want: BTreeMap<PathBuf, Vec<u8>> = expected
        .iter()
        .map(|(p, b)| (p.strip_prefix(dir).unwrap_or(p).to_owned(), b.to_vec()))
        .collect();
    let got_files: BTreeMap<PathBuf, Vec<u8>> = got
        .iter()
        .filter_map(|(p, n)| match n {
            Node::File { bytes, .. } => Some((p.clone(), bytes.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        got.len(),
        got_files.len(),
        "{} holds something other than regular files: {:?}",
        dir.display(),
        got.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        got_files.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "files in {}",
        dir.display()
    );
    for (p, b) in &want {
        assert!(got_files[p] == *b, "bytes of {}", p.display());
    }
}

// ---------------------------------------------------------------------------
// Requests

/// `-32602` `unknown_upload`.
#[track_caller]
pub fn assert_unknown_upload(e: &Value) {
    assert_error_exact(
        e,
        -32602,
        Some("unknown upload"),
        Some(json!({"reason": "unknown_upload"})),
    );
}

/// A `data_b64` file entry.
pub fn entry(bytes: &[u8], filename: Option<&str>) -> Value {
    let mut e = json!({ "data_b64": b64(bytes) });
    if let Some(f) = filename {
        e["filename"] = json!(f);
    }
    e
}

/// `file/attach`; the whole answer.
pub fn attach(c: &mut Client, session: &str, files: Value) -> Value {
    c.call_frame(
        "file/attach",
        json!({"session_id": session, "files": files}),
    )
}

/// `file/attach` that must succeed; its `files`.
#[track_caller]
pub fn attach_ok(c: &mut Client, session: &str, files: Value) -> Vec<Value> {
    let v = attach(c, session, files);
    v.get("result")
        .unwrap_or_else(|| panic!("file/attach failed: {v}"))["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files array: {v}"))
        .clone()
}

/// The file result §8.17 requires for content `bytes` stored at `path`.
pub fn file_result(bytes: &[u8], path: &Path, marker: String, dedup: bool) -> Value {
    json!({
        "ref_id": format!("sha256:{}", sha256_hex(bytes)),
        "marker": marker,
        "workspace_path": path.to_str().unwrap(),
        "size_bytes": bytes.len(),
        "deduplicated": dedup,
    })
}

/// `[Document: <name>] <path>`.
pub fn doc_marker(name: &str, path: &Path) -> String {
    format!("[Document: {name}] {}", path.display())
}

/// `file/upload/begin`; the whole answer.
pub fn begin(c: &mut Client, params: Value) -> Value {
    c.call_frame("file/upload/begin", params)
}

/// `file/upload/begin` that must succeed; the upload id (the result checked).
#[track_caller]
pub fn begin_ok(c: &mut Client, params: Value) -> String {
    let v = begin(c, params);
    let r = v
        .get("result")
        .unwrap_or_else(|| panic!("file/upload/begin failed: {v}"));
    let id = r["upload_id"].as_str().unwrap_or_default().to_owned();
    assert!(
        id.len() == 36
            && id.starts_with("upl_")
            && id[4..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "upload_id: {r}"
    );
    assert_eq!(
        r,
        &json!({"upload_id": id, "chunk_bytes": CHUNK, "max_bytes": MAX_FILE}),
        "begin result"
    );
    id
}

/// `file/upload/chunk` with `bytes` at `offset`; the whole answer.
pub fn chunk(c: &mut Client, upload: &str, offset: u64, bytes: &[u8]) -> Value {
    c.call_frame(
        "file/upload/chunk",
        json!({"upload_id": upload, "offset": offset, "data_b64": b64(bytes)}),
    )
}

/// A chunk that must be accepted as new; checks the result exactly.
#[track_caller]
pub fn chunk_ok(c: &mut Client, upload: &str, offset: u64, bytes: &[u8]) {
    let v = chunk(c, upload, offset, bytes);
    assert_eq!(
        v.get("result"),
        Some(&json!({"upload_id": upload, "received_bytes": offset + bytes.len() as u64})),
        "chunk at {offset}: {v}"
    );
}

/// `file/upload/commit`; the whole answer.
pub fn commit(c: &mut Client, upload: &str) -> Value {
    c.call_frame("file/upload/commit", json!({ "upload_id": upload }))
}

/// begin (with the content's sha256), 1 MiB chunks, commit; the commit answer.
pub fn upload(c: &mut Client, session: &str, bytes: &[u8], filename: Option<&str>) -> Value {
    let mut p =
        json!({"session_id": session, "size_bytes": bytes.len(), "sha256": sha256_hex(bytes)});
    if let Some(f) = filename {
        p["filename"] = json!(f);
    }
    let id = begin_ok(c, p);
    for (i, piece) in bytes.chunks(CHUNK).enumerate() {
        chunk_ok(c, &id, (i * CHUNK) as u64, piece);
    }
    commit(c, &id)
}

/// The frames of one prompt: those before its answer, and the answer.
#[derive(Debug)]
pub struct Prompted {
    pub before: Vec<Value>,
    pub answer: Value,
}

impl Prompted {
    /// The concatenated `agent_message_chunk` texts.
    pub fn text(&self) -> String {
        self.before
            .iter()
            .filter(|f| f["params"]["type"] == "agent_message_chunk")
            .map(|f| f["params"]["text"].as_str().unwrap_or_default())
            .collect()
    }
}

/// `session/prompt` with `attachments` (omitted if `None`), read up to its answer.
pub fn prompt(c: &mut Client, session: &str, text: &str, attachments: Option<Value>) -> Prompted {
    let id = next_id();
    let mut params = json!({"session_id": session, "prompt": text});
    if let Some(a) = attachments {
        params["attachments"] = a;
    }
    c.send_json(&json!({"jsonrpc": "2.0", "method": "session/prompt", "params": params, "id": id}));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut before = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "no answer to the prompt: {before:?}"
        );
        let f = c.recv_json();
        if f.get("method").is_none() && f["id"] == id {
            return Prompted { before, answer: f };
        }
        before.push(f);
    }
}

/// `session/messages` rows of a session as `[role, content]` pairs.
pub fn transcript(c: &mut Client, session: &str) -> Vec<(String, String)> {
    let r = c.ok("session/messages", json!({ "session_id": session }));
    r["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages: {r}"))
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The default wait for a frame.
pub const WAIT: Duration = RECV_TIMEOUT;
