//! How `config.toml` is read and written (§2.1, §8.16 step 8, §8.20,
//! §11): the `config_commit` fault point, a file changed behind the
//! daemon's back, and what startup accepts.

use crate::common;
use common::assert::{assert_error_exact, err_of};
use common::start::write_config;

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;

use common::users::{config_bytes, get, set_many};
use common::{Client, Daemon, TestDir};
use serde_json::{json, Value};
use zeroclaw::config::Config;

fn running(c: &mut Client) -> Value {
    c.ok("config/get", json!({}))
}

fn storage_error(v: &Value) {
    assert_error_exact(
        &err_of(v),
        -32603,
        Some("Config save failed: injected fault: config_commit"),
        Some(json!({"reason": "storage"})),
    );
}

fn config_changed(v: &Value) {
    assert_error_exact(
        &err_of(v),
        -32603,
        Some("config.toml changed on disk; restart the daemon"),
        Some(json!({"reason": "config_changed"})),
    );
}

#[test]
fn an_injected_commit_fault_fails_every_writer_with_storage_and_changes_nothing() {
    let d = Daemon::builder().arg("--test-faults").spawn();
    let mut c = d.client();
    assert_eq!(
        c.ok("debug/set-faults", json!({"faults": ["config_commit"]})),
        json!({"faults": ["config_commit"]})
    );
    let bytes = config_bytes(&d.config_dir);
    let before = running(&mut c);

    let v = set_many(
        &mut c,
        &[
            ("agents.echo.chunk_chars", json!(3)),
            ("daemon.ask_timeout_secs", json!(5)),
        ],
    );
    storage_error(&v);
    let v = c.call_frame(
        "config/set",
        json!({"prop": "agents.echo.chunk_chars", "value": 3}),
    );
    storage_error(&v);
    let v = c.call_frame("pairing/create", json!({}));
    storage_error(&v);
    assert_eq!(c.ok("pairing/list", json!({})), json!({"token_hashes": []}));
    // Validation still comes first (step 6 before step 8).
    let v = set_many(&mut c, &[("agents.echo.chunk_chars", json!(0))]);
    assert_eq!(v["error"]["code"], -32602, "{v}");

    assert_eq!(config_bytes(&d.config_dir), bytes);
    assert_eq!(running(&mut c), before);
    assert!(!d.config_dir.join("config.toml.tmp").exists());

    // A failed policy commit installs nothing either: the generation did not
    // move for this (admin) connection, which keeps working.
    let v = set_many(&mut c, &[("security.trust_daemon_uid", json!(false))]);
    storage_error(&v);
    assert_eq!(get(&mut c, "security.trust_daemon_uid"), true);
    c.ok("status", json!({}));

    // With the fault cleared the same batch commits.
    assert_eq!(
        c.ok("debug/set-faults", json!({"faults": []})),
        json!({"faults": []})
    );
    let v = set_many(
        &mut c,
        &[
            ("agents.echo.chunk_chars", json!(3)),
            ("daemon.ask_timeout_secs", json!(5)),
        ],
    );
    assert_eq!(v["result"]["set"], true, "{v}");
    assert_ne!(config_bytes(&d.config_dir), bytes);
    assert_eq!(get(&mut c, "agents.echo.chunk_chars"), 3);

    // Other fault points do not touch config commits.
    c.ok(
        "debug/set-faults",
        json!({"faults": ["snapshot_write", "upload_write"]}),
    );
    let v = set_many(&mut c, &[("agents.echo.chunk_chars", json!(4))]);
    assert_eq!(v["result"]["set"], true, "{v}");
    let v = c.call_frame("debug/set-faults", json!({"faults": ["nope"]}));
    assert_eq!(v["error"]["code"], -32602, "{v}");
}

#[test]
fn a_config_toml_edited_behind_the_daemon_is_never_overwritten() {
    // Without the poll (SIGHUP only), the edits stay unread for as long as this test needs;
    // tests/it/config_file.rs covers what a reload does.
    let d = Daemon::builder()
        .env("ZEROCLAW_CONFIG_POLL_MS", "0")
        .spawn();
    let mut c = d.client();
    let v = set_many(&mut c, &[("agents.echo.chunk_chars", json!(3))]);
    assert_eq!(v["result"]["set"], true, "{v}");
    let committed = config_bytes(&d.config_dir);
    let before = running(&mut c);

    // Someone edits the file: every writer refuses and writes nothing.
    let mut edited = committed.clone();
    edited.extend_from_slice(b"# a comment added by hand\n");
    std::fs::write(d.config_dir.join("config.toml"), &edited).unwrap();
    let v = set_many(&mut c, &[("agents.echo.chunk_chars", json!(4))]);
    config_changed(&v);
    let v = c.call_frame(
        "config/set",
        json!({"prop": "agents.echo.chunk_chars", "value": 4}),
    );
    config_changed(&v);
    let v = c.call_frame("pairing/create", json!({}));
    config_changed(&v);
    assert_eq!(config_bytes(&d.config_dir), edited);
    assert_eq!(running(&mut c), before);
    assert!(!d.config_dir.join("config.toml.tmp").exists());

    // A semantically different edit, and a removed file, likewise.
    let other = String::from_utf8(committed.clone())
        .unwrap()
        .replace("chunk_chars = 3", "chunk_chars = 9");
    std::fs::write(d.config_dir.join("config.toml"), &other).unwrap();
    config_changed(&set_many(&mut c, &[("agents.echo.chunk_chars", json!(4))]));
    assert_eq!(config_bytes(&d.config_dir), other.as_bytes());
    assert_eq!(get(&mut c, "agents.echo.chunk_chars"), 3);
    std::fs::remove_file(d.config_dir.join("config.toml")).unwrap();
    config_changed(&set_many(&mut c, &[("agents.echo.chunk_chars", json!(4))]));
    assert!(!d.config_dir.join("config.toml").exists());

    // The bytes the daemon last wrote, put back (even as a new inode with a
    // new mtime), are not a change.
    std::fs::write(d.config_dir.join("config.toml"), &committed).unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(
        d.config_dir.join("config.toml"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let v = set_many(&mut c, &[("agents.echo.chunk_chars", json!(4))]);
    assert_eq!(v["result"]["set"], true, "{v}");
    assert_eq!(get(&mut c, "agents.echo.chunk_chars"), 4);
}

#[test]
fn a_hand_edited_file_is_read_at_the_next_start() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    let d = Daemon::builder().config_dir(&cfg).spawn();
    drop(d);
    let edited = "# my settings\nschema_version = 1\n\n[agents.echo]\nbackend = \"echo\" # inline\nchunk_chars = 2\n";
    write_config(&cfg, edited);
    let d = Daemon::builder().config_dir(&cfg).spawn();
    let mut c = d.client();
    assert_eq!(get(&mut c, "agents.echo.chunk_chars"), 2);
    // Comments are not preserved by a commit (docs/decisions.md), but what
    // the daemon writes loads back as the running config.
    let v = set_many(&mut c, &[("agents.echo.chunk_chars", json!(5))]);
    assert_eq!(v["result"]["set"], true, "{v}");
    let text = String::from_utf8(config_bytes(&cfg)).unwrap();
    let file = Config::from_toml_str(&text).unwrap();
    assert_eq!(file.agents["echo"].chunk_chars, 5);
    assert_eq!(file.agents["echo"].backend.as_deref(), Some("echo"));
}

#[test]
fn a_missing_config_toml_is_created_private_with_the_echo_agent() {
    let d = Daemon::start();
    let path = d.config_dir.join("config.toml");
    let meta = std::fs::metadata(&path).unwrap();
    #[cfg(unix)]
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    #[cfg(windows)]
    assert!(meta.is_file());
    let file =
        Config::from_toml_str(&String::from_utf8(config_bytes(&d.config_dir)).unwrap()).unwrap();
    assert_eq!(file.schema_version, 1);
    assert_eq!(file.agents.keys().collect::<Vec<_>>(), ["echo"]);
    assert_eq!(file.agents["echo"].backend.as_deref(), Some("echo"));
    assert!(file.users.is_empty() && file.permission_profiles.is_empty());
}

#[test]
fn startup_refuses_invalid_configuration_naming_the_path() {
    let cases: [(&str, &str); 6] = [
        (
            "schema_version = 1\n[daemon]\nnope = 1\n",
            "daemon.nope: unknown key",
        ),
        ("schema_version = ", "config.toml"),
        (
            "schema_version = 1\n[agents.echo]\nbackend = \"echo\"\n[users.x]\nuid = 5\n",
            "users.x.permission_profiles: required",
        ),
        ("schema_version = 2\n", "schema_version"),
        (
            "schema_version = 1\n[agents.echo]\nbackend = \"echo\"\nchunk_chars = \"4\"\n",
            "agents.echo.chunk_chars",
        ),
        (
            "schema_version = 1\n[permission_profiles.p]\ngrants = { pairing = [\"read\"] }\n",
            "permission_profiles.p.grants.pairing",
        ),
    ];
    for (text, needle) in cases {
        let dir = TestDir::new();
        write_config(&dir.config_dir(), text);
        let f = match Daemon::builder().config_dir(dir.config_dir()).try_spawn() {
            Ok(_) => panic!("the daemon started with {text:?}"),
            Err(f) => f,
        };
        assert_eq!(f.status.code(), Some(1), "{text:?}");
        let log = f.log.text();
        assert!(log.contains(needle), "{text:?}: {needle:?} not in:\n{log}");
        // Nothing rewrote the file.
        assert_eq!(config_bytes(&dir.config_dir()), text.as_bytes());
    }
}

#[test]
fn startup_fails_when_the_socket_group_does_not_exist() {
    if cfg!(windows) {
        return common::skip("socket_group is a Unix socket's group; a named pipe has none");
    }
    let dir = TestDir::new();
    let group = format!("zct{}nosuchgroup", std::process::id());
    write_config(
        &dir.config_dir(),
        &format!("schema_version = 1\n[security]\nsocket_group = \"{group}\"\n"),
    );
    let f = match Daemon::builder().config_dir(dir.config_dir()).try_spawn() {
        Ok(_) => panic!("the daemon started with a missing socket group"),
        Err(f) => f,
    };
    assert_eq!(f.status.code(), Some(1));
    assert!(f.log.text().contains(&group), "{}", f.log.text());
}
