//! Owns the rule for which module may use which (docs/architecture.md,
//! "Which module may use which"): it reads every `crate::…` path in the
//! files under `src/`, `layers/` and `services/` and checks each against
//! the rank table below, so an arrow that runs back up fails `cargo test`
//! instead of waiting for a review. `layers/` and `services/` sit beside
//! `src/` (as the design card draws them) and are mounted with `#[path]`, which hides them from
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
//! crate boundaries; we keep it inside one crate with this test. Inside a
//! module, `circles.rs` forbids a loop between its files.
//!
//! Files: `scan.rs` reads the tree, `rules.rs` holds the ranks and judges an
//! import, `circles.rs` the loops between files of one module, `planted.rs`
//! plants throwaway trees; the tests are here.

use std::path::Path;

mod circles;
mod planted;
mod rules;
mod scan;

use planted::Planted;
use rules::{breaks_rule, failures_of, rank};
use scan::{crate_paths, declared_files, imports, imports_in, scanned_files, Import};

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
fn a_planted_super_super_path_into_another_family_fails() {
    // `super::super::` climbs out of a family folder into the family beside
    // it, which a `crate::` reader alone never sees.
    let tree = Planted::new(&[
        (
            "services/additions/config_list.rs",
            "use super::super::config::X;\nuse super::params::{self, bad};\n",
        ),
        (
            "services/session/read.rs",
            "use super::{payload, session_id};\n",
        ),
        ("services/mod.rs", "use super::state::Daemon;\n"),
    ]);
    let all = imports_in(&tree.0);
    assert!(
        all.contains(&import(
            "services/additions/config_list.rs",
            "services::config"
        )),
        "{all:?}"
    );
    assert_eq!(
        failures_of(&all),
        ["services/additions/config_list.rs -> services::config: \
             services family `additions` uses family `config`"],
        "{all:?}"
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
    let missing: Vec<&&str> = modules.iter().filter(|m| rank(m).is_none()).collect();
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
    assert!(breaks_rule(&import("services/config.rs", "services::Router")).is_none());
    // The client stands on the endpoint and the wire types only.
    assert!(breaks_rule(&import(
        "src/cli/conn.rs",
        "endpoint::resolve_dirs_from_env"
    ))
    .is_none());
    assert!(breaks_rule(&import("src/cli/conn.rs", "state::Daemon")).is_some());
    assert!(breaks_rule(&import("src/cli/one_shot.rs", "cli::conn::Conn")).is_none());
    // The rest of `cli` (chat, doctor) reads config and the store too.
    assert!(breaks_rule(&import("src/cli/doctor/mod.rs", "config::Config")).is_none());
    // Layers sit above the services by rank, yet never use them.
    assert!(breaks_rule(&import("layers/authz.rs", "services::Router")).is_some());
    assert!(breaks_rule(&import("layers/authz.rs", "methods::Method")).is_none());
}

#[test]
fn the_files_of_one_module_import_each_other_in_no_circle() {
    let files = circles::read_files(Path::new(env!("CARGO_MANIFEST_DIR")));
    let arrows = circles::file_arrows(&files);
    assert!(
        arrows.values().map(|to| to.len()).sum::<usize>() > 50,
        "read too few arrows between files: {arrows:?}"
    );
    let loops = circles::circles(&arrows);
    assert!(
        loops.is_empty(),
        "files that use each other in a loop: {loops:?}"
    );
}

#[test]
fn a_planted_circle_between_files_of_one_module_fails() {
    // The loop config/schema.rs <-> config/validate.rs had (parse and
    // validate lived on the schema), a three-file one through `super::`,
    // and what is no loop: children using their parent's face.
    let tree = Planted::new(&[
        (
            "src/config/mod.rs",
            "pub mod schema;\npub mod validate;\npub use schema::Config;\n",
        ),
        (
            "src/config/schema.rs",
            "fn f() { super::validate::validate(); }\n",
        ),
        (
            "src/config/validate.rs",
            "use super::schema::{AgentConfig, Config};\nuse super::Config as C;\n",
        ),
        (
            "src/session/mod.rs",
            "mod a;\nmod b;\nmod c;\npub struct Sessions;\n",
        ),
        (
            "src/session/a.rs",
            "use super::b::B;\nuse super::Sessions;\n",
        ),
        ("src/session/b.rs", "use crate::session::c::C;\n"),
        ("src/session/c.rs", "use super::{a::A, Sessions};\n"),
        ("src/session/c_tests.rs", "use super::a::A;\n"),
        ("services/config.rs", "use crate::session::lifecycle;\n"),
        (
            "services/session/read.rs",
            "use crate::config::Principal;\nuse super::super::config::X;\n",
        ),
    ]);
    let arrows = circles::file_arrows(&circles::read_files(&tree.0));
    assert_eq!(
        circles::circles(&arrows),
        [
            vec!["src/config/schema.rs", "src/config/validate.rs"],
            vec!["src/session/a.rs", "src/session/b.rs", "src/session/c.rs"],
        ],
        "{arrows:?}"
    );
    // `super::super::` from a family folder reaches the family beside it.
    assert!(arrows["services/session/read.rs"].contains("services/config.rs"));
}
