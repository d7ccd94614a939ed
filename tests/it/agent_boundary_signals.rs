//! A SIGTERM at any moment after the daemon's socket exists is a graceful
//! stop: exit status 0, the socket file removed, the locks free. The
//! handlers are installed before the socket is bound; before that fix a
//! SIGTERM between the bind and the handlers (a unit stopped while still
//! starting) killed the daemon by signal and left its socket behind.

// Unix only: sends SIGTERM to the starting daemon (libc::kill).

use crate::common;

use std::process::{Command, Stdio};
use std::time::Instant;

use common::{hermetic_env, wait_timeout, TestDir, BIN, EXIT_TIMEOUT, STARTUP_TIMEOUT};

/// How many starts are stopped at the moment their socket appears.
const ROUNDS: usize = 30;

#[test]
fn sigterm_as_soon_as_the_socket_exists_is_a_graceful_stop() {
    let dir = TestDir::new();
    let cfg = dir.config_dir();
    let socket = cfg.join("data").join("daemon.sock");
    let stderr_path = dir.path().join("stderr.log");
    for round in 0..ROUNDS {
        let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
        let mut cmd = Command::new(BIN);
        cmd.arg("daemon").arg("--config-dir").arg(&cfg);
        hermetic_env(&mut cmd, dir.path());
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let mut child = cmd.spawn().expect("spawning zeroclaw");
        // Spin: the window between the bind and the handlers is short.
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while std::fs::symlink_metadata(&socket).is_err() {
            if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
                let _ = child.kill();
                panic!(
                    "round {round}: no socket appeared; stderr:\n{}",
                    std::fs::read_to_string(&stderr_path).unwrap_or_default()
                );
            }
            std::hint::spin_loop();
        }
        // SAFETY: kill has no memory effects; the pid is our unreaped child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let status = wait_timeout(&mut child, EXIT_TIMEOUT).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("round {round}: SIGTERM did not stop the daemon")
        });
        let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        assert_eq!(
            status.code(),
            Some(0),
            "round {round}: {status:?} (killed by the signal?); stderr:\n{log}"
        );
        assert!(
            std::fs::symlink_metadata(&socket).is_err(),
            "round {round}: the socket file was left behind; stderr:\n{log}"
        );
    }
    // The locks are free: a daemon starts on the same directories and serves.
    let d = common::Daemon::builder().config_dir(&cfg).spawn();
    let mut c = d.client();
    assert!(c.status().is_object());
}
