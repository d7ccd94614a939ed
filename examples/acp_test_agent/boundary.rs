//! The directives of the ACP test agent (a module of
//! examples/acp_test_agent.rs) that probe the agent boundary
//! (tests/it/agent_boundary_*.rs):
//!
//! - `env`: says `env: NAME=VALUE …`, its whole environment, sorted;
//! - `orphan FILE`: starts `setsid sh` (a new session: out of our process
//!   group) that writes its pid to FILE and sleeps 300 s, then says
//!   `orphan: <pid>`;
//! - `exitkeep CODE`: starts `sleep 30` holding our stdout and stderr, then
//!   exits with CODE (the daemon must notice the exit, not wait for EOF).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the directive `word` says, `None` for a word not of this module.
pub fn directive(word: &str, rest: &str) -> Option<String> {
    match word {
        "env" => {
            let mut vars: Vec<String> = std::env::vars_os()
                .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                .collect();
            vars.sort();
            Some(format!("env: {}", vars.join(" ")))
        }
        "orphan" => Some(orphan(rest)),
        "exitkeep" => {
            // stdout and stderr are inherited: the pipes stay open.
            let _ = Command::new("sleep").arg("30").stdin(Stdio::null()).spawn();
            std::process::exit(rest.parse().unwrap_or(1));
        }
        _ => None,
    }
}

fn orphan(file: &str) -> String {
    let script = format!("echo $$ > '{file}.tmp' && mv '{file}.tmp' '{file}' && exec sleep 300");
    let started = Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    if let Err(e) = started {
        return format!("orphan error {e}");
    }
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if let Ok(pid) = std::fs::read_to_string(file) {
            return format!("orphan: {}", pid.trim());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    "orphan error no pid".to_owned()
}
