//! The static method table (SPEC §3.5, §6.4): name → required access,
//! local-only flag. The layers consult it before the router, so an unknown
//! method is answered `-32601` even before `initialize`, and the
//! authorization gate never needs to know what a method does.

use crate::config::{Grant, Resource, Resource::*, Verb, Verb::*};

/// What a method requires of the principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `initialize`: the handshake itself.
    Handshake,
    /// Exactly one grant.
    Grant(Grant),
    /// Admin-only methods.
    Admin,
}

/// One row of the method table.
#[derive(Debug)]
pub struct MethodSpec {
    /// Wire name.
    pub name: &'static str,
    /// Required access.
    pub access: Access,
    /// Served only on local connections (`-32012` `local_only` on WebSocket).
    pub local_only: bool,
    /// Exists only when the daemon runs with `--test-faults`.
    pub test_faults_only: bool,
}

const fn m(name: &'static str, access: Access) -> MethodSpec {
    MethodSpec {
        name,
        access,
        local_only: false,
        test_faults_only: false,
    }
}

const fn local(name: &'static str, access: Access) -> MethodSpec {
    MethodSpec {
        name,
        access,
        local_only: true,
        test_faults_only: false,
    }
}

const fn g(r: Resource, v: Verb) -> Access {
    Access::Grant(Grant(r, v))
}

/// Every client→daemon method served, in the order of the §6.4 table.
/// A method joins this table when its service exists.
pub static METHODS: &[MethodSpec] = &[
    m("initialize", Access::Handshake),
    m("status", g(System, Read)),
    m("session/new", g(Sessions, Create)),
    m("session/prompt", g(Sessions, Execute)),
    m("session/cancel", g(Sessions, Update)),
    m("session/close", g(Sessions, Update)),
    m("session/approve", g(Sessions, Update)),
    m("session/kill", g(Sessions, Delete)),
    m("session/delete", g(Sessions, Delete)),
    m("session/list", g(Sessions, Read)),
    m("session/list-acp", g(Sessions, Read)),
    m("session/messages", g(Sessions, Read)),
    m("config/get", g(Config, Read)),
    m("config/set", g(Config, Update)),
    m("config/set-many", g(Config, Update)),
    m("file/attach", g(Files, Create)),
    local("file/upload/begin", g(Files, Create)),
    local("file/upload/chunk", g(Files, Create)),
    local("file/upload/commit", g(Files, Create)),
    m("pairing/list", Access::Admin),
    m("pairing/create", Access::Admin),
    m("pairing/revoke", Access::Admin),
    // Protocol additions (docs/protocol-additions.md): outside version 1, served the same way.
    m("config/sections", g(Config, Read)),
    m("config/templates", g(Config, Read)),
    m("config/list", g(Config, Read)),
    m("config/map-keys", g(Config, Read)),
    m("agents/status", g(Sessions, Read)),
    m("session/git_branch", g(Sessions, Read)),
    m("health", g(System, Read)),
    m("logs/subscribe", g(System, Read)),
    m("logs/query", g(System, Read)),
    MethodSpec {
        name: "debug/set-faults",
        access: Access::Admin,
        local_only: false,
        test_faults_only: true,
    },
];

/// The row for `name`, if the daemon serves it (with `--test-faults` when required).
pub fn lookup(name: &str, test_faults: bool) -> Option<&'static MethodSpec> {
    METHODS
        .iter()
        .find(|m| m.name == name && (test_faults || !m.test_faults_only))
}

/// The `capabilities` list of `initialize` (§8.1) for a transport.
pub fn capabilities(local: bool, test_faults: bool) -> impl Iterator<Item = &'static str> {
    METHODS
        .iter()
        .filter(move |m| (local || !m.local_only) && (test_faults || !m.test_faults_only))
        .map(|m| m.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_served_methods_only() {
        assert_eq!(lookup("status", false).map(|m| m.name), Some("status"));
        assert!(lookup("nope", true).is_none());
        assert!(lookup("Status", false).is_none());
    }
}
