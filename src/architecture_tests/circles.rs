//! No circle between the files of one module. The rank table orders the
//! top-level modules; inside one (`config/`, `session/`, a services family)
//! files may use each other freely, and that is where a loop can still grow
//! (`config/schema.rs` called into `validate.rs`, which used the schema's
//! types). This rule draws an arrow from a file to every file of the same
//! top-level module that one of its `super::…` or `crate::…` paths names,
//! and fails on any loop among them.
//!
//! A path into a module's own face (`super::Sessions`, an item of the
//! parent's `mod.rs`) is no arrow: a `mod.rs` declares its children and
//! hands their names on, and a child using its parent is the idiom, not a
//! loop. Paths are cut to two segments past their root, so a file three
//! folders deep is reached through its parent's face (`crate::a::b::c::d`
//! is seen as `a::b`); `super::` paths, which such files use, are exact.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::scan::{crate_paths, is_test_file, module_path, scanned_files, super_paths};

/// The arrows between files of one top-level module, from `(file, code)`.
pub(super) fn file_arrows(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let by_path: BTreeMap<Vec<String>, &str> = files
        .iter()
        .map(|(f, _)| (module_path(f), f.as_str()))
        .collect();
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, code) in files.iter().filter(|(f, _)| !is_test_file(f)) {
        let me = module_path(file);
        let mut targets: Vec<Vec<String>> = crate_paths(code)
            .iter()
            .map(|p| p.split("::").map(str::to_string).collect())
            .collect();
        for (levels, path) in super_paths(code) {
            // `super` of `a/b.rs` (module `a::b`) is `a`; of `a/mod.rs` (`a`) too.
            let keep = me.len().saturating_sub(levels);
            let mut abs = me[..keep].to_vec();
            abs.extend(path.split("::").map(str::to_string));
            targets.push(abs);
        }
        for target in targets {
            if target.first() != me.first() {
                continue; // another top-level module: the rank table's business
            }
            // The longest prefix of the path that is a file.
            let Some(to) = (1..=target.len())
                .rev()
                .find_map(|n| by_path.get(&target[..n]).map(|f| (n, *f)))
            else {
                continue;
            };
            let (depth, to) = to;
            let is_my_face = me.len() >= depth && me[..depth] == target[..depth];
            if to != file && !is_my_face && !is_test_file(to) {
                arrows
                    .entry(file.clone())
                    .or_default()
                    .insert(to.to_string());
            }
        }
    }
    arrows
}

/// Every loop among `arrows`, each as its files in order from the smallest.
pub(super) fn circles(arrows: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut found = BTreeSet::new();
    for start in arrows.keys() {
        // Depth-first from `start`, only through files greater than it, so
        // each loop is found once, from its smallest file.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, trail)) = stack.pop() {
            for next in arrows.get(&at).into_iter().flatten() {
                if next == start {
                    found.insert(trail.clone());
                } else if next > start && !trail.contains(next) {
                    let mut longer = trail.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    found.into_iter().collect()
}

/// The files of the tree under `root` with their text.
pub(super) fn read_files(root: &Path) -> Vec<(String, String)> {
    scanned_files(root)
        .into_iter()
        .filter_map(|rel| {
            let code = std::fs::read_to_string(root.join(&rel)).ok()?;
            Some((rel, code))
        })
        .collect()
}
