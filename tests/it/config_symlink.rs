//! A `config.toml` that is a symbolic link (a dotfiles checkout) is written
//! through to its target: `config/set` replaces the target atomically and
//! the link stays a link (docs/decisions.md).

// Unix only: a config.toml that is a symlink (std::os::unix::fs::symlink).

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::{Daemon, TestDir};
use serde_json::json;

#[test]
fn config_set_writes_through_a_symlinked_config_toml() {
    let t = TestDir::new();
    let dotfiles = t.path().join("dotfiles");
    std::fs::create_dir(&dotfiles).unwrap();
    let target = dotfiles.join("zeroclaw.toml");
    std::fs::write(
        &target,
        "schema_version = 1\n\n[agents.echo]\nbackend = \"echo\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let cfg = t.path().join("cfg");
    std::fs::create_dir(&cfg).unwrap();
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = cfg.join("config.toml");
    std::os::unix::fs::symlink(&target, &link).unwrap();

    let d = Daemon::builder().config_dir(&cfg).spawn();
    let mut c = d.client();
    c.config_set("agents.echo.chunk_chars", json!(3));
    // Twice: the second commit reads through the link what the first wrote.
    let v = c.call_frame(
        "config/set",
        json!({"prop": "agents.echo.chunk_chars", "value": 4}),
    );
    assert!(v.get("result").is_some(), "{v}");

    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_link(&link).unwrap(), target);
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.contains("chunk_chars = 4"), "{text}");
    assert_eq!(
        std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let leftovers: Vec<_> = std::fs::read_dir(&dotfiles)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("zeroclaw.toml")]);
}
