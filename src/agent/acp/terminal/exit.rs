//! A terminal command's exit as ACP's `TerminalExitStatus`
//! (`{exitCode, signal}`): the signal's name on Unix; on Windows there are
//! no signals, a killed command has exit code 1 (what a killed job gives).

use std::process::ExitStatus;

use serde_json::{json, Value};

/// ACP's `TerminalExitStatus`: `{exitCode, signal}`.
#[cfg(unix)]
pub(super) fn exit_status(st: ExitStatus) -> Value {
    use std::os::unix::process::ExitStatusExt;
    let signal = st.signal().map(signal_name);
    json!({"exitCode": st.code(), "signal": signal})
}

/// ACP's `TerminalExitStatus`: `{exitCode, signal}`, the signal always null.
#[cfg(windows)]
pub(super) fn exit_status(st: ExitStatus) -> Value {
    json!({"exitCode": st.code(), "signal": null})
}

#[cfg(unix)]
fn signal_name(n: i32) -> String {
    let name = match n {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        _ => return format!("SIG{n}"),
    };
    name.to_owned()
}
