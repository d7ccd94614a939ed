//! The daemon never makes a pre-existing shared directory private
//! (§2.3 step 1): a data dir that is group- or
//! world-writable, owned by another uid, or reached through a symbolic link
//! it would have to chmod stops startup with exit status 1 and a message
//! naming the directory and why; the directory's mode is left as it was.

// Unix only: symlinked data dirs, chown and file modes.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{hermetic_env, run_cli, Daemon, TestDir, BIN};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A directory with mode 1777, like `/tmp`.
fn shared_dir(t: &TestDir, name: &str) -> std::path::PathBuf {
    let p = t.path().join(name);
    std::fs::create_dir(&p).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o1777)).unwrap();
    p
}

fn private_dir(p: &Path) {
    std::fs::create_dir_all(p).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// Asserts that a daemon on `cfg` refuses `link` for being a symbolic link.
#[track_caller]
fn refused_as_link(cfg: &Path, link: &Path) {
    let err = refused(cfg);
    let expected = format!(
        "refusing to use directory `{}`: it is a symbolic link",
        link.display()
    );
    assert!(err.contains(&expected), "{err}");
}

/// Starts a daemon on `cfg` that must refuse to start; its stderr.
fn refused(cfg: &Path) -> String {
    match Daemon::builder().config_dir(cfg).try_spawn() {
        Ok(_) => panic!("the daemon started on {}", cfg.display()),
        Err(f) => {
            assert_eq!(f.status.code(), Some(1), "{}", f.log.text());
            f.log.text()
        }
    }
}

#[test]
fn a_world_writable_zeroclaw_data_dir_is_refused_and_left_alone() {
    let t = TestDir::new();
    let shared = shared_dir(&t, "tmp");
    let mut cmd = Command::new(BIN);
    cmd.arg("daemon");
    hermetic_env(&mut cmd, t.path());
    cmd.env("ZEROCLAW_DATA_DIR", &shared);
    let (status, _out, err) = run_cli(cmd);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "refusing to use directory `{}`: it is group- or world-writable (mode 1777)",
            shared.display()
        )),
        "{err}"
    );
    assert_eq!(mode(&shared), 0o1777);
    assert!(!shared.join("daemon.sock").exists());
}

#[test]
fn a_data_link_to_a_shared_dir_is_refused_and_its_target_left_alone() {
    let t = TestDir::new();
    let shared = shared_dir(&t, "tmp");
    let cfg = t.path().join("cfg");
    private_dir(&cfg);
    std::os::unix::fs::symlink(&shared, cfg.join("data")).unwrap();
    refused_as_link(&cfg, &cfg.join("data"));
    assert_eq!(mode(&shared), 0o1777);
    // Even a link to a private directory of ours is not followed to chmod it.
    let own = t.path().join("own");
    std::fs::create_dir(&own).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o750)).unwrap();
    std::fs::remove_file(cfg.join("data")).unwrap();
    std::os::unix::fs::symlink(&own, cfg.join("data")).unwrap();
    refused_as_link(&cfg, &cfg.join("data"));
    assert_eq!(mode(&own), 0o750);
}

#[test]
fn a_linked_sessions_dir_is_refused_and_its_target_left_alone() {
    let t = TestDir::new();
    let shared = shared_dir(&t, "tmp");
    let cfg = t.path().join("cfg");
    private_dir(&cfg.join("data"));
    std::os::unix::fs::symlink(&shared, cfg.join("data/sessions")).unwrap();
    refused_as_link(&cfg, &cfg.join("data/sessions"));
    assert_eq!(mode(&shared), 0o1777);
    assert!(!shared.join("sessions.db").exists());
}

#[test]
fn a_data_dir_of_another_uid_is_refused() {
    if common::euid() != 0 {
        skip_test!("needs root to give a directory to another uid");
    }
    let t = TestDir::new();
    let cfg = t.path().join("cfg");
    private_dir(&cfg.join("data"));
    std::os::unix::fs::chown(cfg.join("data"), Some(65534), None).unwrap();
    let err = refused(&cfg);
    assert!(
        err.contains(&format!(
            "refusing to use directory `{}`: it is owned by uid 65534, not by the daemon's uid 0",
            cfg.join("data").display()
        )),
        "{err}"
    );
    assert_eq!(mode(&cfg.join("data")), 0o700);
}

#[test]
fn an_own_data_dir_is_still_narrowed_to_0700() {
    let t = TestDir::new();
    let cfg = t.path().join("cfg");
    private_dir(&cfg);
    std::fs::create_dir(cfg.join("data")).unwrap();
    std::fs::set_permissions(cfg.join("data"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = Daemon::builder().config_dir(&cfg).spawn();
    assert_eq!(mode(&cfg.join("data")), 0o700);
    assert_eq!(mode(&cfg.join("data/sessions")), 0o700);
    drop(d);
}
