//! How a client command ends: its exit statuses (§13), shared by every
//! command a person types, and the failure that carries one.

/// The daemon answered a result.
pub const OK: i32 = 0;
/// The daemon answered an error, or `--timeout` expired.
pub const RPC_ERROR: i32 = 1;
/// Bad command line.
pub const USAGE: i32 = 2;
/// No daemon at the resolved endpoint.
pub const NO_DAEMON: i32 = 3;

/// A failure that ends the command, with its exit status.
#[derive(Debug)]
pub struct CommandFailure {
    pub status: i32,
    pub message: String,
}

impl CommandFailure {
    pub fn new(status: i32, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
}
