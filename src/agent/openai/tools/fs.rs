//! The file tools: `read_file`, `write_file` (atomic, see
//! [`crate::confine`]), `list_dir` and `search_text`, each confined by
//! [`super::confine`]. Blocking; the caller runs them in the bounded
//! agent-files pool.

use std::path::Path;

use serde_json::Value;

use super::confine::{open, refused, shown};
use super::{str_arg, str_arg_or};
use crate::confine::{Kind, Rel};
use crate::limits::TOOL_OUTPUT_MAX;
use crate::memory::Charge;

/// Bytes of a file `read_file` reads: one past the output bound, so a cut
/// is marked without reading a huge file whole.
const READ_BYTES: u64 = TOOL_OUTPUT_MAX as u64 + 1;
/// `search_text` skips files larger than this.
const SEARCH_FILE_MAX: u64 = 1024 * 1024;
/// `search_text` visits at most this many entries.
const SEARCH_ENTRIES_MAX: usize = 20_000;

pub fn read_file(cwd: &Path, args: &Value) -> Result<String, String> {
    let (root, rel) = open(cwd, str_arg(args, "path")?)?;
    let mut charge = Charge::empty();
    let bytes = root
        .read_prefix(&rel, READ_BYTES, &mut |n| charge.try_grow(n).is_ok())
        .map_err(|e| refused(&rel, e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn write_file(cwd: &Path, args: &Value) -> Result<String, String> {
    let (root, rel) = open(cwd, str_arg(args, "path")?)?;
    let content = str_arg(args, "content")?;
    if rel.split().is_none() {
        return Err("not a file path".into());
    }
    root.write(&rel, content.as_bytes())
        .map_err(|e| refused(&rel, e))?;
    Ok(format!("wrote {} bytes to {}", content.len(), shown(&rel)))
}

pub fn list_dir(cwd: &Path, args: &Value) -> Result<String, String> {
    let (root, rel) = open(cwd, str_arg_or(args, "path", ".")?)?;
    let mut names: Vec<String> = root
        .list(&rel, true)
        .map_err(|e| refused(&rel, e))?
        .into_iter()
        .map(|entry| {
            let mut name = entry.name.to_string_lossy().into_owned();
            if entry.kind == Kind::Dir {
                name.push('/');
            }
            name
        })
        .collect();
    names.sort();
    let mut out = String::new();
    for name in names {
        out.push_str(&name);
        out.push('\n');
        if out.len() > TOOL_OUTPUT_MAX {
            break;
        }
    }
    Ok(out)
}

pub fn search_text(cwd: &Path, args: &Value) -> Result<String, String> {
    let pattern = str_arg(args, "pattern")?;
    if pattern.is_empty() {
        return Err("the pattern is empty".into());
    }
    let (root, start) = open(cwd, str_arg_or(args, "path", ".")?)?;
    let mut out = String::new();
    // The start is followed if it is a symlink that stays inside; below it
    // no symlink is (each entry is opened with O_NOFOLLOW).
    let mut stack: Vec<(Rel, bool)> = vec![(start, true)];
    let mut visited = 0;
    // Depth first, names in byte order; FIFOs, devices and links skipped.
    while let Some((rel, follow)) = stack.pop() {
        visited += 1;
        if visited > SEARCH_ENTRIES_MAX || out.len() > TOOL_OUTPUT_MAX {
            break;
        }
        if let Ok(entries) = root.list(&rel, follow) {
            let mut children: Vec<_> = entries
                .into_iter()
                .filter(|e| e.kind != Kind::Other)
                .map(|e| rel.join(&e.name))
                .collect();
            children.sort();
            stack.extend(children.into_iter().rev().map(|c| (c, false)));
            continue;
        }
        let mut charge = Charge::empty();
        let admit = &mut |n| charge.try_grow(n).is_ok();
        let Ok(bytes) = root.read_whole(&rel, SEARCH_FILE_MAX, follow, admit) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if line.contains(pattern) {
                out.push_str(&format!("{}:{}: {}\n", shown(&rel), n + 1, line));
                if out.len() > TOOL_OUTPUT_MAX {
                    break;
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("no match");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confine::testing::scratch;
    use serde_json::json;

    #[test]
    fn write_read_list_search_round_trip() {
        let d = scratch("fs", &[]);
        let w = write_file(&d, &json!({"path": "sub/a.txt", "content": "one\ntwo\n"})).unwrap();
        assert_eq!(w, "wrote 8 bytes to sub/a.txt");
        assert_eq!(
            read_file(&d, &json!({"path": "sub/a.txt"})).unwrap(),
            "one\ntwo\n"
        );
        assert_eq!(list_dir(&d, &json!({})).unwrap(), "sub/\n");
        assert_eq!(list_dir(&d, &json!({"path": "sub"})).unwrap(), "a.txt\n");
        assert_eq!(
            search_text(&d, &json!({"pattern": "tw"})).unwrap(),
            "sub/a.txt:2: two\n"
        );
        assert!(read_file(&d, &json!({"path": "../x"})).is_err());
        assert!(read_file(&d, &json!({})).unwrap_err().contains("\"path\""));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn escapes_through_symlinks_are_refused_and_nothing_is_written_outside() {
        let d = scratch("fs-esc", &[("ws/", ""), ("out/secret", "s")]);
        let ws = d.join("ws");
        std::os::unix::fs::symlink(d.join("out"), ws.join("out")).unwrap();
        let outside = super::super::confine::OUTSIDE;
        for args in [
            json!({"path": "out/secret"}),
            json!({"path": "out/new", "content": "x"}),
        ] {
            let got = if args.get("content").is_some() {
                write_file(&ws, &args)
            } else {
                read_file(&ws, &args)
            };
            assert_eq!(got.unwrap_err(), outside, "{args}");
        }
        assert_eq!(list_dir(&ws, &json!({"path": "out"})).unwrap_err(), outside);
        assert_eq!(
            search_text(&ws, &json!({"pattern": "s"})).unwrap(),
            "no match"
        );
        assert_eq!(std::fs::read(d.join("out/secret")).unwrap(), b"s");
        assert!(!d.join("out/new").exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
