//! The rank table and its verdict: which top-level module may use which
//! (docs/architecture.md, "Which module may use which"). Reading the tree
//! is `scan.rs`'s job; this file only judges one import at a time.

use std::collections::BTreeSet;
use std::path::Path;

use super::scan::Import;

/// Top-level module → rank; a module may use only modules of a lower rank.
/// Grouped by tier (see docs/architecture.md):
/// entry > transport > layers > services > domain > vocabulary > backends > base.
pub(super) const RANKS: &[(&str, u32)] = &[
    // base: constants and helpers with no crate imports
    ("limits", 0),
    ("bounded", 0),
    ("bounded_file", 0),
    ("call_error", 0),
    ("hex", 0),
    ("shown", 0),
    ("private_dir", 0),
    ("dialect", 0),
    ("storage_fault", 0),
    ("faults", 0),
    ("systemd", 0),
    ("confine", 0),
    // backends: configuration, the memory budget, agent processes,
    // persistence, logging
    ("endpoint", 1),
    ("memory", 1),
    ("config", 1),
    ("agent", 2),
    ("store", 3),
    ("logging", 4),
    // vocabulary: errors, wire frames, method table, write queues
    ("error", 5),
    ("codec", 6),
    ("methods", 6),
    ("jsonrpc", 7),
    ("outbound", 7),
    ("peer", 8),
    // domain: who is calling, sessions, files, the daemon's handles
    ("authz", 9),
    // A request carries its place in its connection's bound, and a
    // responder its connection: the request stands on the connection.
    ("conn_state", 10),
    ("request", 11),
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

/// The CLI's client-side peer and the one-shot commands on it stand on the
/// endpoint and the wire types, never on the daemon: outside `cli` they may
/// use only these modules, whatever their rank.
const CLIENT_MAY_USE: &[&str] = &[
    "endpoint",
    "codec",
    "jsonrpc",
    "call_error",
    "limits",
    "dialect",
    "hex",
    "shown",
];

/// The files [`CLIENT_MAY_USE`] binds.
const CLIENT_FILES: &[&str] = &[
    "src/cli/conn.rs",
    "src/cli/answers.rs",
    "src/cli/exit.rs",
    "src/cli/field.rs",
    "src/cli/one_shot.rs",
    "src/cli/file_upload.rs",
];

/// Arrows that still run the wrong way, as `(file, module)`. Each row is a
/// debt to pay back; the list may only shrink.
pub(super) const KNOWN_VIOLATIONS: &[(&str, &str)] = &[];

pub(super) fn rank(module: &str) -> Option<u32> {
    RANKS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// The top-level module a file belongs to (`src/session/turn.rs` → `session`).
pub(super) fn module_of(file: &str) -> String {
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

/// The rule's verdict on one import: `Some(reason)` when it breaks it.
pub(super) fn breaks_rule(import: &Import) -> Option<String> {
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
    if CLIENT_FILES.contains(&import.file.as_str()) {
        return (!CLIENT_MAY_USE.contains(&to))
            .then(|| format!("the CLI client may use only {CLIENT_MAY_USE:?}"));
    }
    // The router is plugged in beneath the layers by `connection`; a layer
    // that named a service would know what a method does.
    if from == "layers" && to == "services" {
        return Some("a layer never uses a service: the connection plugs the router in".into());
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
pub(super) fn failures_of(all: &[Import]) -> Vec<String> {
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
