//! `zeroclaw doctor` (placeholder until written).

/// Runs the checks; the exit status.
pub async fn run(_config_dir: Option<&std::ffi::OsStr>) -> i32 {
    1
}
