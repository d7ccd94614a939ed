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

/// The one list of methods: each row declares the method's place (its
/// family's variant of [`Method`] and its own variant of the family's
/// sub-enum), its wire name, its access and its scope, and becomes one entry
/// of [`METHODS`]. The rows are munched into one sub-enum per services family
/// (`services/`), so the router matches the family and each family matches
/// its own sub-enum, both exhaustively: a row without a route, or a method
/// routed to another family, does not compile.
macro_rules! method_table {
    ($($family:ident($sub:ident::$id:ident) = $name:literal, $access:expr, $scope:ident;)*) => {
        /// Every client→daemon method served, by the services family that serves it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            /// `initialize` (services/initialize.rs).
            Initialize(InitializeMethod),
            /// `status` (services/status.rs).
            Status(StatusMethod),
            /// `config/*` (services/config.rs).
            Config(ConfigMethod),
            /// `pairing/*` (services/pairing.rs).
            Pairing(PairingMethod),
            /// `session/*` (services/session/).
            Session(SessionMethod),
            /// `debug/*` (services/debug.rs).
            Debug(DebugMethod),
            /// `file/*` (services/file.rs).
            File(FileMethod),
            /// The protocol additions (services/additions/).
            Additions(AdditionsMethod),
        }

        /// Every method's row, in the order of the §6.4 table, then the
        /// protocol additions (docs/protocol-additions.md).
        pub static METHODS: &[MethodSpec] = &[
            $(MethodSpec { id: Method::$family($sub::$id), name: $name, access: $access, scope: Scope::$scope },)*
        ];

        method_table!(@munch [$($family $id $name;)*]
            [] [] [] [] [] [] [] []);
    };
    // Sorts each row's variant into its family's list, keeping table order.
    (@munch [Initialize $id:ident $name:tt; $($rest:tt)*]
        [$($i:tt)*] $st:tt $c:tt $p:tt $se:tt $d:tt $f:tt $a:tt) => {
        method_table!(@munch [$($rest)*] [$($i)* $id $name;] $st $c $p $se $d $f $a);
    };
    (@munch [Status $id:ident $name:tt; $($rest:tt)*]
        $i:tt [$($st:tt)*] $c:tt $p:tt $se:tt $d:tt $f:tt $a:tt) => {
        method_table!(@munch [$($rest)*] $i [$($st)* $id $name;] $c $p $se $d $f $a);
    };
    (@munch [Config $id:ident $name:tt; $($rest:tt)*]
        $i:tt $st:tt [$($c:tt)*] $p:tt $se:tt $d:tt $f:tt $a:tt) => {
        method_table!(@munch [$($rest)*] $i $st [$($c)* $id $name;] $p $se $d $f $a);
    };
    (@munch [Pairing $id:ident $name:tt; $($rest:tt)*]
        $i:tt $st:tt $c:tt [$($p:tt)*] $se:tt $d:tt $f:tt $a:tt) => {
        method_table!(@munch [$($rest)*] $i $st $c [$($p)* $id $name;] $se $d $f $a);
    };
    (@munch [Session $id:ident $name:tt; $($rest:tt)*]
        $i:tt $st:tt $c:tt $p:tt [$($se:tt)*] $d:tt $f:tt $a:tt) => {
        method_table!(@munch [$($rest)*] $i $st $c $p [$($se)* $id $name;] $d $f $a);
    };
    (@munch [Debug $id:ident $name:tt; $($rest:tt)*]
        $i:tt $st:tt $c:tt $p:tt $se:tt [$($d:tt)*] $f:tt $a:tt) => {
        method_table!(@munch [$($rest)*] $i $st $c $p $se [$($d)* $id $name;] $f $a);
    };
    (@munch [File $id:ident $name:tt; $($rest:tt)*]
        $i:tt $st:tt $c:tt $p:tt $se:tt $d:tt [$($f:tt)*] $a:tt) => {
        method_table!(@munch [$($rest)*] $i $st $c $p $se $d [$($f)* $id $name;] $a);
    };
    (@munch [Additions $id:ident $name:tt; $($rest:tt)*]
        $i:tt $st:tt $c:tt $p:tt $se:tt $d:tt $f:tt [$($a:tt)*]) => {
        method_table!(@munch [$($rest)*] $i $st $c $p $se $d $f [$($a)* $id $name;]);
    };
    (@munch [] $i:tt $st:tt $c:tt $p:tt $se:tt $d:tt $f:tt $a:tt) => {
        method_table!(@sub InitializeMethod $i);
        method_table!(@sub StatusMethod $st);
        method_table!(@sub ConfigMethod $c);
        method_table!(@sub PairingMethod $p);
        method_table!(@sub SessionMethod $se);
        method_table!(@sub DebugMethod $d);
        method_table!(@sub FileMethod $f);
        method_table!(@sub AdditionsMethod $a);
    };
    (@sub $sub:ident [$($id:ident $name:tt;)*]) => {
        #[doc = concat!("The methods of one services family (", stringify!($sub), ").")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $sub {
            $(#[doc = concat!("`", $name, "`")] $id,)*
        }
    };
}

method_table! {
    Initialize(InitializeMethod::Initialize) = "initialize", Access::Handshake, Any;
    Status(StatusMethod::Status) = "status", g(System, Read), Any;
    Session(SessionMethod::New) = "session/new", g(Sessions, Create), Any;
    Session(SessionMethod::Prompt) = "session/prompt", g(Sessions, Execute), Channel;
    Session(SessionMethod::Cancel) = "session/cancel", g(Sessions, Update), Any;
    Session(SessionMethod::Close) = "session/close", g(Sessions, Update), Any;
    Session(SessionMethod::Approve) = "session/approve", g(Sessions, Update), Any;
    Session(SessionMethod::Kill) = "session/kill", g(Sessions, Delete), Any;
    Session(SessionMethod::Delete) = "session/delete", g(Sessions, Delete), Any;
    Session(SessionMethod::List) = "session/list", g(Sessions, Read), Any;
    Session(SessionMethod::ListAcp) = "session/list-acp", g(Sessions, Read), Any;
    Session(SessionMethod::Messages) = "session/messages", g(Sessions, Read), Any;
    Config(ConfigMethod::Get) = "config/get", g(Config, Read), Any;
    Config(ConfigMethod::Set) = "config/set", g(Config, Update), Any;
    Config(ConfigMethod::SetMany) = "config/set-many", g(Config, Update), Any;
    File(FileMethod::Attach) = "file/attach", g(Files, Create), Any;
    File(FileMethod::UploadBegin) = "file/upload/begin", g(Files, Create), Local;
    File(FileMethod::UploadChunk) = "file/upload/chunk", g(Files, Create), Local;
    File(FileMethod::UploadCommit) = "file/upload/commit", g(Files, Create), Local;
    Pairing(PairingMethod::List) = "pairing/list", Access::Admin, Any;
    Pairing(PairingMethod::Create) = "pairing/create", Access::Admin, Any;
    Pairing(PairingMethod::Revoke) = "pairing/revoke", Access::Admin, Any;
    // Protocol additions (docs/protocol-additions.md): outside version 1, served the same way.
    Additions(AdditionsMethod::ConfigSections) = "config/sections", g(Config, Read), Any;
    Additions(AdditionsMethod::ConfigTemplates) = "config/templates", g(Config, Read), Any;
    Additions(AdditionsMethod::ConfigList) = "config/list", g(Config, Read), Any;
    Additions(AdditionsMethod::ConfigMapKeys) = "config/map-keys", g(Config, Read), Any;
    Additions(AdditionsMethod::AgentsStatus) = "agents/status", g(Sessions, Read), Any;
    Additions(AdditionsMethod::SessionGitBranch) = "session/git_branch", g(Sessions, Read), Any;
    Session(SessionMethod::Attach) = "session/attach", g(Sessions, Execute), Channel;
    Additions(AdditionsMethod::Health) = "health", g(System, Read), Any;
    Additions(AdditionsMethod::LogsSubscribe) = "logs/subscribe", g(System, Read), Channel;
    Additions(AdditionsMethod::LogsQuery) = "logs/query", g(System, Read), Any;
    Pairing(PairingMethod::Code) = "pairing/code", Access::Admin, Local;
    Config(ConfigMethod::Replace) = "config/replace", Access::Admin, Local;
    Debug(DebugMethod::SetFaults) = "debug/set-faults", Access::Admin, TestFaults;
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
