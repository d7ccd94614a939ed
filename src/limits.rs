//! The numeric limits of protocol version 1 (§4), in one place.

use std::time::Duration;

/// Largest frame in either direction, every byte before the `\n`.
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;
/// Requests (and notifications being processed) in flight per connection.
pub const MAX_IN_FLIGHT_REQUESTS: usize = 64;
/// Bytes of the frames of the requests in flight per connection.
pub const MAX_IN_FLIGHT_BYTES: usize = 64 * 1024 * 1024;
/// Daemon→client requests awaiting an answer per connection.
pub const MAX_PENDING_PEER_REQUESTS: usize = 16;
/// Frames queued for writing per connection.
pub const WRITE_QUEUE_FRAMES: usize = 64;
/// Bytes queued for writing per connection.
pub const WRITE_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// How long producers may wait on a full write queue before the connection is closed.
pub const WRITE_STALL: Duration = Duration::from_secs(30);
/// Concurrent local connections.
pub const MAX_CONNECTIONS: usize = 256;
/// Decoded bytes of one upload chunk.
pub const UPLOAD_CHUNK_BYTES: usize = 1024 * 1024;
/// Largest file, attached or uploaded.
pub const UPLOAD_MAX_BYTES: usize = 10 * 1024 * 1024;
/// Staged uploads per connection.
pub const MAX_STAGED_UPLOADS: usize = 4;
/// Backoff after a transient `accept` error (§2.6).
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Ephemeral mode: how long the daemon waits after the last client left.
pub const EPHEMERAL_GRACE: Duration = Duration::from_secs(1);
/// How long a graceful shutdown waits for running turns.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Longest id (its JSON text) a request may carry: a longer one could not be
/// echoed within [`MAX_FRAME_BYTES`], so the request is invalid (docs/decisions.md).
pub const MAX_ID_BYTES: usize = 4096;
/// Longest peer-supplied name (a method) echoed in an error message.
pub const MAX_ECHOED_NAME_BYTES: usize = 256;
/// Longest error `message` written; longer ones (an agent's failure text) are bounded.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 64 * 1024;
/// Longest peer-supplied `error.data` member written.
pub const MAX_ERROR_DATA_MEMBER_BYTES: usize = 1024;
/// Tool outputs are persisted bounded at this many bytes (§9.3).
pub const TOOL_OUTPUT_MAX: usize = 16 * 1024;

/// Digits of the gateway's one-time pairing code: a space of 10^12, which
/// no guesser walks even where every limiter leaked (docs/security.md).
pub const PAIRING_CODE_DIGITS: usize = 12;
/// How long a pairing code may be redeemed after it was issued.
pub const PAIRING_CODE_TTL: Duration = Duration::from_secs(10 * 60);
/// Wrong guesses, from all sources together, that burn the open code.
pub const PAIRING_CODE_MAX_GUESSES: u32 = 5;

/// The default daemon-wide memory budget (`daemon.memory_budget_mib`,
/// src/memory.rs): 1 GiB.
pub const DEFAULT_BUDGET_MIB: u32 = 1024;
/// The budgets `daemon.memory_budget_mib` and `ZEROCLAW_MEMORY_BUDGET_MIB`
/// accept, in MiB (1 MiB to 1 TiB).
pub const BUDGET_MIB_RANGE: std::ops::RangeInclusive<u32> = 1..=1024 * 1024;
/// What a budget outside [`BUDGET_MIB_RANGE`] is told.
pub const BUDGET_MIB_RULE: &str = "must be 1-1048576 (MiB)";

/// Largest `config.toml` the daemon reads (at start, at a hot reload, before a commit): a
/// hand-written config is a few KiB; anything near this is not one (a link to a log, to
/// `/dev/zero`), and is refused with "is larger than … bytes" instead of being read whole.
pub const MAX_CONFIG_FILE_BYTES: u64 = 4 * 1024 * 1024;
