//! Pipelining clients as real programs behave: a script of many
//! requests written with arbitrary split points, read by a separate reader
//! with pauses, with or without a half-close, and one checker for what came
//! back.
//!
//! The checker's rules: every request id is answered exactly once; every
//! invalid frame gets exactly one `id: null` error; a prompt's
//! `turn_complete` comes before the prompt's answer; nothing is left over.

use super::endpoint::{self, Stream as UnixStream};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Rng;

/// One line of a script.
#[derive(Debug, Clone)]
pub enum Line {
    /// A request with this id, answered with a result or an error.
    Request { id: String, frame: String },
    /// A `session/prompt` on echo whose text is `text`: its `turn_complete`
    /// (content == text) must come before its answer.
    Prompt {
        id: String,
        text: String,
        frame: String,
    },
    /// A frame that is not a valid request: answered once with `id: null`.
    Invalid { frame: String },
}

impl Line {
    fn frame(&self) -> &str {
        match self {
            Line::Request { frame, .. } | Line::Prompt { frame, .. } | Line::Invalid { frame } => {
                frame
            }
        }
    }
}

/// A whole client script.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub lines: Vec<Line>,
}

/// The session the scripts' prompts use.
pub const SESSION: &str = "pipe";

impl Script {
    /// `initialize`, then (if `prompts`) a `session/new` on echo for [`SESSION`].
    pub fn new(prompts: bool) -> Self {
        let mut s = Script::default();
        s.request(
            "init",
            r#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":1},"id":"init"}"#
                .into(),
        );
        if prompts {
            s.request(
                "open",
                format!(r#"{{"jsonrpc":"2.0","method":"session/new","params":{{"agent_alias":"echo","session_id":"{SESSION}","chat_mode":"acp"}},"id":"open"}}"#),
            );
        }
        s
    }

    fn request(&mut self, id: &str, frame: String) {
        self.lines.push(Line::Request {
            id: id.into(),
            frame,
        });
    }

    /// `n` `status` requests with ids `s<i>`.
    pub fn statuses(mut self, n: usize) -> Self {
        for i in 0..n {
            self.request(
                &format!("s{i}"),
                format!(r#"{{"jsonrpc":"2.0","method":"status","params":{{}},"id":"s{i}"}}"#),
            );
        }
        self
    }

    /// `n` lines drawn from a mix: mostly `status`, some unknown methods,
    /// invalid frames, `config/get`, and (with `prompts`) echo prompts.
    pub fn mix(mut self, rng: &mut Rng, n: usize, prompts: bool) -> Self {
        for i in 0..n {
            let id = format!("m{i}");
            match rng.range(0, 199) {
                0..=159 => self.request(
                    &id,
                    format!(r#"{{"jsonrpc":"2.0","method":"status","params":{{}},"id":"{id}"}}"#),
                ),
                160..=179 => self.request(
                    &id,
                    format!(r#"{{"jsonrpc":"2.0","method":"zc-test/nope","id":"{id}"}}"#),
                ),
                180..=189 => self.lines.push(Line::Invalid {
                    frame: match rng.range(0, 2) {
                        0 => r#"{"jsonrpc":"2.0","method":"#.into(),
                        1 => "[]".into(),
                        _ => r#"{"jsonrpc":"1.0","method":"status","id":null}"#.into(),
                    },
                }),
                190..=197 => self.request(
                    &id,
                    format!(
                        r#"{{"jsonrpc":"2.0","method":"config/get","params":{{"prop":"daemon.session_idle_secs"}},"id":"{id}"}}"#
                    ),
                ),
                _ if prompts => {
                    let text = format!("prompt {id}");
                    let frame = format!(
                        r#"{{"jsonrpc":"2.0","method":"session/prompt","params":{{"session_id":"{SESSION}","prompt":"{text}"}},"id":"{id}"}}"#
                    );
                    self.lines.push(Line::Prompt { id, text, frame });
                }
                _ => self.request(
                    &id,
                    format!(r#"{{"jsonrpc":"2.0","method":"status","id":"{id}"}}"#),
                ),
            }
        }
        self
    }

    /// The script as bytes, one `\n`-terminated frame a line.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for l in &self.lines {
            out.extend_from_slice(l.frame().as_bytes());
            out.push(b'\n');
        }
        out
    }
}

/// How the client writes and reads.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Each write takes between these many bytes (inclusive).
    pub write_sizes: (usize, usize),
    /// Pause between writes, in microseconds, at most (0: none).
    pub write_pause_us: u64,
    /// Each read takes at most this many bytes.
    pub read_size: usize,
    /// Pause between reads, in microseconds, at most (0: none).
    pub read_pause_us: u64,
    /// Half-close after the last write.
    pub half_close: bool,
    pub seed: u64,
}

impl Schedule {
    /// Everything in one write, a continuous reader, then a half-close.
    pub fn burst(half_close: bool) -> Self {
        Self {
            write_sizes: (usize::MAX, usize::MAX),
            write_pause_us: 0,
            read_size: 64 * 1024,
            read_pause_us: 0,
            half_close,
            seed: 1,
        }
    }
}

/// Runs `script` over a fresh connection to `socket` with `schedule` and
/// returns every line the daemon sent, in order, up to end of stream (with a
/// half-close) or up to the last owed answer (without one).
pub fn run(
    socket: &std::path::Path,
    script: &Script,
    schedule: &Schedule,
    timeout: Duration,
) -> Vec<String> {
    let stream = endpoint::connect(socket).expect("connect");
    let reader = stream.try_clone().expect("clone");
    let bytes = script.bytes();
    // One answer is owed per line, valid or not.
    let owed = script.lines.len();
    let sched = schedule.clone();
    let writer = std::thread::spawn(move || write_all(stream, &bytes, &sched));
    let lines = read_answers(reader, schedule, owed, timeout);
    let stream = writer.join().expect("writer thread");
    drop(stream);
    lines
}

fn write_all(mut stream: UnixStream, bytes: &[u8], s: &Schedule) -> UnixStream {
    let mut rng = Rng::new(s.seed);
    let mut at = 0;
    while at < bytes.len() {
        let n = if s.write_sizes.0 == usize::MAX {
            bytes.len() - at
        } else {
            rng.range(s.write_sizes.0, s.write_sizes.1)
                .min(bytes.len() - at)
        };
        stream.write_all(&bytes[at..at + n]).expect("write");
        at += n;
        if s.write_pause_us > 0 {
            std::thread::sleep(Duration::from_micros(
                rng.range(0, s.write_pause_us as usize) as u64,
            ));
        }
    }
    if s.half_close {
        stream
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown(Write)");
    }
    stream
}

fn read_answers(
    mut stream: UnixStream,
    s: &Schedule,
    owed: usize,
    timeout: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    let mut rng = Rng::new(s.seed ^ 0x9e37_79b9);
    let mut buf = vec![0u8; s.read_size.max(1)];
    let mut pending: Vec<u8> = Vec::new();
    let mut lines = Vec::new();
    let mut answers = 0usize;
    loop {
        if !s.half_close && answers >= owed {
            return lines;
        }
        let now = Instant::now();
        if now >= deadline {
            panic!(
                "timed out after {timeout:?}: {answers} of {owed} answers, {} lines in all",
                lines.len()
            );
        }
        stream
            .set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))
            .expect("timeout");
        match stream.read(&mut buf) {
            Ok(0) => {
                assert!(pending.is_empty(), "an unterminated frame at end of stream");
                return lines;
            }
            Ok(n) => pending.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => panic!("read: {e} after {answers} of {owed} answers"),
        }
        let mut start = 0;
        while let Some(pos) = pending[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8(pending[start..start + pos].to_vec()).expect("UTF-8");
            if !line.contains(r#""method":"session/update""#) {
                answers += 1;
            }
            lines.push(line);
            start += pos + 1;
        }
        pending.drain(..start);
        if s.read_pause_us > 0 {
            std::thread::sleep(Duration::from_micros(
                rng.range(0, s.read_pause_us as usize) as u64,
            ));
        }
    }
}

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Tally {
    pub answered: usize,
    pub invalid_answered: usize,
    pub prompts_completed: usize,
}

/// Checks `lines` (everything the daemon sent) against `script`; panics
/// with the first violation.
pub fn check(script: &Script, lines: &[String]) -> Tally {
    let mut owed: HashMap<&str, Option<&str>> = HashMap::new();
    let mut invalid = 0usize;
    for l in &script.lines {
        match l {
            Line::Request { id, .. } => {
                assert!(
                    owed.insert(id, None).is_none(),
                    "duplicate id {id} in the script"
                );
            }
            Line::Prompt { id, text, .. } => {
                assert!(owed.insert(id, Some(text)).is_none(), "duplicate id {id}");
            }
            Line::Invalid { .. } => invalid += 1,
        }
    }
    let mut completed: HashMap<String, usize> = HashMap::new();
    let mut tally = Tally::default();
    for (n, line) in lines.iter().enumerate() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {n} is not JSON ({e}): {line}"));
        if v["method"] == "session/update" {
            if v["params"]["type"] == "turn_complete" {
                let content = v["params"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                *completed.entry(content).or_default() += 1;
            }
            continue;
        }
        match &v["id"] {
            Value::Null => {
                assert!(
                    v.get("error").is_some(),
                    "line {n}: a null-id answer that is no error: {line}"
                );
                tally.invalid_answered += 1;
            }
            Value::String(id) => {
                let Some(text) = owed.remove(id.as_str()) else {
                    panic!("line {n}: an answer to {id}, which was not owed (twice, or never asked): {line}");
                };
                if let (Some(text), Some(result)) = (text, v.get("result")) {
                    assert_eq!(result["content"], text, "line {n}: {line}");
                    let seen = completed.get_mut(text).map(|c| {
                        *c -= 1;
                        *c + 1
                    });
                    assert!(
                        seen.unwrap_or(0) > 0,
                        "line {n}: the answer to prompt {id} came before its turn_complete"
                    );
                    tally.prompts_completed += 1;
                }
                tally.answered += 1;
            }
            other => panic!("line {n}: unexpected id {other}: {line}"),
        }
    }
    if !owed.is_empty() {
        let mut missing: Vec<&&str> = owed.keys().collect();
        missing.sort();
        panic!(
            "{} of {} requests were never answered, e.g. {:?}",
            missing.len(),
            tally.answered + missing.len(),
            &missing[..missing.len().min(5)]
        );
    }
    assert_eq!(tally.invalid_answered, invalid, "answers to invalid frames");
    tally
}
