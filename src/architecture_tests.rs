//! Owns the rule for which module may use which (docs/architecture.md,
//! "Which module may use which"): it reads every `crate::…` path in the
//! files under `src/`, `layers/` and `services/` and checks each against
//! the rank table below, so an arrow that runs back up fails `cargo test`
//! instead of waiting for a review. `layers/` and `services/` sit beside
//! `src/` (DESIGN.md) and are mounted with `#[path]`, which hides them from
//! tools that follow `src/`; a test here follows their `mod` tree and
//! requires every mounted file to be read, and another plants upward
//! imports in a throwaway tree to show the rule catches them there.
//!
//! How to read a failure: each line names the importing file, the module
//! it reaches (`-> state`) and both ranks. Arrows must point to a strictly
//! lower rank; fix the import (pass the handle the code needs, or move the
//! shared type down to the lower module), never by raising a rank to fit.
//! A line saying "known violation no longer happens" means a fix landed:
//! delete that row from `KNOWN_VIOLATIONS`.
//!
//! Strict ranks make the module graph a DAG by construction (no circles
//! between top-level modules), the same discipline tower and axum keep by
//! crate boundaries; we keep it inside one crate with this test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-level module → rank; a module may use only modules of a lower rank.
/// Grouped by tier (see docs/architecture.md):
/// entry > transport > layers > services > domain > vocabulary > backends > base.
const RANKS: &[(&str, u32)] = &[
    // base: constants and helpers with no crate imports
    ("limits", 0),
    ("bounded", 0),
    ("hex", 0),
    ("private_dir", 0),
    ("dialect", 0),
    ("storage_fault", 0),
    ("faults", 0),
    ("systemd", 0),
    // backends: configuration, agent processes, persistence, logging
    ("endpoint", 1),
    ("config", 1),
    ("agent", 2),
    ("store", 3),
    ("logging", 4),
    // vocabulary: errors, wire frames, method table, write queues
    ("error", 5),
    ("memory", 6),
    ("codec", 6),
    ("methods", 6),
    ("jsonrpc", 7),
    ("outbound", 7),
    ("peer", 8),
    // domain: who is calling, sessions, files, the daemon's handles
    ("authz", 9),
    ("request", 10),
    ("context", 11),
    ("live_config", 12),
    ("session", 13),
    ("files", 14),
    ("state", 15),
    // services: one verb per method, thin over the domain
    ("services", 16),
    // layers: the request pipeline that ends in the services router
    ("layers", 17),
    // transport: socket and WebSocket connections
    ("connection", 18),
    ("gateway", 19),
    // entry: the daemon's start-up, and the commands a person types
    // (chat, logs, doctor: clients that also read config and the store)
    ("daemon", 20),
    ("cli", 21),
];

/// The CLI client stands on the endpoint and the wire types, never on the
/// daemon: it may use only these modules, whatever their rank.
const CLIENT_MAY_USE: &[&str] = &["endpoint", "codec", "jsonrpc", "limits", "dialect", "hex"];

/// Arrows that still run the wrong way, as `(file, module)`. Each row is a
/// debt with its fix named in issue 14; the list may only shrink.
const KNOWN_VIOLATIONS: &[(&str, &str)] = &[];

/// One `crate::…` reference: the file it is in and the path it names,
/// cut to its first two segments (`state`, `services::file`).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct Import {
    file: String,
    target: String,
}

fn rank(module: &str) -> Option<u32> {
    RANKS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// The top-level module a file belongs to (`src/session/turn.rs` → `session`).
fn module_of(file: &str) -> String {
    let mut parts = file.split('/');
    match parts.next() {
        Some("src") => {
            let first = parts.next().unwrap_or_default();
            first.trim_end_matches(".rs").to_string()
        }
        Some(root) => root.to_string(),
        None => String::new(),
    }
}

/// The family folder or file of a services file (`services/session/open.rs`
/// → `session`); `None` for `services/mod.rs`, which is the router.
fn service_family(file: &str) -> Option<String> {
    let rest = file.strip_prefix("services/")?;
    let first = rest.split('/').next()?;
    (first != "mod.rs").then(|| first.trim_end_matches(".rs").to_string())
}

/// Whether `name` is a family of `services/` (its own file or folder), not
/// an item of the router in `services/mod.rs`.
fn is_service_family(name: &str) -> bool {
    let services = Path::new(env!("CARGO_MANIFEST_DIR")).join("services");
    services.join(format!("{name}.rs")).is_file() || services.join(name).is_dir()
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
fn crate_paths(code: &str) -> Vec<String> {
    let text: String = code
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `zeroclaw_crate::` or similar, not ours
        }
        if let Some(group) = rest.strip_prefix('{') {
            for name in top_level_names(group) {
                found.push(name);
            }
        } else {
            found.push(leading_path(rest));
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
/// top-level folders `src/lib.rs` mounts with `#[path]` (DESIGN.md keeps
/// them beside `src/`; the mounting hides them from tools that follow
/// `src/` only, so this test follows them itself).
const SCANNED: [&str; 3] = ["src", "layers", "services"];

/// Every `.rs` file the rule reads under `root`, relative, `/`-separated.
fn scanned_files(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for dir in SCANNED {
        rust_files(&root.join(dir), &mut files);
    }
    let mut out: Vec<String> = files
        .iter()
        .filter_map(|p| p.strip_prefix(root).ok())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        // main.rs is the binary's root (its `crate::` is not the library);
        // this file spells paths as test data.
        .filter(|rel| {
            !matches!(
                rel.as_str(),
                "src/main.rs" | "src/lib.rs" | "src/architecture_tests.rs"
            )
        })
        .collect();
    out.sort();
    out
}

/// Every `crate::…` path of the files the rule reads under `root`.
fn imports_in(root: &Path) -> Vec<Import> {
    let mut out = Vec::new();
    for rel in scanned_files(root) {
        let Ok(code) = std::fs::read_to_string(root.join(&rel)) else {
            continue;
        };
        for target in crate_paths(&code) {
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

fn imports() -> Vec<Import> {
    imports_in(Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// The rule's verdict on one import: `Some(reason)` when it breaks it.
fn breaks_rule(import: &Import) -> Option<String> {
    let from = module_of(&import.file);
    let to = import.target.split("::").next().unwrap_or_default();
    if from == to {
        // Inside a module, one services family may not use another: they
        // share through a domain verb (mini-redis's commands never call
        // each other; they call `Db`).
        let (Some(mine), Some(theirs)) = (
            service_family(&import.file),
            import.target.strip_prefix("services::"),
        ) else {
            return None;
        };
        return (mine != theirs && is_service_family(theirs))
            .then(|| format!("services family `{mine}` uses family `{theirs}`"));
    }
    if from == "client" {
        return (!CLIENT_MAY_USE.contains(&to))
            .then(|| format!("the CLI client may use only {CLIENT_MAY_USE:?}"));
    }
    // The person-facing commands stand on the CLI client (its exit codes, upload).
    if from == "cli" && to == "client" {
        return None;
    }
    let (Some(f), Some(t)) = (rank(&from), rank(to)) else {
        return Some(format!("`{from}` or `{to}` has no rank in RANKS"));
    };
    (t >= f).then(|| format!("rank {f} `{from}` -> rank {t} `{to}` runs up"))
}

/// The `KNOWN_VIOLATIONS` row that excuses `import`, if any.
fn known_row(import: &Import) -> Option<usize> {
    KNOWN_VIOLATIONS.iter().position(|(file, target)| {
        *file == import.file
            && (import.target == *target || import.target.split("::").next() == Some(target))
    })
}

/// What breaks the rule among `all`, as lines naming file, target and why;
/// a row of `KNOWN_VIOLATIONS` that no import needs any more is one too.
fn failures_of(all: &[Import]) -> Vec<String> {
    let mut failures = Vec::new();
    let mut rows_seen = BTreeSet::new();
    for import in all {
        let Some(reason) = breaks_rule(import) else {
            continue;
        };
        match known_row(import) {
            Some(row) => {
                rows_seen.insert(row);
            }
            None => failures.push(format!("{} -> {}: {reason}", import.file, import.target)),
        }
    }
    for (row, (file, target)) in KNOWN_VIOLATIONS.iter().enumerate() {
        if !rows_seen.contains(&row) {
            failures.push(format!(
                "known violation no longer happens, delete its row: ({file:?}, {target:?})"
            ));
        }
    }
    failures
}

#[test]
fn imports_run_one_way() {
    let all = imports();
    assert!(
        all.len() > 100,
        "read too few crate:: paths ({}); is the tree where CARGO_MANIFEST_DIR says?",
        all.len()
    );
    let failures = failures_of(&all);
    assert!(failures.is_empty(), "\n{}\n", failures.join("\n"));
}

/// The files a module file declares with `mod name;` (inline `mod name {`
/// blocks are part of the file), resolved the way rustc does.
fn declared_files(root: &Path, rel: &str) -> Vec<String> {
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

#[test]
fn every_file_mounted_under_layers_and_services_is_scanned() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default();
    let scanned = scanned_files(root);
    let mut mounted = Vec::new();
    for folder in ["layers", "services"] {
        // The one mounting of the folder, in lib.rs; no other `#[path]`.
        let mount = format!("#[path = \"../{folder}/mod.rs\"]\npub mod {folder};");
        assert!(
            lib.contains(&mount),
            "src/lib.rs does not mount {folder}/ as `{mount}`"
        );
        let mut todo = vec![format!("{folder}/mod.rs")];
        while let Some(file) = todo.pop() {
            let code = std::fs::read_to_string(root.join(&file)).unwrap_or_default();
            assert!(
                !code.contains("#[path"),
                "{file}: a `#[path]` inside {folder}/ would hide a file from the rule"
            );
            todo.extend(declared_files(root, &file));
            mounted.push(file);
        }
    }
    assert!(
        mounted.len() > 20,
        "followed too few module files: {mounted:?}"
    );
    let unscanned: Vec<&String> = mounted.iter().filter(|f| !scanned.contains(f)).collect();
    assert!(
        unscanned.is_empty(),
        "mounted but not read by the rule: {unscanned:?}"
    );
    // And the other way: nothing under the folders that the build does not mount.
    let stray: Vec<&String> = scanned
        .iter()
        .filter(|f| f.starts_with("layers/") || f.starts_with("services/"))
        .filter(|f| !mounted.contains(f))
        .collect();
    assert!(stray.is_empty(), "files no `mod` declares: {stray:?}");
}

/// A throwaway tree with these files (relative path, text), removed on drop.
struct Planted(PathBuf);

impl Planted {
    fn new(files: &[(&str, &str)]) -> Self {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("zc-arch-{}-{n}", std::process::id()));
        for (rel, text) in files {
            let path = root.join(rel);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).expect("creating the planted tree");
            }
            std::fs::write(&path, text).expect("writing a planted file");
        }
        Self(root)
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_planted_upward_import_in_a_services_or_layers_file_fails() {
    let tree = Planted::new(&[
        ("src/store/chat.rs", "use crate::config::Config;\n"),
        ("services/mod.rs", "use crate::state::Daemon;\n"),
        (
            "services/session/open.rs",
            "use crate::session::Sessions;\nuse crate::layers::authz::Authz;\n",
        ),
        (
            "layers/trace.rs",
            "fn f() { let _ = crate::gateway::ws::serve; }\n",
        ),
    ]);
    let all = imports_in(&tree.0);
    assert_eq!(all.len(), 5, "{all:?}");
    let failures = failures_of(&all);
    let upward: Vec<&String> = failures
        .iter()
        .filter(|f| !f.starts_with("known violation"))
        .collect();
    assert_eq!(
        upward,
        [
            "layers/trace.rs -> gateway::ws: rank 17 `layers` -> rank 19 `gateway` runs up",
            "services/session/open.rs -> layers::authz: rank 16 `services` -> rank 17 `layers` runs up",
        ],
        "{failures:?}"
    );
}

#[test]
fn every_module_has_a_rank() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default();
    let modules: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';'))
        .collect();
    assert!(!modules.is_empty(), "no `pub mod` read from src/lib.rs");
    let missing: Vec<&&str> = modules
        .iter()
        .filter(|m| **m != "client" && rank(m).is_none())
        .collect();
    assert!(missing.is_empty(), "give these modules a rank: {missing:?}");
}

#[test]
fn the_scanner_reads_groups_and_paths() {
    let code = "use crate::{a::B, c};\n// use crate::zz;\nlet x = crate::d::e::f();\n";
    assert_eq!(crate_paths(code), vec!["a::B", "c", "d::e"]);
}

fn import(file: &str, target: &str) -> Import {
    Import {
        file: file.into(),
        target: target.into(),
    }
}

#[test]
fn an_upward_import_fails_the_rule() {
    assert!(breaks_rule(&import("src/store/chat.rs", "session::Sessions")).is_some());
    assert!(breaks_rule(&import("src/session/mod.rs", "store::Store")).is_none());
    // One services family into another, but not into the router's items.
    assert!(breaks_rule(&import("services/config.rs", "services::pairing")).is_some());
    assert!(breaks_rule(&import("services/config.rs", "services::misrouted")).is_none());
    // The client stands on the endpoint and the wire types only.
    assert!(breaks_rule(&import("src/client.rs", "endpoint::resolve_dirs_from_env")).is_none());
    assert!(breaks_rule(&import("src/client.rs", "state::Daemon")).is_some());
}
