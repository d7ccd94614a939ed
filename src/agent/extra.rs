//! The extra `session/update` types (docs/protocol-additions.md): ACP
//! updates without a §8.5 counterpart, forwarded as they came.
//!
//! Each kind has a fixed list of members, taken from the ACP update under
//! the same names; their values are kept as raw JSON, so the snake dialect
//! renames the member names only, never what the agent wrote inside them.
//! Clients ignore types they do not know (§8.5), so no opt-in.

use serde_json::value::RawValue;

/// Longest JSON text of one extra update's members together: far under the
/// frame limit (§3.1) with room for the envelope. Larger ones are
/// dropped with a log line (an agent's plan or command list is kilobytes).
pub const MAX_EXTRA_BYTES: usize = 1024 * 1024;

/// Which extra update (our `type`; the ACP `sessionUpdate` it comes from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraKind {
    /// ACP `plan`: the agent's whole current plan.
    Plan,
    /// ACP `available_commands_update`.
    AvailableCommands,
    /// ACP `current_mode_update`.
    CurrentMode,
    /// ACP `usage_update`: context window use and cost.
    Usage,
    /// ACP `config_option_update`.
    ConfigOptions,
    /// ACP `session_info_update`: title and last update time.
    SessionInfo,
    /// The daemon's own: an approval request of a session with
    /// attached clients was resolved (answered, timed out, unreachable).
    ApprovalResolved,
    /// The daemon's own: the question of a session with attached
    /// clients was answered by one of them (or became unavailable).
    ElicitationResolved,
}

impl ExtraKind {
    /// The kind of an ACP `sessionUpdate`, when it is one of ours.
    pub fn of_acp(session_update: &str) -> Option<Self> {
        Some(match session_update {
            "plan" => Self::Plan,
            "available_commands_update" => Self::AvailableCommands,
            "current_mode_update" => Self::CurrentMode,
            "usage_update" => Self::Usage,
            "config_option_update" => Self::ConfigOptions,
            "session_info_update" => Self::SessionInfo,
            _ => return None,
        })
    }

    /// The ACP `sessionUpdate` an extra type came from (`None` for the
    /// daemon's own kinds), for clients that speak ACP again (`zeroclaw acp`).
    pub fn acp_name(self) -> Option<&'static str> {
        Some(match self {
            Self::Plan => "plan",
            Self::AvailableCommands => "available_commands_update",
            Self::CurrentMode => "current_mode_update",
            Self::Usage => "usage_update",
            Self::ConfigOptions => "config_option_update",
            Self::SessionInfo => "session_info_update",
            Self::ApprovalResolved | Self::ElicitationResolved => return None,
        })
    }

    /// The kind of our `session/update` `type`, when it is an extra one.
    pub fn of_type(kind: &str) -> Option<Self> {
        const ALL: [ExtraKind; 8] = [
            ExtraKind::Plan,
            ExtraKind::AvailableCommands,
            ExtraKind::CurrentMode,
            ExtraKind::Usage,
            ExtraKind::ConfigOptions,
            ExtraKind::SessionInfo,
            ExtraKind::ApprovalResolved,
            ExtraKind::ElicitationResolved,
        ];
        ALL.into_iter().find(|k| k.as_str() == kind)
    }

    /// Our `session/update` `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::AvailableCommands => "available_commands",
            Self::CurrentMode => "current_mode",
            Self::Usage => "usage",
            Self::ConfigOptions => "config_options",
            Self::SessionInfo => "session_info",
            Self::ApprovalResolved => "approval_resolved",
            Self::ElicitationResolved => "elicitation_resolved",
        }
    }

    /// The members forwarded, in the order written (camelCase, as ACP).
    pub fn members(self) -> &'static [&'static str] {
        match self {
            Self::Plan => &["entries"],
            Self::AvailableCommands => &["availableCommands"],
            Self::CurrentMode => &["currentModeId"],
            Self::Usage => &["used", "size", "cost"],
            Self::ConfigOptions => &["configOptions"],
            Self::SessionInfo => &["title", "updatedAt"],
            Self::ApprovalResolved => &["requestId", "decision"],
            Self::ElicitationResolved => &["action"],
        }
    }
}

/// One extra update: its kind and the members the agent sent (absent ones
/// are left out), values as raw JSON.
#[derive(Debug, Clone)]
pub struct Extra {
    pub kind: ExtraKind,
    pub members: Vec<(&'static str, Box<RawValue>)>,
}

impl Extra {
    /// Bytes of the members' JSON text.
    pub fn json_len(&self) -> usize {
        self.members
            .iter()
            .map(|(k, v)| k.len() + v.get().len())
            .sum()
    }
}
