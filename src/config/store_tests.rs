//! Unit tests of `store.rs`: creation, the config_changed check, atomic commits.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::*;
use crate::config::staging::stage_many;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "zeroclaw-config-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn open_creates_the_default_file() {
    let dir = TempDir::new();
    let (store, config) = ConfigStore::open(&dir.0).unwrap();
    let text = fs::read_to_string(store.path()).unwrap();
    assert_eq!(text, Config::default_file_text());
    assert_eq!(store.last_bytes(), text.as_bytes());
    assert_eq!(config.agents["echo"].backend.as_deref(), Some("echo"));
    #[cfg(unix)]
    assert_eq!(mode(&store.path()), 0o600);
    // A second open reads the existing file.
    let (_, again) = ConfigStore::open(&dir.0).unwrap();
    assert_eq!(again, config);
}

#[test]
fn open_rejects_invalid_files_naming_the_path() {
    let dir = TempDir::new();
    let file = dir.0.join("config.toml");
    let cases = [
        (
            "[users.a]\nuid = 5\n",
            "users.a.permission_profiles: required",
        ),
        ("[daemon]\nbogus = 1\n", "daemon.bogus: unknown key"),
        (
            "[gateway]\nport = 70000\n",
            "gateway.port: expected an integer in 0..=65535",
        ),
        (
            "[agents.x]\nbackend = 1\n",
            "agents.x.backend: expected a string",
        ),
        (
            "[agents.x]\nbackend = \"echo\"\nenv = { A = 1 }\n",
            "agents.x.env: expected a table",
        ),
        ("daemon = 3\n", "daemon: expected a table"),
    ];
    for (text, want) in cases {
        fs::write(&file, text).unwrap();
        let e = ConfigStore::open(&dir.0).unwrap_err();
        let ConfigError::Startup(message) = &e else {
            panic!("{e:?}");
        };
        assert!(
            message.contains(&format!("invalid configuration: {want}")),
            "{message}"
        );
        assert!(
            message.starts_with(&file.display().to_string()),
            "{message}"
        );
    }
    fs::write(&file, "[daemon\n").unwrap();
    assert!(matches!(
        ConfigStore::open(&dir.0),
        Err(ConfigError::Startup(_))
    ));
}

#[test]
fn commit_writes_atomically_and_reloads_equal() {
    let dir = TempDir::new();
    let (mut store, config) = ConfigStore::open(&dir.0).unwrap();
    let sets = vec![("agents.echo.chunk_chars".to_owned(), json!(4))];
    let (candidate, _) = stage_many(&config, &sets).unwrap();
    store.commit(&candidate, &[]).unwrap();
    assert_eq!(names(&dir.0), ["config.toml", "config.toml.lock"]);
    #[cfg(unix)]
    assert_eq!(mode(&store.path()), 0o600);
    let bytes = fs::read(store.path()).unwrap();
    assert_eq!(store.last_bytes(), bytes.as_slice());
    let (_, reloaded) = ConfigStore::open(&dir.0).unwrap();
    assert_eq!(reloaded, candidate);
    // A second commit from the same store succeeds: it knows what it wrote.
    store.commit(&config, &[]).unwrap();
    assert_eq!(ConfigStore::open(&dir.0).unwrap().1, config);
}

#[test]
fn an_invalid_entry_leaves_the_file_byte_identical() {
    let dir = TempDir::new();
    let (store, config) = ConfigStore::open(&dir.0).unwrap();
    let before = fs::read(store.path()).unwrap();
    let sets = vec![
        ("agents.echo.chunk_chars".to_owned(), json!(4)),
        ("agents.echo.nope".to_owned(), json!(1)),
    ];
    let e = stage_many(&config, &sets).unwrap_err();
    assert!(matches!(
        e,
        ConfigError::InvalidEntry { index: Some(1), .. }
    ));
    assert_eq!(fs::read(store.path()).unwrap(), before);
}

#[test]
fn an_external_edit_fails_with_config_changed_and_writes_nothing() {
    let dir = TempDir::new();
    let (mut store, config) = ConfigStore::open(&dir.0).unwrap();
    let edited = format!("{}# edited\n", Config::default_file_text());
    fs::write(store.path(), &edited).unwrap();
    let mut candidate = config.clone();
    candidate.daemon.ask_timeout_secs = 7;
    assert_eq!(
        store.commit(&candidate, &[]),
        Err(ConfigError::ConfigChanged)
    );
    assert_eq!(fs::read_to_string(store.path()).unwrap(), edited);
    assert!(!dir.0.join("config.toml.tmp").exists());
    // A removed file counts as changed too.
    fs::remove_file(store.path()).unwrap();
    assert_eq!(
        store.commit(&candidate, &[]),
        Err(ConfigError::ConfigChanged)
    );
    assert!(!store.path().exists());
}

#[test]
fn the_fault_hook_fails_before_writing() {
    let dir = TempDir::new();
    let (mut store, config) = ConfigStore::open(&dir.0).unwrap();
    let before = fs::read(store.path()).unwrap();
    store.fail_commit = true;
    let mut candidate = config.clone();
    candidate.daemon.ask_timeout_secs = 7;
    let e = store.commit(&candidate, &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Config save failed: injected fault: config_commit"
    );
    assert_eq!(fs::read(store.path()).unwrap(), before);
    assert_eq!(names(&dir.0), ["config.toml", "config.toml.lock"]);
    store.fail_commit = false;
    store.commit(&candidate, &[]).unwrap();
}

#[test]
fn a_failed_write_leaves_no_tmp_file() {
    let dir = TempDir::new();
    let (mut store, config) = ConfigStore::open(&dir.0).unwrap();
    let before = fs::read(store.path()).unwrap();
    // A directory where the tmp file should go makes the write fail.
    fs::create_dir(dir.0.join("config.toml.tmp")).unwrap();
    let mut candidate = config.clone();
    candidate.daemon.ask_timeout_secs = 7;
    let e = store.commit(&candidate, &[]).unwrap_err();
    assert!(matches!(e, ConfigError::Storage { .. }), "{e:?}");
    assert_eq!(fs::read(store.path()).unwrap(), before);
    assert_eq!(store.last_bytes(), before.as_slice());
    // A stale tmp file from a crash is replaced.
    fs::remove_dir(dir.0.join("config.toml.tmp")).unwrap();
    fs::write(dir.0.join("config.toml.tmp"), "junk").unwrap();
    store.commit(&candidate, &[]).unwrap();
    assert_eq!(names(&dir.0), ["config.toml", "config.toml.lock"]);
}

#[test]
fn commit_round_trips_every_kind_of_field() {
    let dir = TempDir::new();
    let (mut store, config) = ConfigStore::open(&dir.0).unwrap();
    let sets: Vec<(String, serde_json::Value)> = [
        ("security.socket_group", json!("zeroclaw")),
        ("gateway.tls_cert", json!("/c.pem")),
        ("agents.llm.backend", json!("command")),
        ("agents.llm.command", json!(["llm", "--model", "local"])),
        ("agents.llm.env", json!({"A": "1", "B b": "x\"y"})),
        ("agents.llm.system_prompt", json!("multi\nline \u{e9}")),
        (
            "permission_profiles.op.grants",
            json!({"sessions": ["read"]}),
        ),
        ("permission_profiles.op.allowed_agents", json!(["*"])),
        (
            "permission_profiles.op.config_write_paths",
            json!(["agents.echo.*"]),
        ),
        ("users.example.uid", json!(1001)),
        ("users.example.permission_profiles", json!(["op"])),
        ("users.example.principal_id", json!("ex")),
    ]
    .iter()
    .map(|(p, v)| ((*p).to_owned(), v.clone()))
    .collect();
    let (mut candidate, _) = stage_many(&config, &sets).unwrap();
    candidate.gateway.paired_tokens = vec!["0".repeat(64)];
    store.commit(&candidate, &[]).unwrap();
    assert_eq!(ConfigStore::open(&dir.0).unwrap().1, candidate);
}
