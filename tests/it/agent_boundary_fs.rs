//! The agent boundary on the file system over the real
//! socket: a FIFO read by ACP `fs/read_text_file`, the openai `read_file`
//! tool or `session/git_branch` answers at once (no unbounded read, no
//! blocking thread held), and a read is charged to the memory budget; a
//! symlink planted at the old predictable temporary names, a directory on
//! the way that leads outside, or one swapped for such a symlink during the
//! writes never gets a byte written outside the working directory.

// Unix only: FIFOs (mkfifo), symlinks, renameat2 and O_NONBLOCK.

use crate::common;

use std::ffi::CString;
use std::io::Write as _;
use std::os::unix::fs::{symlink, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use common::acp_agent::{acp_config, new_acp_session};
use common::openai::{self, merged};
use common::openai_server::{sse, OpenAiServer, Reply};
use common::start::write_config;
use common::{Client, Daemon, DaemonBuilder, TestDir};

/// How long an answer about a FIFO may take (it used to be forever).
const PROMPT: Duration = Duration::from_secs(5);

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).expect("a path without NUL");
    // SAFETY: a NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {path:?}"
    );
}

/// A daemon hosting the test ACP agent as `acp` (built further by
/// `build`), a client, and the workspace of its session `s-1`.
fn acp(build: impl FnOnce(DaemonBuilder) -> DaemonBuilder) -> (TestDir, Daemon, Client, PathBuf) {
    let dir = TestDir::new();
    write_config(&dir.config_dir(), &acp_config("", ""));
    let d = build(DaemonBuilder::new().config_dir(dir.config_dir())).spawn();
    let mut c = d.client();
    let ws = new_acp_session(&mut c, "s-1", "chat")["workspace_dir"]
        .as_str()
        .expect("a workspace_dir")
        .into();
    (dir, d, c, ws)
}

/// The text of a turn that must end within [`PROMPT`].
#[track_caller]
fn prompt_text(c: &mut Client, prompt: &str) -> String {
    let id = c.start_prompt("s-1", prompt);
    let t = c.finish_turn("s-1", &id, PROMPT);
    t.result();
    t.text()
}

/// A thread doing `step` over and over until dropped (`step` sees the
/// stop flag for its own inner loops).
struct Repeat(Arc<AtomicBool>);

impl Repeat {
    fn start(mut step: impl FnMut(&AtomicBool) + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                step(&flag);
            }
        });
        Repeat(stop)
    }
}

impl Drop for Repeat {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Writes into the FIFO at `path` whenever it has a reader, until dropped.
fn feed(path: PathBuf) -> Repeat {
    let chunk = vec![b'x'; 1 << 20];
    Repeat::start(move |stop| {
        let open = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path);
        let Ok(mut pipe) = open else {
            // No reader yet (ENXIO).
            std::thread::sleep(Duration::from_millis(5));
            return;
        };
        while !stop.load(Ordering::Relaxed) {
            match pipe.write(&chunk) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(_) => return, // the reader is gone (EPIPE)
            }
        }
    })
}

#[test]
fn acp_read_of_a_fed_fifo_is_refused_at_once_with_bounded_memory() {
    let (_dir, d, mut c, ws) = acp(|b| b.address_space_limit(1 << 30));
    let fifo = ws.join("feed");
    mkfifo(&fifo);
    let _feeder = feed(fifo.clone());
    let before = d.peak_rss_kib().expect("VmHWM");
    let started = Instant::now();
    let text = prompt_text(&mut c, &format!("read {}", fifo.display()));
    assert_eq!(text, "fs error -32602");
    assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    let peak = d.peak_rss_kib().expect("VmHWM");
    assert!(
        peak < before + 32 * 1024,
        "peak RSS {peak} KiB, {before} KiB before the read"
    );
    // Still serving, the same session included.
    assert_eq!(prompt_text(&mut c, "say fine"), "fine");
}

#[test]
fn acp_reads_are_charged_to_the_memory_budget() {
    let (_dir, _d, mut c, ws) = acp(|b| b.env("ZEROCLAW_MEMORY_BUDGET_MIB", "1"));
    std::fs::write(ws.join("big"), vec![b'a'; 2 << 20]).expect("writing big");
    std::fs::write(ws.join("small"), "hi").expect("writing small");
    let read =
        |c: &mut Client, name: &str| prompt_text(c, &format!("read {}/{name}", ws.display()));
    assert_eq!(read(&mut c, "big"), "fs error -32603");
    assert_eq!(read(&mut c, "small"), "read: hi");
}

#[test]
fn a_fifo_without_a_writer_answers_at_once_over_acp_and_the_daemon_still_serves() {
    let (_dir, d, mut c, ws) = acp(|b| b);
    let fifo = ws.join("pipe");
    mkfifo(&fifo);
    // A FIFO read, twice (each used to hold a blocking thread forever).
    for _ in 0..2 {
        let text = prompt_text(&mut c, &format!("read {}", fifo.display()));
        assert_eq!(text, "fs error -32602");
    }
    let mut other = d.client();
    let id = other.send("status", json!({}));
    other.wait_within(&id, PROMPT).expect("status answers");
}

/// The model asks for `calls` (`(id, tool, arguments)`) in one answer,
/// then says `ok`; the tools' outputs, in order, within [`PROMPT`].
fn tool_outputs(
    server: &OpenAiServer,
    c: &mut Client,
    calls: &[(&str, &str, &str)],
) -> Vec<String> {
    let mut steps = vec![sse::role()];
    for (i, (id, name, args)) in (0u32..).zip(calls) {
        steps.push(sse::tool_start(i, id, name));
        steps.push(sse::tool_args(i, args));
    }
    steps.extend([sse::finish("tool_calls"), sse::done()]);
    server.push(Reply::Stream(steps));
    server.push(Reply::Stream(sse::answer(&["ok"])));
    let id = c.start_prompt("s-1", "go");
    let t = c.finish_turn("s-1", &id, PROMPT);
    t.result();
    merged(t.updates())
        .into_iter()
        .filter(|u| u["type"] == "tool_result")
        .map(|u| u["rawOutput"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn the_openai_read_file_tool_on_a_fifo_answers_an_error_at_once() {
    let (server, _d, mut c, ws) = openai::session("", "acp");
    mkfifo(&ws.join("pipe"));
    let outputs = tool_outputs(
        &server,
        &mut c,
        &[("c1", "read_file", r#"{"path":"pipe"}"#)],
    );
    assert_eq!(outputs, ["error: pipe: not a regular file"]);
}

/// Makes the workspace a repository whose `.git/HEAD` is a FIFO (as an
/// agent can).
fn fifo_head(ws: &Path) {
    std::fs::create_dir_all(ws.join(".git/refs/heads")).expect("mkdir .git");
    mkfifo(&ws.join(".git/HEAD"));
}

#[test]
fn git_branch_with_a_fifo_head_answers_nulls_at_once() {
    let (_dir, _d, mut c, ws) = acp(|b| b);
    fifo_head(&ws);
    let id = c.send("session/git_branch", json!({"session_id": "s-1"}));
    let got = c.wait_within(&id, PROMPT).expect("git_branch answers");
    assert_eq!(got, json!({"branch": null, "hash": null}));
}

#[test]
fn six_hundred_pipelined_git_branch_calls_starve_nobody() {
    let (_dir, d, _c, ws) = acp(|b| b);
    fifo_head(&ws);
    // 10 connections x 60 (under the 64 requests in flight of one): past
    // the runtime's 512 blocking threads if each held one.
    let mut callers: Vec<(Client, Vec<serde_json::Value>)> = (0..10)
        .map(|_| {
            let mut c = d.client();
            let ids = (0..60)
                .map(|_| c.send("session/git_branch", json!({"session_id": "s-1"})))
                .collect();
            (c, ids)
        })
        .collect();
    // Another connection's blocking work (a config save) is answered.
    let mut other = d.client();
    let started = Instant::now();
    let id = other.send(
        "config/set",
        json!({"prop": "agents.acp.timeout_secs", "value": 120}),
    );
    other
        .wait_within(&id, Duration::from_secs(10))
        .expect("config/set answers");
    let id = other.send("status", json!({}));
    other.wait_within(&id, PROMPT).expect("status answers");
    eprintln!("config/set and status after {:?}", started.elapsed());
    // And every pipelined call is answered: nulls, or a limit refusal.
    for (c, ids) in &mut callers {
        for id in ids.iter() {
            match c.wait_within(id, Duration::from_secs(20)) {
                Ok(v) => assert_eq!(v, json!({"branch": null, "hash": null})),
                Err(e) => assert_eq!(e["code"], -32004, "{e}"),
            }
        }
    }
}

/// An outside file, and symlinks to it at both old predictable temporary
/// names of `name` in `dir` (`.NAME.zeroclaw-<pid>.tmp` of ACP,
/// `.NAME.zc-tmp-<pid>` of the tools; the daemon's pid is the agent's
/// parent pid).
fn plant(outside_dir: &Path, dir: &Path, name: &str, pid: u32) -> PathBuf {
    let outside = outside_dir.join("secret.txt");
    std::fs::write(&outside, "secret").expect("writing the outside file");
    for tmp in [
        format!(".{name}.zeroclaw-{pid}.tmp"),
        format!(".{name}.zc-tmp-{pid}"),
    ] {
        symlink(&outside, dir.join(tmp)).expect("planting a symlink");
    }
    outside
}

#[test]
fn acp_writes_never_follow_a_symlink_planted_at_a_temporary_name() {
    let (dir, d, mut c, ws) = acp(|b| b);
    let outside = plant(dir.path(), &ws, "t.txt", d.pid);
    let text = prompt_text(&mut c, &format!("write {}/t.txt evil", ws.display()));
    assert_eq!(text, "wrote");
    assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
    let written = ws.join("t.txt");
    assert!(!written.is_symlink(), "a regular file is written");
    assert_eq!(std::fs::read(&written).unwrap(), b"evil");
}

#[test]
fn acp_writes_through_a_directory_that_leads_outside_are_refused() {
    let (dir, _d, mut c, ws) = acp(|b| b);
    let outside = dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("kept"), "kept").unwrap();
    symlink(&outside, ws.join("sub")).unwrap();
    for name in ["sub/new", "sub/kept", "sub/deeper/new"] {
        let text = prompt_text(&mut c, &format!("write {}/{name} evil", ws.display()));
        assert_eq!(text, "fs error -32602", "{name}");
    }
    let mut left: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["kept"]);
    assert_eq!(std::fs::read(outside.join("kept")).unwrap(), b"kept");
}

/// Swaps the names `a` and `b` (`renameat2(RENAME_EXCHANGE)`) over and
/// over until dropped: a directory on a written path that is, at any
/// instant, either the real directory or a symlink leading outside.
fn swap(a: &Path, b: &Path) -> Repeat {
    let c = |p: &Path| CString::new(p.as_os_str().as_encoded_bytes()).expect("no NUL");
    let (a, b) = (c(a), c(b));
    Repeat::start(move |_| {
        // SAFETY: two NUL-terminated paths that outlive the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        assert_eq!(r, 0, "renameat2: {}", std::io::Error::last_os_error());
    })
}

#[test]
fn acp_writes_while_a_directory_is_swapped_for_a_symlink_stay_inside() {
    let (dir, _d, mut c, ws) = acp(|b| b);
    let outside = dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    symlink(&outside, ws.join("alt")).unwrap();
    let writes: Vec<_> = (0..400)
        .map(|_| format!("write {}/sub/f evil", ws.display()))
        .collect();
    let swapper = swap(&ws.join("sub"), &ws.join("alt"));
    let text = prompt_text(&mut c, &writes.join("\n"));
    drop(swapper);
    let wrote = text.matches("wrote").count();
    eprintln!("{wrote} of 400 written, the rest refused");
    let left: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(left.is_empty(), "written outside: {left:?}");
    let rest = text.replace("wrote", "").replace("fs error -32602", "");
    assert_eq!(rest, "", "every write answered `wrote` or refused");
}

#[test]
fn the_openai_write_file_tool_never_writes_outside() {
    let (server, d, mut c, ws) = openai::session("approval = \"never\"", "acp");
    let outside_dir = d.dir.path().join("elsewhere");
    std::fs::create_dir_all(&outside_dir).unwrap();
    let outside = plant(&outside_dir, &ws, "t.txt", d.pid);
    symlink(&outside_dir, ws.join("sub")).unwrap();
    let outputs = tool_outputs(
        &server,
        &mut c,
        &[
            ("c1", "write_file", r#"{"path":"t.txt","content":"evil"}"#),
            (
                "c2",
                "write_file",
                r#"{"path":"sub/new.txt","content":"evil"}"#,
            ),
        ],
    );
    assert_eq!(
        outputs,
        [
            "wrote 4 bytes to t.txt",
            "error: path is outside the working directory"
        ]
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
    assert!(!outside_dir.join("new.txt").exists());
    assert_eq!(std::fs::read(ws.join("t.txt")).unwrap(), b"evil");
}
