//! Where the daemon keeps its files (§2.1): resolving the config and data
//! directories, and creating them with owner-only permissions.
//!
//! Resolution is pure (environment, working directory and home are passed in)
//! so that the daemon and every client compute the same paths, and so that
//! every row of the §2.1 table is testable without touching the process
//! environment. Paths are made absolute and normalized *lexically* (no
//! symlink resolution): the Windows pipe name hashes this exact string (§2.2).
//!
//! Creation follows the rule of §2.3 step 1: the daemon sets the mode only on
//! directories it creates itself and on its own data dir, never on a directory
//! that existed before and lies outside the data dir; a data dir that is not
//! its own (a link, another uid's, a shared one) stops startup instead
//! (`crate::private_dir`).

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{EndpointError, Gid};
#[cfg(unix)]
use crate::private_dir::make_private;

/// The resolved directories of one daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// Holds `config.toml` and agent workspaces.
    pub config_dir: PathBuf,
    /// Holds the socket, the locks and the session database.
    pub data_dir: PathBuf,
    /// `<config_dir>/config.toml`.
    pub config_file: PathBuf,
    /// Set when `ZEROCLAW_DATA_DIR` was ignored because the config dir came
    /// from `--config-dir` or `ZEROCLAW_CONFIG_DIR`; the daemon logs it.
    pub warning: Option<String>,
}

/// Resolves the directories by the §2.1 table (first match wins):
///
/// | source | config dir | data dir |
/// |---|---|---|
/// | `--config-dir DIR` (non-empty) | `DIR` | `DIR/data` |
/// | `ZEROCLAW_CONFIG_DIR` (non-empty) | its value | `<config_dir>/data` |
/// | `ZEROCLAW_DATA_DIR` (non-empty) | `~/.zeroclaw` | its value |
/// | otherwise | `~/.zeroclaw` | `~/.zeroclaw/data` |
///
/// A leading `~` component is replaced by `home` (`~user` is not expanded);
/// relative paths are joined to `cwd`; `.` and `..` are removed lexically.
pub fn resolve_dirs(
    cli_config_dir: Option<&OsStr>,
    env: impl Fn(&str) -> Option<OsString>,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<Dirs, EndpointError> {
    let non_empty = |v: Option<OsString>| v.filter(|s| !s.is_empty());
    let data_env = non_empty(env("ZEROCLAW_DATA_DIR"));
    let pinned = match cli_config_dir.filter(|s| !s.is_empty()) {
        Some(dir) => Some((dir.to_os_string(), "--config-dir")),
        None => non_empty(env("ZEROCLAW_CONFIG_DIR")).map(|dir| (dir, "ZEROCLAW_CONFIG_DIR")),
    };

    let (config_dir, data_dir, warning) = match pinned {
        Some((raw, source)) => {
            let config_dir = absolute(Path::new(&raw), cwd, home)?;
            let data_dir = config_dir.join("data");
            let warning = data_env.map(|ignored| {
                format!(
                    "ignoring ZEROCLAW_DATA_DIR={}: the config dir from {source} pins the data dir to {}",
                    Path::new(&ignored).display(),
                    data_dir.display()
                )
            });
            (config_dir, data_dir, warning)
        }
        None => {
            let config_dir = absolute(Path::new("~/.zeroclaw"), cwd, home)?;
            let data_dir = match data_env {
                Some(raw) => absolute(Path::new(&raw), cwd, home)?,
                None => config_dir.join("data"),
            };
            (config_dir, data_dir, None)
        }
    };
    Ok(Dirs {
        config_file: config_dir.join("config.toml"),
        config_dir,
        data_dir,
        warning,
    })
}

/// Expands `~`, joins a relative path to `cwd`, then normalizes lexically.
fn absolute(raw: &Path, cwd: &Path, home: Option<&Path>) -> Result<PathBuf, EndpointError> {
    let mut components = raw.components();
    let expanded = match components.next() {
        Some(Component::Normal(first)) if first == "~" => {
            let home = home.ok_or(EndpointError::NoHome)?;
            home.join(components.as_path())
        }
        _ => raw.to_path_buf(),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    Ok(normalize_lexically(&joined))
}

/// Removes `.` and resolves `..` against the preceding component without
/// touching the filesystem; `..` at the root stays at the root. The result has
/// no trailing separator (except a bare root).
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Creates the config and data directories (§2.1).
///
/// Directories it creates get `0700`; the data dir, created or not, is set to
/// `0700`, or to `0750` owned by `socket_group` when that is given. Pass the
/// group only when the socket lives in the data dir (the default endpoint):
/// [`claim`](super::claim) applies the same rule to the data dir again.
/// A pre-existing config dir keeps its mode. On Windows the directories are
/// only created; the user profile's ACL applies.
pub fn ensure_dirs(dirs: &Dirs, socket_group: Option<Gid>) -> Result<(), EndpointError> {
    create_missing(&dirs.config_dir, None)?;
    create_missing(&dirs.data_dir, socket_group)?;
    set_own_dir_mode(&dirs.data_dir, socket_group)
}

/// The mode of a directory the daemon creates or owns: `0700`, or `0750` when
/// a socket group must be able to traverse it.
#[cfg(unix)]
pub(crate) fn dir_mode(group: Option<Gid>) -> u32 {
    if group.is_some() {
        0o750
    } else {
        0o700
    }
}

/// Creates `dir` and any missing ancestors, giving each directory it creates
/// the mode of [`dir_mode`] (and the group, when given). Directories that
/// already exist are left alone.
pub(crate) fn create_missing(dir: &Path, group: Option<Gid>) -> Result<(), EndpointError> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .take_while(|p| std::fs::symlink_metadata(p).is_err())
        .collect();
    for path in missing.into_iter().rev() {
        match make_dir(path) {
            Ok(()) => set_created_dir_mode(path, group)?,
            // Lost a race with another creator: not ours, so leave its mode alone.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(EndpointError::io(
                    format!("creating directory `{}`", path.display()),
                    e,
                ));
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    // Created owner-only; the final mode and group are applied right after.
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

#[cfg(not(unix))]
fn make_dir(path: &Path) -> io::Result<()> {
    std::fs::create_dir(path)
}

#[cfg(unix)]
fn set_created_dir_mode(path: &Path, group: Option<Gid>) -> Result<(), EndpointError> {
    set_own_dir_mode(path, group)
}

#[cfg(not(unix))]
fn set_created_dir_mode(_path: &Path, _group: Option<Gid>) -> Result<(), EndpointError> {
    Ok(())
}

/// Sets a directory the daemon owns to `0700`, or to `0750` owned by `group`,
/// refusing one that is not its own (a link, another uid's, a shared one:
/// [`make_private`]).
#[cfg(unix)]
pub(crate) fn set_own_dir_mode(path: &Path, group: Option<Gid>) -> Result<(), EndpointError> {
    Ok(make_private(path, dir_mode(group), group)?)
}

/// Lets `gid` pass through `path` (mode `0710`, owned by the group: search,
/// no listing). With `security.socket_group` and the default layout the
/// socket lies in `<config_dir>/data/`, so the group must traverse the config
/// dir too; `config.toml` itself stays `0600`.
#[cfg(unix)]
pub fn let_group_traverse(path: &Path, gid: Gid) -> Result<(), EndpointError> {
    Ok(make_private(path, 0o710, Some(gid))?)
}

#[cfg(not(unix))]
pub(crate) fn set_own_dir_mode(_path: &Path, _group: Option<Gid>) -> Result<(), EndpointError> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn resolve(cli: Option<&str>, pairs: &[(&str, &str)]) -> Dirs {
        resolve_dirs(
            cli.map(OsStr::new),
            env_of(pairs),
            Path::new("/work/cwd"),
            Some(Path::new("/home/me")),
        )
        .expect("resolution of test input")
    }

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn cli_config_dir_wins_and_pins_the_data_dir() {
        let env = [("ZEROCLAW_CONFIG_DIR", "/env/cfg")];
        let d = resolve(Some("/cli/cfg"), &env);
        assert_eq!(d.config_dir, p("/cli/cfg"));
        assert_eq!(d.data_dir, p("/cli/cfg/data"));
        assert_eq!(d.config_file, p("/cli/cfg/config.toml"));
        assert_eq!(d.warning, None);
    }

    #[test]
    fn empty_cli_config_dir_falls_through() {
        let d = resolve(Some(""), &[("ZEROCLAW_CONFIG_DIR", "/env/cfg")]);
        assert_eq!(d.config_dir, p("/env/cfg"));
        let d = resolve(Some(""), &[]);
        assert_eq!(d.config_dir, p("/home/me/.zeroclaw"));
    }

    #[test]
    fn env_config_dir() {
        let d = resolve(None, &[("ZEROCLAW_CONFIG_DIR", "/env/cfg")]);
        assert_eq!(d.config_dir, p("/env/cfg"));
        assert_eq!(d.data_dir, p("/env/cfg/data"));
        assert_eq!(d.warning, None);
        let d = resolve(None, &[("ZEROCLAW_CONFIG_DIR", "")]);
        assert_eq!(d.config_dir, p("/home/me/.zeroclaw"));
    }

    #[test]
    fn env_data_dir_alone_keeps_the_default_config_dir() {
        let d = resolve(None, &[("ZEROCLAW_DATA_DIR", "/srv/zc")]);
        assert_eq!(d.config_dir, p("/home/me/.zeroclaw"));
        assert_eq!(d.data_dir, p("/srv/zc"));
        assert_eq!(d.warning, None);
        let d = resolve(None, &[("ZEROCLAW_DATA_DIR", "~/zc-data")]);
        assert_eq!(d.data_dir, p("/home/me/zc-data"));
    }

    #[test]
    fn defaults() {
        let d = resolve(None, &[("ZEROCLAW_DATA_DIR", "")]);
        assert_eq!(d.config_dir, p("/home/me/.zeroclaw"));
        assert_eq!(d.data_dir, p("/home/me/.zeroclaw/data"));
        assert_eq!(d.config_file, p("/home/me/.zeroclaw/config.toml"));
        assert_eq!(d.warning, None);
    }

    #[test]
    fn data_dir_env_is_ignored_with_a_warning_when_the_config_dir_is_pinned() {
        let d = resolve(Some("/cli/cfg"), &[("ZEROCLAW_DATA_DIR", "/srv/zc")]);
        assert_eq!(d.data_dir, p("/cli/cfg/data"));
        let w = d.warning.expect("warning");
        assert!(
            w.contains("ZEROCLAW_DATA_DIR=/srv/zc") && w.contains("--config-dir"),
            "{w}"
        );

        let env = [
            ("ZEROCLAW_CONFIG_DIR", "/env/cfg"),
            ("ZEROCLAW_DATA_DIR", "/srv/zc"),
        ];
        let d = resolve(None, &env);
        assert_eq!(d.data_dir, p("/env/cfg/data"));
        let w = d.warning.expect("warning");
        assert!(w.contains("ZEROCLAW_CONFIG_DIR"), "{w}");

        let d = resolve(Some("/cli/cfg"), &[("ZEROCLAW_DATA_DIR", "")]);
        assert_eq!(d.warning, None);
    }

    #[test]
    fn tilde_and_relative_paths() {
        assert_eq!(resolve(Some("~"), &[]).config_dir, p("/home/me"));
        assert_eq!(resolve(Some("~/c"), &[]).config_dir, p("/home/me/c"));
        assert_eq!(
            resolve(Some("~other/c"), &[]).config_dir,
            p("/work/cwd/~other/c")
        );
        assert_eq!(resolve(Some("cfg"), &[]).config_dir, p("/work/cwd/cfg"));
        assert_eq!(resolve(Some("a/~/b"), &[]).config_dir, p("/work/cwd/a/~/b"));
        let d = resolve(None, &[("ZEROCLAW_DATA_DIR", "rel/data")]);
        assert_eq!(d.data_dir, p("/work/cwd/rel/data"));
    }

    #[test]
    fn missing_home_is_an_error_only_when_needed() {
        let cwd = Path::new("/w");
        let err = resolve_dirs(None, env_of(&[]), cwd, None).expect_err("needs home");
        assert!(matches!(err, EndpointError::NoHome));
        let err = resolve_dirs(Some(OsStr::new("~/x")), env_of(&[]), cwd, None);
        assert!(matches!(err, Err(EndpointError::NoHome)));
        let d = resolve_dirs(Some(OsStr::new("/x")), env_of(&[]), cwd, None).expect("no ~");
        assert_eq!(d.data_dir, p("/x/data"));
    }

    #[test]
    fn lexical_normalization() {
        assert_eq!(resolve(Some("/a/./b/../c/"), &[]).config_dir, p("/a/c"));
        assert_eq!(resolve(Some("../../../x"), &[]).config_dir, p("/x"));
        assert_eq!(
            resolve(Some("./x//y/."), &[]).config_dir,
            p("/work/cwd/x/y")
        );
        assert_eq!(
            resolve(Some("~/../other"), &[]).config_dir,
            p("/home/other")
        );
        assert_eq!(normalize_lexically(Path::new("/../..")), p("/"));
        assert_eq!(normalize_lexically(Path::new("a/../../b")), p("../b"));
        assert_eq!(normalize_lexically(Path::new("/a/b/")).as_os_str(), "/a/b");
    }
}

#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;

    #[test]
    fn windows_paths_resolve_and_normalize() {
        let cwd = Path::new(r"C:\work\cwd");
        let home = Some(Path::new(r"C:\Users\me"));
        let none = |_: &str| None;
        let d = resolve_dirs(None, none, cwd, home).expect("defaults");
        assert_eq!(d.config_dir, PathBuf::from(r"C:\Users\me\.zeroclaw"));
        assert_eq!(d.data_dir, PathBuf::from(r"C:\Users\me\.zeroclaw\data"));
        let d = resolve_dirs(Some(OsStr::new(r"..\cfg\.")), none, cwd, home).expect("relative");
        assert_eq!(d.config_dir, PathBuf::from(r"C:\work\cfg"));
        assert_eq!(d.data_dir, PathBuf::from(r"C:\work\cfg\data"));
        let d = resolve_dirs(Some(OsStr::new(r"~\zc")), none, cwd, home).expect("tilde");
        assert_eq!(d.config_dir, PathBuf::from(r"C:\Users\me\zc"));
    }
}

/// [`resolve_dirs`] from this process's environment, working directory
/// and `HOME`: what the daemon and its CLI clients both use (§2.1, §2.2).
pub fn resolve_dirs_from_env(config_dir: Option<&std::ffi::OsStr>) -> Result<Dirs, EndpointError> {
    let cwd = std::env::current_dir().map_err(|source| EndpointError::Io {
        context: "reading the working directory".into(),
        source,
    })?;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    resolve_dirs(config_dir, |k| std::env::var_os(k), &cwd, home.as_deref())
}
