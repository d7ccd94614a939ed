//! Whether an agent's backend can be reached, one arm per backend: the
//! built-in echo agent always can; a command agent needs its program on
//! PATH (or at its path). Backends added later get their own arm here.

use std::path::{Path, PathBuf};

use super::Check;
use crate::config::AgentConfig;

pub fn reachable(alias: &str, agent: &AgentConfig) -> Check {
    let name = format!("agent {alias}");
    match agent.backend.as_deref() {
        Some("echo") => Check::pass(name, "built-in echo backend"),
        Some("command") | None => match agent.command.as_ref().and_then(|c| c.first()) {
            Some(program) => match find_program(program) {
                Some(path) => Check::pass(name, format!("command {program} is {}", path.display())),
                None => Check::fail(
                    name,
                    format!("command {program} is not found on PATH"),
                    format!("install {program}, or set agents.{alias}.command to its full path"),
                ),
            },
            None => Check::fail(
                name,
                "no command configured",
                format!("set agents.{alias}.command"),
            ),
        },
        Some(other) => Check::pass(
            name,
            format!("backend {other} (no reachability check for it yet)"),
        ),
    }
}

/// `program` itself when it names a path, else the first executable match on PATH.
fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        return is_executable(p).then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}
