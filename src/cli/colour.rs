//! Whether a client colours its output: only on a terminal, and never when
//! `NO_COLOR` is set to anything non-empty (no-color.org). The one rule for
//! the chat and the everyday commands.

/// Colour for a stream that `is_terminal` (or not).
pub fn on(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
