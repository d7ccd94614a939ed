//! The vocabulary of grants (§6.3): resources, verbs, a grant and a set of
//! them. Its own file because validation checks grant strings against it
//! while the policy is built from a validated config: with the words inside
//! `policy.rs`, `policy -> schema -> validate -> policy` ran in a circle.

use std::fmt;

/// A resource of §6.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// `system`.
    System,
    /// `sessions`.
    Sessions,
    /// `config`.
    Config,
    /// `files`.
    Files,
}

/// A verb of §6.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verb {
    /// `create`.
    Create,
    /// `read`.
    Read,
    /// `update`.
    Update,
    /// `delete`.
    Delete,
    /// `execute`.
    Execute,
}

pub(super) const RESOURCES: [(Resource, &str); 4] = [
    (Resource::System, "system"),
    (Resource::Sessions, "sessions"),
    (Resource::Config, "config"),
    (Resource::Files, "files"),
];
pub(super) const VERBS: [(Verb, &str); 5] = [
    (Verb::Create, "create"),
    (Verb::Read, "read"),
    (Verb::Update, "update"),
    (Verb::Delete, "delete"),
    (Verb::Execute, "execute"),
];

impl Resource {
    /// Parses the config spelling (lowercase, exact).
    pub fn parse(s: &str) -> Option<Resource> {
        RESOURCES.iter().find(|(_, n)| *n == s).map(|(r, _)| *r)
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        RESOURCES[self as usize].1
    }
}

impl Verb {
    /// Parses the config spelling (lowercase, exact).
    pub fn parse(s: &str) -> Option<Verb> {
        VERBS.iter().find(|(_, n)| *n == s).map(|(v, _)| *v)
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        VERBS[self as usize].1
    }
}

/// A `resource:verb` grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grant(pub Resource, pub Verb);

impl Grant {
    fn bit(self) -> u32 {
        1 << (self.0 as u32 * VERBS.len() as u32 + self.1 as u32)
    }
}

impl fmt::Display for Grant {
    /// `resource:verb`, as in the `required` member of `missing_grant` errors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.0.as_str(), self.1.as_str())
    }
}

/// A set of grants (20 bits).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GrantSet(u32);

impl GrantSet {
    /// Every grant.
    pub fn all() -> GrantSet {
        GrantSet((1 << (RESOURCES.len() * VERBS.len())) - 1)
    }

    /// Adds a grant.
    pub fn insert(&mut self, grant: Grant) {
        self.0 |= grant.bit();
    }

    /// Whether the set holds `grant`.
    pub fn contains(self, grant: Grant) -> bool {
        self.0 & grant.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}
