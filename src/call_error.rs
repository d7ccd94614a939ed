//! A JSON-RPC call that got no result, on either side of the daemon: the
//! CLI calling the daemon (`cli::conn`) and the daemon calling an ACP agent
//! process (`agent::acp::host`). It sits in the base tier, importing nothing,
//! because `agent` ranks below the wire vocabulary (`jsonrpc`) and the CLI
//! client may not use `agent`.
//!
//! `E` is how a side keeps the peer's error object: the CLI keeps it whole
//! (a `serde_json::Value`, for `data.reason` and `data.errors`), the ACP host
//! only its code and message. Each side adds its own wording of the error
//! (`message`, `describe`) where it uses it.

/// Why a call did not get its result.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError<E> {
    /// The peer answered with this JSON-RPC error object; the connection is
    /// fine.
    Rpc(E),
    /// The connection is gone or unusable (closed, garbage, a stalled pipe,
    /// a timeout, the process exited): why, in words.
    Lost(String),
}
