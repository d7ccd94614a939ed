//! The one method table (§3.5, §6.4): each method's variant, wire
//! name, required access and scope, declared once. The layers consult it before the router, so an unknown
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

/// Where a method is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every transport.
    Any,
    /// Local connections only (`-32012` `local_only` on WebSocket).
    Local,
    /// A connection that stays open for what follows the answer (a turn's
    /// updates and approvals, a log stream): local or WebSocket, not
    /// `POST /rpc` (`-32012` `channel_required`).
    Channel,
    /// Only when the daemon runs with `--test-faults`.
    TestFaults,
}

/// One row of the method table.
#[derive(Debug)]
pub struct MethodSpec {
    /// Which method: what the router matches on, exhaustively.
    pub id: Method,
    /// Wire name.
    pub name: &'static str,
    /// Required access.
    pub access: Access,
    /// Where it is served.
    pub scope: Scope,
}

impl MethodSpec {
    /// Served only on local connections.
    pub fn local_only(&self) -> bool {
        self.scope == Scope::Local
    }

    /// Needs a connection that stays open (not `POST /rpc`).
    pub fn needs_channel(&self) -> bool {
        self.scope == Scope::Channel
    }

    /// Exists only when the daemon runs with `--test-faults`.
    pub fn test_faults_only(&self) -> bool {
        self.scope == Scope::TestFaults
    }
}

const fn g(r: Resource, v: Verb) -> Access {
    Access::Grant(Grant(r, v))
}

/// The one list of methods: each row declares the [`Method`] variant, its
/// wire name, its access and its scope, and becomes one entry of
/// [`METHODS`]. The router matches [`Method`] exhaustively, so a row
/// without a route does not compile.
macro_rules! method_table {
    ($($id:ident = $name:literal, $access:expr, $scope:ident;)*) => {
        /// Every client→daemon method served.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $(#[doc = concat!("`", $name, "`")] $id,)*
        }

        /// Every method's row, in the order of the §6.4 table, then the
        /// protocol additions (docs/protocol-additions.md).
        pub static METHODS: &[MethodSpec] = &[
            $(MethodSpec { id: Method::$id, name: $name, access: $access, scope: Scope::$scope },)*
        ];
    };
}

method_table! {
    Initialize = "initialize", Access::Handshake, Any;
    Status = "status", g(System, Read), Any;
    SessionNew = "session/new", g(Sessions, Create), Any;
    SessionPrompt = "session/prompt", g(Sessions, Execute), Channel;
    SessionCancel = "session/cancel", g(Sessions, Update), Any;
    SessionClose = "session/close", g(Sessions, Update), Any;
    SessionApprove = "session/approve", g(Sessions, Update), Any;
    SessionKill = "session/kill", g(Sessions, Delete), Any;
    SessionDelete = "session/delete", g(Sessions, Delete), Any;
    SessionList = "session/list", g(Sessions, Read), Any;
    SessionListAcp = "session/list-acp", g(Sessions, Read), Any;
    SessionMessages = "session/messages", g(Sessions, Read), Any;
    ConfigGet = "config/get", g(Config, Read), Any;
    ConfigSet = "config/set", g(Config, Update), Any;
    ConfigSetMany = "config/set-many", g(Config, Update), Any;
    FileAttach = "file/attach", g(Files, Create), Any;
    FileUploadBegin = "file/upload/begin", g(Files, Create), Local;
    FileUploadChunk = "file/upload/chunk", g(Files, Create), Local;
    FileUploadCommit = "file/upload/commit", g(Files, Create), Local;
    PairingList = "pairing/list", Access::Admin, Any;
    PairingCreate = "pairing/create", Access::Admin, Any;
    PairingRevoke = "pairing/revoke", Access::Admin, Any;
    // Protocol additions (docs/protocol-additions.md): outside version 1, served the same way.
    ConfigSections = "config/sections", g(Config, Read), Any;
    ConfigTemplates = "config/templates", g(Config, Read), Any;
    ConfigList = "config/list", g(Config, Read), Any;
    ConfigMapKeys = "config/map-keys", g(Config, Read), Any;
    AgentsStatus = "agents/status", g(Sessions, Read), Any;
    SessionGitBranch = "session/git_branch", g(Sessions, Read), Any;
    SessionAttach = "session/attach", g(Sessions, Execute), Channel;
    Health = "health", g(System, Read), Any;
    LogsSubscribe = "logs/subscribe", g(System, Read), Channel;
    LogsQuery = "logs/query", g(System, Read), Any;
    PairingCode = "pairing/code", Access::Admin, Local;
    ConfigReplace = "config/replace", Access::Admin, Local;
    DebugSetFaults = "debug/set-faults", Access::Admin, TestFaults;
}

/// The row for `name`, if the daemon serves it (with `--test-faults` when required).
pub fn lookup(name: &str, test_faults: bool) -> Option<&'static MethodSpec> {
    METHODS
        .iter()
        .find(|m| m.name == name && (test_faults || !m.test_faults_only()))
}

/// The `capabilities` list of `initialize` (§8.1) for a transport: `local`
/// (else no local-only method), `channel` (else no method that needs one).
pub fn capabilities(
    local: bool,
    channel: bool,
    test_faults: bool,
) -> impl Iterator<Item = &'static str> {
    METHODS
        .iter()
        .filter(move |m| {
            (local || !m.local_only())
                && (channel || !m.needs_channel())
                && (test_faults || !m.test_faults_only())
        })
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
        assert!(lookup("debug/set-faults", false).is_none());
        assert!(lookup("debug/set-faults", true).is_some());
    }

    #[test]
    fn every_row_has_its_own_name_and_variant() {
        for (i, a) in METHODS.iter().enumerate() {
            for b in &METHODS[i + 1..] {
                assert_ne!(a.name, b.name);
                assert_ne!(a.id, b.id);
            }
        }
    }
}
