//! Reading the tree for the architecture rules: every `.rs` file under
//! `src/`, `layers/` and `services/`, the `crate::…` and `super::…` paths in
//! it (a `super::…` path judged as the `crate::…` path it names), and the `mod` declarations that mount a file. Text only: no rustc,
//! so a failure can always be read against the lines it names.

use std::path::{Path, PathBuf};

/// One `crate::…` reference: the file it is in and the path it names,
/// cut to its first two segments (`state`, `services::file`).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
pub(super) struct Import {
    pub(super) file: String,
    pub(super) target: String,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every path after `crate::` in `code`, with `{a, b::c}` groups expanded to
/// their first segments; comment lines are skipped.
pub(super) fn crate_paths(code: &str) -> Vec<String> {
    paths_after(code, "crate::")
        .into_iter()
        .map(|(_, path)| path)
        .collect()
}

/// Every `super::…` path in the code of a file before its test module
/// (`#[cfg(test)]` or `#[cfg(all(test, …))]`, perhaps `#[path]`ed, whose
/// `super` is the file itself), as (levels up, path):
/// `super::super::a::b` is `(2, "a::b")`.
pub(super) fn super_paths(code: &str) -> Vec<(usize, String)> {
    paths_after(before_test_module(code), "super::")
}

/// The code of a file up to the attribute that gates its test module.
fn before_test_module(code: &str) -> &str {
    let mut offset = 0;
    let mut gate = None;
    for line in code.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with("#[cfg(") && t.contains("test") {
            gate = gate.or(Some(offset));
        } else if gate.is_some() && t.starts_with("mod ") {
            return &code[..gate.unwrap_or(offset)];
        } else if !t.starts_with("#[") {
            gate = None;
        }
        offset += line.len();
    }
    code
}

/// The paths after each `prefix` that stands alone (not the tail of a longer
/// name), with how many times it stood in a row, groups expanded.
fn paths_after(code: &str, prefix: &str) -> Vec<(usize, String)> {
    let text: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue; // `zeroclaw_crate::`, `a::super::` or similar, not ours
        }
        let mut levels = 1;
        while let Some(tail) = rest.strip_prefix(prefix) {
            levels += 1;
            rest = tail;
        }
        if let Some(group) = rest.strip_prefix('{') {
            for name in top_level_names(group) {
                found.push((levels, name));
            }
        } else {
            found.push((levels, leading_path(rest)));
        }
    }
    found
}

/// The comma-separated names at depth 0 of a `{…}` group, up to its close.
fn top_level_names(group: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                names.push(leading_path(&group[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(leading_path(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The first two `::` segments of a path (identifiers only).
fn leading_path(s: &str) -> String {
    let s = s.trim_start();
    let ident = |s: &str| -> usize {
        s.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    };
    let first_len = ident(s);
    let first = &s[..first_len];
    let after = &s[first_len..];
    match after.strip_prefix("::") {
        Some(tail) if tail.starts_with(|c: char| c.is_alphabetic() || c == '_') => {
            format!("{first}::{}", &tail[..ident(tail)])
        }
        _ => first.to_string(),
    }
}

/// The folders whose files the rule reads: the library's own and the two
/// top-level folders `src/lib.rs` mounts with `#[path]` (the design card keeps
/// them beside `src/`; the mounting hides them from tools that follow
/// `src/` only, so this test follows them itself).
pub(super) const SCANNED: [&str; 3] = ["src", "layers", "services"];

/// A file's module path: `src/config/schema.rs` → `[config, schema]`,
/// `src/session/mod.rs` → `[session]`, `services/session/read.rs` →
/// `[services, session, read]`.
pub(super) fn module_path(file: &str) -> Vec<String> {
    let rel = file.strip_prefix("src/").unwrap_or(file);
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Test-only files (`validate_tests.rs`, `test_support.rs`) use their
/// neighbours by design and nothing uses them back; they draw no arrows.
pub(super) fn is_test_file(file: &str) -> bool {
    let name = file.rsplit('/').next().unwrap_or_default();
    name.ends_with("_tests.rs") || name.starts_with("test") || name == "tests.rs"
}

/// Every `super::…` path of `code` (the file `rel`) as the crate path it
/// names, cut to two segments like a `crate::…` path:
/// `super::super::config::X` in `services/additions/config_list.rs` is
/// `services::config`. Without this a family could reach its neighbour
/// through `super::super::` unseen. A test file is a module of the file it
/// tests (`super` is that file), and uses only it: none is read.
pub(super) fn super_as_crate_paths(rel: &str, code: &str) -> Vec<String> {
    if is_test_file(rel) {
        return Vec::new();
    }
    let me = module_path(rel);
    super_paths(code)
        .into_iter()
        .map(|(levels, path)| {
            let keep = me.len().saturating_sub(levels);
            let mut abs: Vec<&str> = me[..keep].iter().map(String::as_str).collect();
            abs.extend(path.split("::"));
            abs.truncate(2);
            abs.join("::")
        })
        .collect()
}

/// Every `.rs` file the rule reads under `root`, relative, `/`-separated.
pub(super) fn scanned_files(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for dir in SCANNED {
        rust_files(&root.join(dir), &mut files);
    }
    let mut out: Vec<String> = files
        .iter()
        .filter_map(|p| p.strip_prefix(root).ok())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        // main.rs is the binary's root (its `crate::` is not the library);
        // these tests spell paths as test data.
        .filter(|rel| {
            !matches!(rel.as_str(), "src/main.rs" | "src/lib.rs")
                && !rel.starts_with("src/architecture_tests/")
        })
        .collect();
    out.sort();
    out
}

/// Every `crate::…` path of the files the rule reads under `root`, and
/// every `super::…` path as the `crate::…` path it names.
pub(super) fn imports_in(root: &Path) -> Vec<Import> {
    let mut out = Vec::new();
    for rel in scanned_files(root) {
        let Ok(code) = std::fs::read_to_string(root.join(&rel)) else {
            continue;
        };
        let supers = super_as_crate_paths(&rel, &code);
        for target in crate_paths(&code).into_iter().chain(supers) {
            out.push(Import {
                file: rel.clone(),
                target,
            });
        }
    }
    out.sort();
    out.dedup();
    out
}

pub(super) fn imports() -> Vec<Import> {
    imports_in(Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// The files a module file declares with `mod name;` (inline `mod name {`
/// blocks are part of the file), resolved the way rustc does.
pub(super) fn declared_files(root: &Path, rel: &str) -> Vec<String> {
    let code = std::fs::read_to_string(root.join(rel)).unwrap_or_default();
    let file = Path::new(rel);
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let parent = file.parent().unwrap_or(Path::new(""));
    // `a/mod.rs` declares children in `a/`; `a/b.rs` declares them in `a/b/`.
    let dir = if stem == "mod" {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    };
    let mut out = Vec::new();
    for line in code.lines().map(str::trim) {
        let decl = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        let Some(name) = decl.strip_prefix("mod ").and_then(|n| n.strip_suffix(';')) else {
            continue;
        };
        let flat = dir.join(format!("{name}.rs"));
        let nested = dir.join(name).join("mod.rs");
        let found = [flat, nested]
            .into_iter()
            .find(|p| root.join(p).is_file())
            .unwrap_or_else(|| panic!("{rel}: `mod {name};` names no file"));
        out.push(found.to_string_lossy().replace('\\', "/"));
    }
    out
}
