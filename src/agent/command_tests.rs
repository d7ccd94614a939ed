//! Tests of the command agent with real processes (`sh -c` scripts, `cat`).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::run_with_grace;
use crate::agent::testing::RecordingSink;
use crate::agent::{
    run_turn, AgentSettings, Backend, ContextMessage, InputMode, Role, TurnInput, TurnOutcome,
    SINK_CLOSED_MESSAGE,
};

struct Cmd {
    settings: AgentSettings,
    prompt: String,
    context: Vec<ContextMessage>,
    cwd: PathBuf,
    cancel: CancellationToken,
    grace: Duration,
}

impl Cmd {
    fn new(argv: &[&str]) -> Self {
        Cmd {
            settings: AgentSettings {
                command: argv.iter().map(|s| s.to_string()).collect(),
                ..AgentSettings::default()
            },
            prompt: String::new(),
            context: Vec::new(),
            cwd: std::env::temp_dir(),
            cancel: CancellationToken::new(),
            grace: super::KILL_GRACE,
        }
    }

    fn sh(script: &str) -> Self {
        Cmd::new(&["sh", "-c", script])
    }

    fn prompt(mut self, prompt: &str) -> Self {
        self.prompt = prompt.to_owned();
        self
    }

    fn input<'a>(&'a self, allowed: &'a HashSet<String>) -> TurnInput<'a> {
        TurnInput {
            session_id: "s-1",
            turn_id: "t-7",
            agent_alias: "bot",
            cwd: &self.cwd,
            prompt: &self.prompt,
            system_prompt: "be brief",
            context: &self.context,
            settings: &self.settings,
            always_allowed: allowed,
            acp_hosts: None,
            deadline: std::time::Instant::now()
                + std::time::Duration::from_secs(self.settings.timeout_secs),
        }
    }

    async fn run(&self, sink: &mut RecordingSink) -> super::CommandRun {
        let allowed = HashSet::new();
        run_with_grace(&self.input(&allowed), sink, &self.cancel, self.grace).await
    }

    async fn events(&self) -> (TurnOutcome, Vec<String>) {
        let mut sink = RecordingSink::default();
        let run = self.run(&mut sink).await;
        (run.outcome, sink.lines())
    }

    /// Runs the command, which must fail: the `Failed` message.
    async fn failure(&self) -> String {
        match self.events().await.0 {
            TurnOutcome::Failed(message) => message,
            outcome => panic!("not a failure: {outcome:?}"),
        }
    }
}

/// Whether `pid` is gone (or a zombie awaiting a reaper that is not us).
/// Whether `pid` is gone (or a zombie), waiting up to 2 s: a killed process
/// dies asynchronously, and later still on a loaded machine.
fn process_gone(pid: i32) -> bool {
    for _ in 0..200 {
        if process_gone_now(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn process_gone_now(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    if !alive {
        return true;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')')
        .next()
        .is_some_and(|rest| rest.trim_start().starts_with('Z'))
}

#[tokio::test]
async fn stdout_lines_become_chunks() {
    let (outcome, lines) = Cmd::sh("printf 'a\\nb\\n\\nc'").events().await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(lines, ["msg:a\n", "msg:b\n", "msg:\n", "msg:c"]);
}

#[tokio::test]
async fn run_turn_dispatches_to_the_command_backend() {
    let cmd = Cmd::new(&["cat"]).prompt("hello\nworld");
    let allowed = HashSet::new();
    let mut sink = RecordingSink::default();
    let outcome = run_turn(
        Backend::Command,
        cmd.input(&allowed),
        &mut sink,
        &cmd.cancel,
    )
    .await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(sink.lines(), ["msg:hello\n", "msg:world"]);
}

#[tokio::test]
async fn context_json_stdin() {
    let mut cmd = Cmd::new(&["cat"]).prompt("again");
    cmd.settings.input = InputMode::ContextJson;
    cmd.context = vec![
        ContextMessage::text(Role::User, "hi"),
        ContextMessage::text(Role::Assistant, "hello"),
    ];
    let (outcome, lines) = cmd.events().await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(
        lines,
        [
            r#"msg:{"system_prompt":"be brief","messages":[{"role":"user","kind":"message","content":"hi"},{"role":"assistant","kind":"message","content":"hello"},{"role":"user","kind":"message","content":"again"}]}"#
        ]
    );
}

#[tokio::test]
async fn large_stdin_and_stdout_do_not_deadlock() {
    let prompt = "0123456789abcdef\n".repeat(64 * 1024); // ~1 MiB through cat
    let cmd = Cmd::new(&["cat"]).prompt(&prompt);
    let mut sink = RecordingSink::default();
    assert_eq!(cmd.run(&mut sink).await.outcome, TurnOutcome::Completed);
    assert_eq!(sink.message_chunks, 64 * 1024);
    assert_eq!(sink.content(), prompt);
}

#[tokio::test]
async fn unread_stdin_is_not_an_error() {
    let cmd = Cmd::new(&["true"]).prompt(&"x".repeat(1 << 20));
    assert_eq!(cmd.events().await, (TurnOutcome::Completed, vec![]));
}

#[tokio::test]
async fn long_lines_are_cut_and_bad_utf8_replaced() {
    let (outcome, lines) =
        Cmd::sh("head -c 100000 /dev/zero | tr '\\0' a; echo; printf '\\377ok\\n'")
            .events()
            .await;
    assert_eq!(outcome, TurnOutcome::Completed);
    let lens: Vec<usize> = lines.iter().map(|l| l.len() - "msg:".len()).collect();
    assert_eq!(lens, [65_536, 100_000 - 65_536 + 1, 6]);
    assert_eq!(lines[2], "msg:\u{FFFD}ok\n");
}

#[tokio::test]
async fn nonzero_exit_reports_the_last_stderr_line() {
    let (outcome, lines) =
        Cmd::sh("echo out; echo first >&2; printf 'last line\\n\\n' >&2; exit 3")
            .events()
            .await;
    assert_eq!(
        outcome,
        TurnOutcome::Failed("agent command exited with status 3: last line".into())
    );
    assert_eq!(lines, ["msg:out\n"]);
    assert_eq!(
        Cmd::sh("exit 2").failure().await,
        "agent command exited with status 2"
    );
}

#[tokio::test]
async fn stderr_tail_is_returned() {
    let mut sink = RecordingSink::default();
    let run = Cmd::sh("head -c 70000 /dev/zero | tr '\\0' e >&2; echo end >&2")
        .run(&mut sink)
        .await;
    assert_eq!(run.outcome, TurnOutcome::Completed);
    assert_eq!(run.stderr_tail.len(), 64 * 1024);
    assert!(run.stderr_tail.ends_with("eeeend\n"));
}

#[tokio::test]
async fn killed_by_a_signal() {
    assert_eq!(
        Cmd::sh("echo bye >&2; kill -9 $$").failure().await,
        "agent command was killed by signal 9: bye"
    );
}

#[tokio::test]
async fn start_failures() {
    let message = Cmd::new(&["/nonexistent/zeroclaw-agent"]).failure().await;
    assert!(
        message.starts_with("failed to start agent command `/nonexistent/zeroclaw-agent`: "),
        "{message}"
    );

    assert_eq!(Cmd::new(&[]).failure().await, "agent command is empty");

    let mut cmd = Cmd::new(&["true"]);
    cmd.cwd = PathBuf::from("/nonexistent/dir");
    assert!(cmd.failure().await.starts_with("failed to start"));
}

#[tokio::test]
async fn environment_and_cwd() {
    let mut cmd = Cmd::sh(
        "echo \"$ZEROCLAW_SESSION_ID $ZEROCLAW_TURN_ID $ZEROCLAW_AGENT_ALIAS $EXTRA\"; \
         [ -n \"$PATH\" ] && echo has-path; pwd",
    );
    cmd.settings.env = BTreeMap::from([("EXTRA".to_owned(), "x y".to_owned())]);
    cmd.cwd = Path::new("/").to_owned();
    let (outcome, lines) = cmd.events().await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(
        lines,
        ["msg:s-1 t-7 bot x y\n", "msg:has-path\n", "msg:/\n"]
    );
}

#[tokio::test]
async fn timeout_fails_and_kills() {
    let mut cmd = Cmd::sh("echo $$; exec sleep 30");
    cmd.settings.timeout_secs = 1;
    let (outcome, lines) = cmd.events().await;
    assert_eq!(
        outcome,
        TurnOutcome::Failed("agent command timed out after 1 s".into())
    );
    let pid: i32 = lines[0].trim_start_matches("msg:").trim().parse().unwrap();
    assert!(process_gone(pid));
}

#[tokio::test]
async fn cancel_terminates_the_process_group() {
    let cmd = Cmd::sh("sleep 30 & echo \"$$ $!\"; wait");
    let mut sink = RecordingSink {
        cancel_on_first_chunk: Some(cmd.cancel.clone()),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    assert_eq!(cmd.run(&mut sink).await.outcome, TurnOutcome::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(4));
    let line = sink.content();
    let pids: Vec<i32> = line
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    assert!(process_gone(pids[0]), "shell {} still exists", pids[0]);
    assert!(process_gone(pids[1]), "grandchild {} still exists", pids[1]);
}

#[tokio::test]
async fn cancel_kills_a_process_ignoring_sigterm_after_the_grace() {
    let mut cmd = Cmd::sh("trap '' TERM; echo $$; while :; do sleep 1; done");
    cmd.grace = Duration::from_millis(200);
    let mut sink = RecordingSink {
        cancel_on_first_chunk: Some(cmd.cancel.clone()),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    assert_eq!(cmd.run(&mut sink).await.outcome, TurnOutcome::Cancelled);
    assert!(started.elapsed() >= Duration::from_millis(200));
    let pid: i32 = sink.content().trim().parse().unwrap();
    assert!(process_gone(pid));
}

#[tokio::test]
async fn cancel_keeps_an_unterminated_line() {
    let cmd = Cmd::sh("printf partial; sleep 30");
    let cancel = cmd.cancel.clone();
    let mut sink = RecordingSink::default();
    let canceller = async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    };
    let (run, ()) = tokio::join!(cmd.run(&mut sink), canceller);
    assert_eq!(run.outcome, TurnOutcome::Cancelled);
    assert_eq!(sink.lines(), ["msg:partial"]);
}

#[tokio::test]
async fn closed_sink_kills_the_process() {
    let cmd = Cmd::sh("echo $$; echo two; sleep 30");
    let mut sink = RecordingSink {
        close_after: Some(1),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    assert_eq!(
        cmd.run(&mut sink).await.outcome,
        TurnOutcome::Failed(SINK_CLOSED_MESSAGE.into())
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    let pid: i32 = sink.content().trim().parse().unwrap();
    assert!(process_gone(pid));
}
