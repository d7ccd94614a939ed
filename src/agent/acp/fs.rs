//! `fs/read_text_file` and `fs/write_text_file`, confined to the session's
//! working directory (docs/agents.md).
//!
//! A path is refused unless it is absolute, has no `..` component, lies
//! lexically under the working directory, and still does once every symlink
//! on it is resolved (the file itself for reads and for writes over an
//! existing file, the deepest existing ancestor for new files). Writes are
//! atomic: a temporary file in the target's directory, fsynced, renamed
//! over the target. [`confined_dir`] applies the same confinement to the
//! working directory of `terminal/create` (see [`super::terminal`]).

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

/// The largest file served to an agent (its answer is one line of ours).
pub const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;

/// ACP's "invalid params" and "resource not found" codes.
const INVALID_PARAMS: i64 = -32602;
const NOT_FOUND: i64 = -32002;
const INTERNAL: i64 = -32603;

/// A refusal: a JSON-RPC error code and message.
pub type FsError = (i64, String);

/// Serves one `fs/*` request of the agent; `Ok` is the result object.
pub async fn serve(method: &str, params: &Value, cwd: &Path) -> Result<Value, FsError> {
    let path = params
        .get("path")
        .and_then(Value::as_str)
        .ok_or((INVALID_PARAMS, "missing \"path\"".to_owned()))?
        .to_owned();
    let (method, params, cwd) = (method.to_owned(), params.clone(), cwd.to_owned());
    let job = move || match method.as_str() {
        "fs/read_text_file" => {
            let line = params.get("line").and_then(Value::as_u64);
            let limit = params.get("limit").and_then(Value::as_u64);
            read(&cwd, Path::new(&path), line, limit).map(|content| json!({"content": content}))
        }
        _ => {
            let content = params
                .get("content")
                .and_then(Value::as_str)
                .ok_or((INVALID_PARAMS, "missing \"content\"".to_owned()))?;
            write(&cwd, Path::new(&path), content).map(|()| json!({}))
        }
    };
    tokio::task::spawn_blocking(job)
        .await
        .unwrap_or_else(|e| Err((INTERNAL, format!("the file operation failed: {e}"))))
}

/// A directory the agent names (`terminal/create`'s `cwd`), confined as
/// files are: absolute, no `..`, under `cwd` lexically and once resolved
/// through symlinks. Returns the resolved directory.
pub fn confined_dir(cwd: &Path, dir: &Path) -> Result<PathBuf, FsError> {
    lexically_inside(cwd, dir)?;
    let root = canonical_cwd(cwd)?;
    let real = dir
        .canonicalize()
        .map_err(|e| (INVALID_PARAMS, format!("{}: {e}", dir.display())))?;
    resolved_inside(&root, &real, dir)?;
    if !real.is_dir() {
        return Err((
            INVALID_PARAMS,
            format!("{}: not a directory", dir.display()),
        ));
    }
    Ok(real)
}

/// The lexical checks: absolute, no `..`, under `cwd`.
fn lexically_inside(cwd: &Path, path: &Path) -> Result<(), FsError> {
    let refuse = |why: &str| Err((INVALID_PARAMS, format!("{}: {why}", path.display())));
    if !path.is_absolute() {
        return refuse("the path must be absolute");
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return refuse("the path must not contain `..`");
    }
    if !path.starts_with(cwd) {
        return refuse("outside the session's working directory");
    }
    Ok(())
}

fn canonical_cwd(cwd: &Path) -> Result<PathBuf, FsError> {
    cwd.canonicalize().map_err(|e| {
        (
            INTERNAL,
            format!("the working directory is unavailable: {e}"),
        )
    })
}

fn resolved_inside(root: &Path, resolved: &Path, path: &Path) -> Result<(), FsError> {
    if resolved.starts_with(root) {
        Ok(())
    } else {
        Err((
            INVALID_PARAMS,
            format!(
                "{}: a symlink leads outside the session's working directory",
                path.display()
            ),
        ))
    }
}

fn read(cwd: &Path, path: &Path, line: Option<u64>, limit: Option<u64>) -> Result<String, FsError> {
    lexically_inside(cwd, path)?;
    let root = canonical_cwd(cwd)?;
    let real = path.canonicalize().map_err(|e| not_found(path, &e))?;
    resolved_inside(&root, &real, path)?;
    let meta = std::fs::metadata(&real).map_err(|e| not_found(path, &e))?;
    if meta.len() > MAX_READ_BYTES {
        let why = format!("{}: larger than {MAX_READ_BYTES} bytes", path.display());
        return Err((INVALID_PARAMS, why));
    }
    let bytes = std::fs::read(&real).map_err(|e| not_found(path, &e))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        (
            INVALID_PARAMS,
            format!("{}: not UTF-8 text", path.display()),
        )
    })?;
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    // `line` is 1-based; `limit` counts lines.
    let skip = line.unwrap_or(1).saturating_sub(1) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

fn write(cwd: &Path, path: &Path, content: &str) -> Result<(), FsError> {
    lexically_inside(cwd, path)?;
    let root = canonical_cwd(cwd)?;
    let io = |e: std::io::Error| (INTERNAL, format!("{}: {e}", path.display()));
    // Over an existing file (or symlink): where it really is.
    let target = match std::fs::symlink_metadata(path) {
        Ok(_) => {
            let real = path.canonicalize().map_err(|e| not_found(path, &e))?;
            resolved_inside(&root, &real, path)?;
            real
        }
        Err(_) => {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                return Err((
                    INVALID_PARAMS,
                    format!("{}: not a file path", path.display()),
                ));
            };
            let mut existing = parent;
            while !existing.exists() {
                existing = existing.parent().unwrap_or(Path::new("/"));
            }
            let real = existing.canonicalize().map_err(io)?;
            resolved_inside(&root, &real, path)?;
            std::fs::create_dir_all(parent).map_err(io)?;
            let real_parent = parent.canonicalize().map_err(io)?;
            resolved_inside(&root, &real_parent, path)?;
            real_parent.join(name)
        }
    };
    let dir = target.parent().unwrap_or(&root);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{}.zeroclaw-{}.tmp",
        name.unwrap_or_default(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &target)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(io)
}

fn not_found(path: &Path, e: &std::io::Error) -> FsError {
    (NOT_FOUND, format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("zc-acp-fs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        p.canonicalize().unwrap()
    }

    #[test]
    fn reads_and_writes_inside_and_refuses_escapes() {
        let base = tmp("confine");
        let ws = base.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(base.join("secret"), "s").unwrap();
        write(&ws, &ws.join("a/b.txt"), "1\n2\n3\n").unwrap();
        assert_eq!(
            read(&ws, &ws.join("a/b.txt"), None, None).unwrap(),
            "1\n2\n3\n"
        );
        assert_eq!(
            read(&ws, &ws.join("a/b.txt"), Some(2), Some(1)).unwrap(),
            "2\n"
        );
        let code = |r: Result<String, FsError>| r.unwrap_err().0;
        assert_eq!(
            code(read(&ws, &ws.join("../secret"), None, None)),
            INVALID_PARAMS
        );
        assert_eq!(
            code(read(&ws, &base.join("secret"), None, None)),
            INVALID_PARAMS
        );
        assert_eq!(
            code(read(&ws, Path::new("a/b.txt"), None, None)),
            INVALID_PARAMS
        );
        assert_eq!(code(read(&ws, &ws.join("missing"), None, None)), NOT_FOUND);
        std::os::unix::fs::symlink(base.join("secret"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink(&base, ws.join("out")).unwrap();
        assert_eq!(
            code(read(&ws, &ws.join("link"), None, None)),
            INVALID_PARAMS
        );
        assert_eq!(
            write(&ws, &ws.join("link"), "x").unwrap_err().0,
            INVALID_PARAMS
        );
        assert_eq!(
            write(&ws, &ws.join("out/new"), "x").unwrap_err().0,
            INVALID_PARAMS
        );
        assert_eq!(std::fs::read_to_string(base.join("secret")).unwrap(), "s");
        assert!(!base.join("new").exists());
        let _ = std::fs::remove_dir_all(&base);
    }
}
