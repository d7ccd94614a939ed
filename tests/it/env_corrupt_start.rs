//! A damaged `config.toml` or session database before start: the daemon
//! exits with status 1 and a message that names the file and says what to
//! do, and it changes nothing on disk (no "repair", no new default, no
//! recreated database): the damaged bytes are still there, unchanged, for
//! the operator to inspect or restore.

// Unix only: two tests stop the daemon gracefully with SIGTERM (AcpEnv::stop).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::acp::{echo_config, fold_wal, AcpEnv};
use common::files::{tree, Node};
use common::{DaemonBuilder, StartFailure};

/// Every file below the config dir, except what any start creates or
/// removes beside the data (directories, the locks, the socket).
fn snapshot(cfg: &Path) -> BTreeMap<PathBuf, Node> {
    let mut t = tree(cfg);
    t.retain(|p, node| {
        if matches!(node, Node::Dir) {
            // A start creates the config and data dirs before it reads anything.
            return false;
        }
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        !matches!(name, "daemon.lock" | "daemon.sock" | "daemon.sock.lock")
    });
    t
}

/// Starts a daemon on `cfg`, which must fail; checks the status, that
/// stderr names `file` and gives `advice`, and that nothing changed on disk.
fn assert_refused(cfg: &Path, file: &Path, advice: &str) -> String {
    let before = snapshot(cfg);
    let f: StartFailure = match DaemonBuilder::new().config_dir(cfg).try_spawn() {
        Ok(_) => panic!("the daemon started on a damaged {}", file.display()),
        Err(f) => f,
    };
    assert_eq!(f.status.code(), Some(1), "stderr: {}", f.log.text());
    let message = f
        .log
        .lines()
        .into_iter()
        .find(|l| l.starts_with("zeroclaw daemon: "))
        .unwrap_or_else(|| panic!("no plain error line; stderr: {}", f.log.text()));
    let text = f.log.text();
    assert!(
        message.contains(&file.display().to_string()),
        "the message does not name {}: {message}",
        file.display()
    );
    assert!(text.contains(advice), "no advice {advice:?} in: {text}");
    assert_eq!(snapshot(cfg), before, "the failed start changed files");
    text
}

/// A config dir with a stopped daemon's state: sessions with turns, the
/// database checkpointed into the main file (no WAL left).
fn stopped_env_with_sessions() -> AcpEnv {
    let mut env = AcpEnv::new(&echo_config(""));
    let mut rpc = env.rpc();
    for i in 0..30 {
        let sid = format!("s{i}");
        rpc.new_session(&sid, "acp");
        rpc.prompt_ok(
            &sid,
            &format!("::repeat 200 turn {i} of a stored session\n"),
        );
    }
    drop(rpc);
    env.stop();
    fold_wal(&env.db());
    env
}

const DB_ADVICE: &str = "restore it from a backup, or move it aside";
const CONFIG_ADVICE: &str = "correct it, or move it aside";

// ---------------------------------------------------------------------------
// config.toml

/// Starts on a config dir whose `config.toml` holds `content`; requires the
/// refusal, and the file's bytes unchanged. Returns stderr.
fn refused_config(content: &[u8]) -> String {
    let env = AcpEnv::stopped("");
    let file = env.config_dir().join("config.toml");
    std::fs::write(&file, content).unwrap();
    let text = assert_refused(&env.config_dir(), &file, CONFIG_ADVICE);
    assert_eq!(std::fs::read(&file).unwrap(), content);
    text
}

#[test]
fn a_config_that_is_not_toml_is_refused_untouched() {
    let text = refused_config(b"schema_version = 1\n[agents.echo\nbackend = \"ec");
    assert!(text.contains("TOML parse error"), "{text}");
}

#[test]
fn a_truncated_config_is_refused_untouched() {
    let full = echo_config("chunk_chars = 4\nsystem_prompt = \"be brief\"\n");
    let cut = full.find("be brief").unwrap() + 3;
    refused_config(&full.as_bytes()[..cut]);
}

#[test]
fn an_empty_config_is_refused_not_replaced() {
    for content in ["", "\n  \n"] {
        let text = refused_config(content.as_bytes());
        assert!(text.contains("is empty"), "{text}");
    }
}

#[test]
fn a_config_that_is_not_utf8_is_refused_untouched() {
    let text = refused_config(b"schema_version = 1\n\xff\xfe\n");
    assert!(text.contains("not UTF-8"), "{text}");
}

// ---------------------------------------------------------------------------
// sessions.db

#[test]
fn a_database_that_is_not_sqlite_is_refused_untouched() {
    let env = AcpEnv::stopped(&echo_config(""));
    let sessions = env.config_dir().join("data/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(
        env.db(),
        b"these are not the bytes of a database\n".repeat(200),
    )
    .unwrap();
    let text = assert_refused(&env.config_dir(), &env.db(), DB_ADVICE);
    assert!(text.contains("not a SQLite database"), "{text}");
}

#[test]
fn a_fifo_at_the_database_is_refused_at_once() {
    let env = AcpEnv::stopped(&echo_config(""));
    std::fs::create_dir_all(env.config_dir().join("data/sessions")).unwrap();
    let _ = std::fs::remove_file(env.db());
    let db = std::ffi::CString::new(env.db().as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(db.as_ptr(), 0o600) }, 0);
    let started = std::time::Instant::now();
    let f = match DaemonBuilder::new()
        .config_dir(env.config_dir())
        .try_spawn()
    {
        Ok(_) => panic!("the daemon started on a FIFO"),
        Err(f) => f,
    };
    assert_eq!(f.status.code(), Some(1), "stderr: {}", f.log.text());
    assert!(
        f.log.text().contains("not a regular file"),
        "{}",
        f.log.text()
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(env.db()).unwrap().file_type().is_fifo());
}

#[test]
fn a_truncated_database_is_refused_untouched() {
    let env = stopped_env_with_sessions();
    let bytes = std::fs::read(env.db()).unwrap();
    assert!(bytes.len() > 64 * 1024, "{} bytes", bytes.len());
    for keep in [bytes.len() / 2, 4096, 50] {
        std::fs::write(env.db(), &bytes[..keep]).unwrap();
        assert_refused(&env.config_dir(), &env.db(), DB_ADVICE);
        assert_eq!(std::fs::read(env.db()).unwrap(), &bytes[..keep]);
    }
}

#[test]
fn a_database_with_a_damaged_page_is_refused_untouched() {
    let env = stopped_env_with_sessions();
    let mut bytes = std::fs::read(env.db()).unwrap();
    // Page 1 holds the header and the schema; scribble over the whole of
    // some page in the middle: a b-tree page of the stored transcript.
    let page = 4096;
    let mid = (bytes.len() / page / 2) * page;
    for (i, b) in bytes[mid..mid + page].iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    std::fs::write(env.db(), &bytes).unwrap();
    assert_refused(&env.config_dir(), &env.db(), DB_ADVICE);
    assert_eq!(std::fs::read(env.db()).unwrap(), bytes);
}
