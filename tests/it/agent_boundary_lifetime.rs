//! The agent boundary, lifetimes: an ACP agent's
//! exit is noticed by waiting on it, not on the end of its stdout (a
//! descendant may hold that open); and every process the daemon starts dies
//! with its session and with the daemon: a `setsid` descendant of a
//! terminal command or of the agent (the daemon is their subreaper and
//! kills what escapes a process group), the agent itself at `SIGTERM` and
//! at `kill -9` (`PR_SET_PDEATHSIG`).

// Unix only: setsid and POSIX sh descendants, signals (SIGTERM, kill -9) and /proc/<pid>/stat.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use common::acp::AcpEnv;
use common::acp_agent::{open_acp, pid_of, turn_agent_failed, wait_update};
use common::sessions::process_gone;
use common::wait::eventually;

/// A daemon hosting the test agent (terminals served, a 60 s turn bound), a
/// client and the workspace of its session `s-1`.
fn open() -> (AcpEnv, common::acp::Rpc, String) {
    open_acp("terminal = true\ntimeout_secs = 60")
}

/// The agent's pid and that of the `setsid` descendant it started.
fn agent_and_orphan(rpc: &mut common::acp::Rpc, ws: &str) -> (i32, i32) {
    let agent: i32 = pid_of(rpc, "s-1")
        .strip_prefix("pid: ")
        .and_then(|p| p.parse().ok())
        .expect("the agent's pid");
    (agent, orphan(rpc, ws))
}

/// The pid the test agent's `orphan` directive said.
fn orphan(rpc: &mut common::acp::Rpc, ws: &str) -> i32 {
    let file = Path::new(ws).join("orphan.pid");
    let said = rpc
        .prompt_ok("s-1", &format!("orphan {}", file.display()))
        .text();
    let pid = said.strip_prefix("orphan: ").and_then(|p| p.parse().ok());
    let pid = pid.unwrap_or_else(|| panic!("no orphan: {said}"));
    assert!(!process_gone(pid), "the orphan is not running");
    pid
}

#[track_caller]
fn gone_within(what: &str, pid: i32, secs: u64) {
    eventually(what, Duration::from_secs(secs), || {
        process_gone(pid).then_some(())
    });
}

#[test]
fn an_agent_that_exits_while_a_descendant_holds_its_stdout_fails_the_turn_at_once() {
    let (_e, mut rpc, _ws) = open();
    let started = Instant::now();
    let t = rpc.prompt("s-1", "say before\nstderr leaving now\nexitkeep 3");
    turn_agent_failed(&t, "the ACP agent exited with status 3: leaving now");
    // Not the 60 s turn bound: the exit is seen when it happens.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The next turn starts a new agent.
    assert_eq!(rpc.prompt_ok("s-1", "say again").text(), "again");
}

#[test]
fn a_setsid_descendant_of_a_terminal_command_dies() {
    let (_e, mut rpc, ws) = open();
    // The command ends once its descendant has written its pid.
    let script = "setsid sh -c 'echo $$ > orphan.pid; exec sleep 300' >/dev/null 2>&1 & \
                  while [ ! -s orphan.pid ]; do sleep 0.05; done";
    let create = json!({"command": "sh", "args": ["-c", script]});
    let said = rpc.prompt_ok("s-1", &format!("term {create}")).text();
    assert!(said.starts_with(r#"exit {"exitCode":0"#), "{said}");
    let file = Path::new(&ws).join("orphan.pid");
    let pid: i32 = eventually("the orphan's pid", Duration::from_secs(10), || {
        std::fs::read_to_string(&file).ok()?.trim().parse().ok()
    });
    // Its parent is gone: reparented to the daemon, which kills it.
    gone_within("the terminal's setsid descendant", pid, 10);
}

#[test]
fn a_setsid_descendant_of_the_agent_dies_with_its_session() {
    let (_e, mut rpc, ws) = open();
    let (agent, pid) = agent_and_orphan(&mut rpc, &ws);
    rpc.ok("session/close", json!({"session_id": "s-1"}));
    // The agent stops 5 s after its session (ACP_IDLE_GRACE), then what
    // escaped its group.
    gone_within("the agent", agent, 20);
    gone_within("the agent's setsid descendant", pid, 10);
}

#[test]
fn sigterm_of_the_daemon_kills_its_agents_and_their_escaped_descendants() {
    let (mut e, mut rpc, ws) = open();
    let (agent, pid) = agent_and_orphan(&mut rpc, &ws);
    drop(rpc);
    e.stop();
    gone_within("the agent", agent, 5);
    gone_within("the agent's setsid descendant", pid, 5);
}

#[test]
fn kill_9_of_the_daemon_kills_its_agent() {
    let (mut e, mut rpc, ws) = open();
    let (agent, pid) = agent_and_orphan(&mut rpc, &ws);
    // A turn under way: the agent sleeps, deaf (not reading the stdin whose
    // end would tell it the daemon is gone).
    rpc.start_prompt("s-1", "say sleeping\nsleep 600000");
    wait_update(&mut rpc, |u| u.to_string().contains("sleeping"));
    e.kill9();
    gone_within("the agent (PR_SET_PDEATHSIG)", agent, 5);
    // Its setsid descendant was reparented to init with the daemon gone:
    // nothing is left to kill it (docs/decisions.md says so). Not ours to
    // leave running.
    if !process_gone(pid) {
        println!("the agent's setsid descendant {pid} outlived kill -9 of the daemon (documented)");
        // SAFETY: kill(2) on the pid the test agent started for this test.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}
