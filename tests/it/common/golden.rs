//! The golden transcripts of `tests/golden/` as both replays read them
//! (the format is documented in `tests/it/golden.rs`; `tests/it/gateway_golden.rs`
//! replays the same files over two transports): the files and their
//! directives, the byte escapes of `-->raw`, and the patterns of expected
//! values.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Daemon, VERSION};

/// Calls `$m! { test_name => "file"; … }` with every transcript: the one
/// list both replays (`tests/it/golden.rs`, `tests/it/gateway_golden.rs`) expand
/// into their tests.
macro_rules! transcripts {
    ($m:ident) => {
        $m! {
            handshake => "handshake.transcript";
            version_mismatch => "version_mismatch.transcript";
            reinitialize => "reinitialize.transcript";
            invalid_frames => "invalid_frames.transcript";
            batches => "batches.transcript";
            notifications => "notifications.transcript";
            ids_echoed => "ids_echoed.transcript";
            params => "params.transcript";
            params_array_status => "params_array_status.transcript";
            dialects => "dialects.transcript";
            bidirectional => "bidirectional.transcript";
            framing => "framing.transcript";
            eof_final_frame => "eof.transcript";
            audit => "audit.transcript";
        }
    };
}
#[allow(unused_imports)] // used by the two replays only
pub(crate) use transcripts;

/// The folder of the transcripts.
fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The text of transcript `name`.
pub fn read(name: &str) -> String {
    let path = dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The directives of a transcript, as (line number, line, op, argument);
/// blank lines and `#` comments are skipped.
pub fn directives(text: &str) -> impl Iterator<Item = (usize, &str, &str, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|(i, line)| {
            let (op, arg) = line.split_once(' ').unwrap_or((line, ""));
            (i + 1, line, op, arg)
        })
}

/// Fails unless `listed` names every transcript of the folder, and no other.
pub fn assert_every_transcript_listed(listed: &[&str]) {
    let mut found: Vec<String> = std::fs::read_dir(dir())
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir().display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".transcript"))
        .collect();
    found.sort();
    let mut listed: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "tests/golden and the list of replayed files differ"
    );
}

/// `\xHH`, `\r`, `\n`, `\t`, `\\` → bytes.
pub fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b't') => out.push(b'\t'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'x') => {
                let hex = s
                    .get(i + 2..i + 4)
                    .ok_or_else(|| format!("truncated \\x escape at byte {i}"))?;
                out.push(
                    u8::from_str_radix(hex, 16)
                        .map_err(|_| format!("bad \\x escape {hex:?} at byte {i}"))?,
                );
                i += 2;
            }
            other => {
                return Err(format!(
                    "unknown escape \\{} at byte {i}",
                    other.map(|&c| c as char).unwrap_or(' ')
                ))
            }
        }
        i += 2;
    }
    Ok(out)
}

/// Expected-value patterns resolved against one daemon.
pub struct Vars {
    pub pid: u64,
    /// `$peer`: this process's label on the socket (a WebSocket replay
    /// puts its session's `wss:` label here).
    pub peer: String,
    config_dir: String,
    config_file: String,
    data_dir: String,
    socket: String,
}

impl Vars {
    pub fn of(d: &Daemon) -> Self {
        Self {
            pid: d.pid as u64,
            peer: super::own_peer_label(),
            config_dir: d.config_dir.display().to_string(),
            config_file: d.config_dir.join("config.toml").display().to_string(),
            data_dir: d.data_dir().display().to_string(),
            socket: d.socket.display().to_string(),
        }
    }

    /// Whether `actual` matches `expected`; `subset` allows extra members in objects.
    pub fn matches(&self, expected: &Value, actual: &Value, subset: bool) -> bool {
        match expected {
            Value::String(p) if p.starts_with('$') => match p.as_str() {
                "$any" => true,
                "$uint" => actual.as_u64().is_some(),
                "$pid" => actual.as_u64() == Some(self.pid),
                "$version" => actual == VERSION,
                "$peer" => actual.as_str() == Some(&self.peer),
                "$config_dir" => actual.as_str() == Some(&self.config_dir),
                "$config_file" => actual.as_str() == Some(&self.config_file),
                "$data_dir" => actual.as_str() == Some(&self.data_dir),
                "$socket" => actual.as_str() == Some(&self.socket),
                _ => match p.strip_prefix("$starts:") {
                    Some(prefix) => actual.as_str().is_some_and(|a| a.starts_with(prefix)),
                    None => panic!("unknown pattern {p}"),
                },
            },
            Value::Object(e) => {
                let Some(a) = actual.as_object() else {
                    return false;
                };
                (subset || e.len() == a.len())
                    && e.iter()
                        .all(|(k, v)| a.get(k).is_some_and(|av| self.matches(v, av, subset)))
            }
            Value::Array(e) => {
                let Some(a) = actual.as_array() else {
                    return false;
                };
                e.len() == a.len() && e.iter().zip(a).all(|(ev, av)| self.matches(ev, av, subset))
            }
            _ => expected == actual,
        }
    }
}
