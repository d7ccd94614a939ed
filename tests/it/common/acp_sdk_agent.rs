//! The ACP test agent written with the official SDK (tests/acp-sdk-agent/,
//! a package of its own so the SDK never joins zeroclaw's dependency graph):
//! built once per test run into `target/acp-sdk-agent`, under a `flock` so
//! concurrent test processes do not race on one cargo build; or built ahead
//! and named by `ZC_ACP_SDK_AGENT` where the test cannot run cargo (a
//! Windows build under Wine: scripts/windows.sh builds it for the target).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::BIN;

/// What in cargo's stderr says the registry could not be reached, or may
/// not be (`--offline` with the crates not cached): then the tests skip,
/// unless `CI` is `true` (CI has crates.io); any other build failure fails them.
const OFFLINE_SIGNS: [&str; 7] = [
    "failed to download",
    "you're using offline mode",
    "failed to get",
    "Unable to update",
    "failed to query replaced source",
    "Could not resolve host",
    "network",
];

/// The SDK agent's binary, or why it cannot be built here (no registry).
/// Panics on a build failure that is not about the network.
pub fn sdk_agent_bin() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(built_ahead_or_build).clone()
}

/// The variable naming an SDK agent built ahead.
const AHEAD: &str = "ZC_ACP_SDK_AGENT";

fn built_ahead_or_build() -> Result<PathBuf, String> {
    match std::env::var_os(AHEAD) {
        Some(p) if Path::new(&p).is_file() => Ok(PathBuf::from(p)),
        Some(p) => panic!("{AHEAD} names no file: {}", p.to_string_lossy()),
        None => build(),
    }
}

fn build() -> Result<PathBuf, String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp-sdk-agent/Cargo.toml");
    // target/debug/zeroclaw → target/acp-sdk-agent
    let target = Path::new(BIN)
        .ancestors()
        .nth(2)
        .expect("the binary lies in <target>/<profile>/")
        .join("acp-sdk-agent");
    std::fs::create_dir_all(&target).expect("creating target/acp-sdk-agent");
    let lock = File::create(target.join("build.lock")).expect("creating the build lock");
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a file descriptor we own; released when `lock` drops.
        let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(rc, 0, "flock: {}", std::io::Error::last_os_error());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .arg("build")
        .arg("--locked")
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .output();
    drop(lock);
    // Not a failure of the agent: this process cannot start cargo (Wine
    // runs Windows programs only); the tests skip and say so.
    let out = out.map_err(|e| {
        format!("cargo cannot be run here to build the SDK test agent ({e}); build it ahead and name it in {AHEAD}")
    })?;
    if out.status.success() {
        return Ok(target
            .join("debug")
            .join(format!("acp-sdk-agent{}", std::env::consts::EXE_SUFFIX)));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    // CI has crates.io: there a registry failure fails the tests.
    let ci = std::env::var("CI").as_deref() == Ok("true");
    if OFFLINE_SIGNS.iter().any(|s| stderr.contains(s)) && !ci {
        return Err(format!(
            "the SDK test agent cannot be built without the crates.io registry: {}",
            stderr.lines().last().unwrap_or("")
        ));
    }
    panic!(
        "building tests/acp-sdk-agent failed ({}):\n{stderr}",
        out.status
    );
}
