//! The `acp` backend (docs/agents.md): the daemon as an Agent
//! Client Protocol client of a hosted agent process (Claude Code, Codex,
//! Gemini CLI, …) over its stdin/stdout, protocol version 1.
//!
//! - [`wire`]: bounded line framing and encoding;
//! - [`incoming`]: what a line says, decoded once (chunks apart);
//! - [`host`]: one agent process, its pipes and requests with deadlines;
//! - [`reader`]: the stdout reader task (chunks joined while the turn is busy);
//! - [`hosts`]: the registry (one process per live session);
//! - [`links`]: where session ↔ agent session links are kept;
//! - [`ready`]: `initialize`, `authenticate`, `session/new` / `session/load`;
//! - [`prompt_turn`]: `session/prompt` and everything until its answer;
//! - [`reason`]: the agent's stderr line quoted in a refusal;
//! - [`prompt`]: the prompt's content blocks (attachments as resource links);
//! - [`mapping`], [`permission`], [`fs`], [`terminal`]: what the agent
//!   sends, served.
//!
//! Framing, dispatch and the few message types are ours, not the official
//! SDK's: docs/decisions.md says precisely why.

mod fs;
mod host;
mod hosts;
mod incoming;
mod links;
mod mapping;
mod permission;
mod prompt;
mod prompt_turn;
mod reader;
mod ready;
mod reason;
mod schema;
mod terminal;
mod wire;

pub use hosts::{AcpHosts, IDLE_GRACE};
pub use links::{Link, LinkStore};
pub use prompt_turn::run;
