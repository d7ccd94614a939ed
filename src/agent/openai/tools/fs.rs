//! The file tools: `read_file`, `write_file` (atomic: a temporary file in
//! the same directory, synced, then renamed over the target), `list_dir`
//! and `search_text`. Blocking; the caller runs them off the runtime.

use std::io::{Read, Write};
use std::path::Path;

use serde_json::Value;

use super::confine::{resolve, shown};
use super::{str_arg, str_arg_or};
use crate::limits::TOOL_OUTPUT_MAX;

/// Bytes of a file `read_file` reads: one past the output bound, so a cut
/// is marked without reading a huge file whole.
const READ_BYTES: u64 = TOOL_OUTPUT_MAX as u64 + 1;
/// `search_text` skips files larger than this.
const SEARCH_FILE_MAX: u64 = 1024 * 1024;
/// `search_text` visits at most this many entries.
const SEARCH_ENTRIES_MAX: usize = 20_000;

pub fn read_file(cwd: &Path, args: &Value) -> Result<String, String> {
    let path = resolve(cwd, str_arg(args, "path")?)?;
    let file = std::fs::File::open(&path).map_err(|e| io(cwd, &path, &e))?;
    let mut bytes = Vec::new();
    file.take(READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| io(cwd, &path, &e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn write_file(cwd: &Path, args: &Value) -> Result<String, String> {
    let path = resolve(cwd, str_arg(args, "path")?)?;
    let content = str_arg(args, "content")?;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err("not a file path".into());
    };
    std::fs::create_dir_all(dir).map_err(|e| io(cwd, dir, &e))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".zc-tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(cwd, &path, &e));
    }
    Ok(format!(
        "wrote {} bytes to {}",
        content.len(),
        shown(cwd, &path)
    ))
}

pub fn list_dir(cwd: &Path, args: &Value) -> Result<String, String> {
    let path = resolve(cwd, str_arg_or(args, "path", ".")?)?;
    let mut names: Vec<String> = std::fs::read_dir(&path)
        .map_err(|e| io(cwd, &path, &e))?
        .filter_map(Result::ok)
        .map(|entry| {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
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
    let start = resolve(cwd, str_arg_or(args, "path", ".")?)?;
    let mut out = String::new();
    let mut stack = vec![start];
    let mut visited = 0;
    // Depth first, names in byte order, symlinks not followed.
    while let Some(path) = stack.pop() {
        visited += 1;
        if visited > SEARCH_ENTRIES_MAX || out.len() > TOOL_OUTPUT_MAX {
            break;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let Ok(entries) = std::fs::read_dir(&path) else {
                continue;
            };
            let mut children: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
            children.sort();
            stack.extend(children.into_iter().rev());
        } else if meta.is_file() && meta.len() <= SEARCH_FILE_MAX {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            for (n, line) in text.lines().enumerate() {
                if line.contains(pattern) {
                    out.push_str(&format!("{}:{}: {}\n", shown(cwd, &path), n + 1, line));
                    if out.len() > TOOL_OUTPUT_MAX {
                        break;
                    }
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("no match");
    }
    Ok(out)
}

fn io(cwd: &Path, path: &Path, e: &std::io::Error) -> String {
    format!("{}: {e}", shown(cwd, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn write_read_list_search_round_trip() {
        let d = std::env::temp_dir().join(format!("zc-fs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
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
}
