//! The git branch and commit of a live session's working directory
//! (`session/git_branch`, a protocol addition polled by zerocode every
//! second), read from `.git/HEAD` and the ref it names — no `git` process,
//! bounded non-blocking reads of regular files only (a FIFO, a device: as
//! if absent), and `null`s outside a repository, in the bounded git-head
//! pool (src/confine/pool.rs).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::access::check_owner;
use super::Sessions;
use crate::config::Principal;
use crate::confine::pool;
use crate::error::RpcError;

/// The git head of live session `id`, for its owner or an admin. Bounded
/// like every read of a path the agent controls: a stuck read or a full
/// pool answers `null`s, never holds on.
pub async fn git_head(
    sessions: &Sessions,
    principal: &Principal,
    id: &str,
) -> Result<GitHead, RpcError> {
    let session = sessions.get(id).ok_or_else(|| RpcError::SessionNotFound {
        message: format!("Session not found: {id}").into(),
        data: None,
    })?;
    check_owner(principal, &session.owner)?;
    let dir = session.workspace_dir.clone();
    Ok(pool::run(pool::Work::GitHead, move || Ok(head(&dir)))
        .await
        .unwrap_or_default())
}

/// Most bytes read from any git file (HEAD, a ref, `packed-refs`, a `.git` file).
const MAX_READ: u64 = 1024 * 1024;
/// Most parent directories searched for `.git`.
const MAX_DEPTH: usize = 64;

/// The result: `branch` is `null` on a detached HEAD, both outside a repository.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct GitHead {
    pub branch: Option<String>,
    pub hash: Option<String>,
}

/// A git file's text: a regular file only, opened without blocking (the
/// agent may make `.git/HEAD` a FIFO), at most [`MAX_READ`] bytes.
fn read_small(path: &Path) -> Option<String> {
    String::from_utf8(crate::confine::read_regular(path, MAX_READ).ok()?).ok()
}

/// The git dir for `dir`: the nearest `.git` directory, or the one a `.git`
/// file (a worktree or submodule) points at.
fn git_dir(dir: &Path) -> Option<PathBuf> {
    for d in dir.ancestors().take(MAX_DEPTH) {
        let dot = d.join(".git");
        if dot.is_dir() {
            return Some(dot);
        }
        if dot.is_file() {
            let text = read_small(&dot)?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            return Some(d.join(target));
        }
    }
    None
}

fn is_hash(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The commit `name` (`refs/heads/main`) points at, loose or packed. A
/// worktree keeps its refs in the common dir named by `commondir`.
fn resolve(git: &Path, name: &str) -> Option<String> {
    if name.contains("..") {
        return None;
    }
    let common = read_small(&git.join("commondir"))
        .map(|c| git.join(c.trim()))
        .unwrap_or_else(|| git.to_owned());
    for base in [git, common.as_path()] {
        if let Some(h) = read_small(&base.join(name)).map(|s| s.trim().to_owned()) {
            if is_hash(&h) {
                return Some(h);
            }
        }
    }
    let packed = read_small(&common.join("packed-refs"))?;
    packed.lines().find_map(|l| {
        let (hash, r) = l.split_once(' ')?;
        (r == name && is_hash(hash)).then(|| hash.to_owned())
    })
}

/// What `.git/HEAD` says for `dir`.
pub fn head(dir: &Path) -> GitHead {
    let Some(git) = git_dir(dir) else {
        return GitHead::default();
    };
    let Some(text) = read_small(&git.join("HEAD")) else {
        return GitHead::default();
    };
    let text = text.trim();
    match text.strip_prefix("ref:").map(str::trim) {
        Some(name) => GitHead {
            branch: Some(name.strip_prefix("refs/heads/").unwrap_or(name).to_owned()),
            hash: resolve(&git, name),
        },
        None if is_hash(text) => GitHead {
            branch: None,
            hash: Some(text.to_owned()),
        },
        None => GitHead::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H1: &str = "0123456789abcdef0123456789abcdef01234567";
    const H2: &str = "89abcdef0123456789abcdef0123456789abcdef";

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zc-git-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("repo/.git/refs/heads")).unwrap();
        std::fs::create_dir_all(d.join("repo/sub/dir")).unwrap();
        d
    }

    #[test]
    fn branch_loose_packed_detached_and_outside() {
        let d = tmp("a");
        let git = d.join("repo/.git");
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("refs/heads/main"), format!("{H1}\n")).unwrap();
        let got = head(&d.join("repo/sub/dir"));
        assert_eq!(got.branch.as_deref(), Some("main"));
        assert_eq!(got.hash.as_deref(), Some(H1));

        std::fs::write(git.join("HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        std::fs::write(
            git.join("packed-refs"),
            format!("# pack-refs with: peeled\n{H2} refs/heads/feature/x\n"),
        )
        .unwrap();
        let got = head(&d.join("repo"));
        assert_eq!(got.branch.as_deref(), Some("feature/x"));
        assert_eq!(got.hash.as_deref(), Some(H2));

        // A FIFO as HEAD (no writer) answers at once, as no repository.
        #[cfg(unix)]
        {
            std::fs::remove_file(git.join("HEAD")).unwrap();
            crate::confine::testing::mkfifo(&git.join("HEAD"));
            assert_eq!(head(&d.join("repo")), GitHead::default());
            std::fs::remove_file(git.join("HEAD")).unwrap();
        }

        std::fs::write(git.join("HEAD"), format!("{H2}\n")).unwrap();
        assert_eq!(
            head(&d.join("repo")),
            GitHead {
                branch: None,
                hash: Some(H2.into())
            }
        );
        assert_eq!(head(&d), GitHead::default());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_worktree_file_points_at_its_git_dir() {
        let d = tmp("b");
        let wt = d.join("repo/.git/worktrees/w");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join("HEAD"), "ref: refs/heads/side\n").unwrap();
        std::fs::write(wt.join("commondir"), "../..\n").unwrap();
        std::fs::write(d.join("repo/.git/refs/heads/side"), format!("{H1}\n")).unwrap();
        std::fs::create_dir_all(d.join("w")).unwrap();
        std::fs::write(d.join("w/.git"), format!("gitdir: {}\n", wt.display())).unwrap();
        let got = head(&d.join("w"));
        assert_eq!(got.branch.as_deref(), Some("side"));
        assert_eq!(got.hash.as_deref(), Some(H1));
        let _ = std::fs::remove_dir_all(&d);
    }
}
