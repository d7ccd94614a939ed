//! `fs/read_text_file` and `fs/write_text_file`, confined to the session's
//! working directory (docs/agents.md) by [`crate::confine`]: the path must
//! be absolute, without `..`, under the working directory as given; the
//! kernel then resolves it beneath the opened directory (a symlink that
//! leaves it is refused at open time). Reads are of regular files only,
//! never blocking, at most [`MAX_READ_BYTES`]; writes are atomic (a fresh
//! temporary of an unpredictable name, fsynced, renamed inside the opened
//! directory). The blocking work runs in the bounded agent-files pool.
//! [`confined_dir`] applies the same confinement to `terminal/create`'s `cwd`.

use std::path::Path;

use serde_json::{json, Value};

use crate::confine::{pool, Dir, Error, Rel, Root};
use crate::memory::Charge;

/// The largest file served to an agent (its answer is one line of ours).
/// What a read holds is charged to the daemon's memory budget as it is
/// read (refused over it); the pool's 8 permits bound it too (8 x 8 MiB).
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
    let shown = path.clone();
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
                .ok_or(Refusal::MissingContent)?;
            write(&cwd, Path::new(&path), content).map(|()| json!({}))
        }
    };
    let done = pool::run(pool::Work::AgentFiles, move || Ok(job())).await;
    match done {
        Ok(answer) => answer.map_err(|r| r.wire(&shown)),
        Err(e) => Err(Refusal::Confine(e).wire(&shown)),
    }
}

/// Why a request is refused, mapped to ACP's codes in [`Refusal::wire`].
#[derive(Debug)]
enum Refusal {
    Confine(Error),
    /// The working directory itself could not be opened.
    Unavailable(Error),
    MissingContent,
    NotUtf8,
}

impl Refusal {
    fn wire(self, path: &str) -> FsError {
        match self {
            Refusal::MissingContent => (INVALID_PARAMS, "missing \"content\"".to_owned()),
            Refusal::NotUtf8 => (INVALID_PARAMS, format!("{path}: not UTF-8 text")),
            Refusal::Unavailable(e) => unavailable(&e),
            Refusal::Confine(e) => (code_of(&e), format!("{path}: {}", message(&e))),
        }
    }
}

/// The ACP code of a confinement error: a refused path is invalid params,
/// a missing file not found, busy or slow work internal.
fn code_of(e: &Error) -> i64 {
    match e {
        Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound => NOT_FOUND,
        Error::Io(_) | Error::Busy | Error::TimedOut { .. } | Error::NoMemory => INTERNAL,
        _ => INVALID_PARAMS,
    }
}

fn message(e: &Error) -> String {
    match e {
        Error::Outside => "outside the session's working directory".to_owned(),
        Error::Escapes => "a symlink leads outside the session's working directory".to_owned(),
        other => other.to_string(),
    }
}

/// A directory the agent names (`terminal/create`'s `cwd`), confined as
/// files are, and opened: the child runs in the directory the kernel
/// resolved (see [`Dir::path`]), held open until it is spawned.
pub fn confined_dir(cwd: &Path, dir: &Path) -> Result<Dir, FsError> {
    let shown = dir.display().to_string();
    let refuse = |e: Error| Refusal::Confine(e).wire(&shown);
    let rel = Rel::absolute_under(cwd, dir).map_err(refuse)?;
    let root = Root::open(cwd).map_err(|e| unavailable(&e))?;
    root.open_dir(&rel).map_err(|e| match e {
        // Not found is a refusal here, as before.
        Error::Io(io) => (INVALID_PARAMS, format!("{shown}: {io}")),
        e => refuse(e),
    })
}

fn unavailable(e: &Error) -> FsError {
    (
        INTERNAL,
        format!("the working directory is unavailable: {e}"),
    )
}

fn root_and_rel(cwd: &Path, path: &Path) -> Result<(Root, Rel), Refusal> {
    let rel = Rel::absolute_under(cwd, path).map_err(Refusal::Confine)?;
    Ok((Root::open(cwd).map_err(Refusal::Unavailable)?, rel))
}

fn read(cwd: &Path, path: &Path, line: Option<u64>, limit: Option<u64>) -> Result<String, Refusal> {
    let (root, rel) = root_and_rel(cwd, path)?;
    // Held while the text is read and cut (not while the answer is written).
    let mut charge = Charge::empty();
    let bytes = root
        .read_whole(&rel, MAX_READ_BYTES, true, &mut |n| {
            charge.try_grow(n).is_ok()
        })
        .map_err(Refusal::Confine)?;
    let text = String::from_utf8(bytes).map_err(|_| Refusal::NotUtf8)?;
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    // `line` is 1-based; `limit` counts lines.
    let skip = line.unwrap_or(1).saturating_sub(1) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

fn write(cwd: &Path, path: &Path, content: &str) -> Result<(), Refusal> {
    let (root, rel) = root_and_rel(cwd, path)?;
    root.write(&rel, content.as_bytes())
        .map_err(Refusal::Confine)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A scratch directory, canonical on Unix (macOS's `/tmp` is a
    /// symlink); Windows' canonical form is a verbatim `\\?\` path, where
    /// the tests' `/` would be no separator, so it stays as made there.
    fn tmp(name: &str) -> PathBuf {
        let d = crate::confine::testing::scratch(&format!("acp-fs-{name}"), &[]);
        if cfg!(windows) {
            d
        } else {
            d.canonicalize().unwrap()
        }
    }

    #[test]
    fn reads_and_writes_inside_and_refuses_escapes() {
        let base = tmp("confine");
        let ws = base.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(base.join("secret"), "s").unwrap();
        let code = |r: Result<String, Refusal>| r.unwrap_err().wire("p").0;
        write(&ws, &ws.join("a/b.txt"), "1\n2\n3\n").unwrap();
        assert_eq!(
            read(&ws, &ws.join("a/b.txt"), None, None).unwrap(),
            "1\n2\n3\n"
        );
        assert_eq!(
            read(&ws, &ws.join("a/b.txt"), Some(2), Some(1)).unwrap(),
            "2\n"
        );
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
        // Symlinks out (Unix: Windows makes them only with a privilege).
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(base.join("secret"), ws.join("link")).unwrap();
            std::os::unix::fs::symlink(&base, ws.join("out")).unwrap();
            assert_eq!(
                code(read(&ws, &ws.join("link"), None, None)),
                INVALID_PARAMS
            );
            let wcode = |r: Result<(), Refusal>| r.unwrap_err().wire("p").0;
            assert_eq!(wcode(write(&ws, &ws.join("link"), "x")), INVALID_PARAMS);
            assert_eq!(wcode(write(&ws, &ws.join("out/new"), "x")), INVALID_PARAMS);
        }
        assert_eq!(std::fs::read_to_string(base.join("secret")).unwrap(), "s");
        assert!(!base.join("new").exists());
        let _ = std::fs::remove_dir_all(&base);
    }
}
