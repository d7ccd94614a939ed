//! Claiming the endpoint on Windows (§2.4): the data-dir lock with
//! `LockFileEx`, then the first instance of the named pipe.
//!
//! A pipe name cannot go stale the way a socket file can: it disappears with
//! its last handle. So there is nothing to probe or unlink. Creating the first
//! instance with `FILE_FLAG_FIRST_PIPE_INSTANCE` (interprocess does this for
//! the first instance of a local-socket listener) fails when any process
//! already serves the name, which is exactly "a live daemon owns it". The pipe
//! rejects remote clients (interprocess sets `PIPE_REJECT_REMOTE_CLIENTS`
//! unless told otherwise), and its DACL is set explicitly: the default DACL of
//! a named pipe also grants read access to Everyone and Anonymous, which the
//! spec does not allow. interprocess creates the next pending instance after
//! each accepted client.
//!
//! This file is compiled only on Windows; it was written against the
//! interprocess 2.4.7 sources but not compiled on a Windows target here.

use std::fs::File;
use std::io;
use std::path::Path;

use interprocess::local_socket::tokio::{prelude::*, Listener};
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use interprocess::os::windows::local_socket::ListenerOptionsExt;
use interprocess::os::windows::security_descriptor::SecurityDescriptor;

use super::lock;
use super::{ClaimOptions, EndpointError, EndpointName, LocalStream, PeerInfo, Served};

/// Full access for SYSTEM and for the pipe's owner (the creating user), no
/// one else; `P` keeps inheritable ACEs out.
const PIPE_SDDL: &str = "D:P(A;;GA;;;SY)(A;;GA;;;OW)";

/// `ERROR_ACCESS_DENIED`: what `CreateNamedPipeW` returns when
/// `FILE_FLAG_FIRST_PIPE_INSTANCE` is set and the name already exists.
const ERROR_ACCESS_DENIED: i32 = 5;
/// `ERROR_PIPE_BUSY`: every instance of an existing pipe is in use.
const ERROR_PIPE_BUSY: i32 = 231;

/// A claimed, listening pipe. Dropping it (or [`Claimed::release`]) closes the
/// pipe; the data-dir lock stays held until the process exits.
#[derive(Debug)]
pub struct Claimed {
    listener: Listener,
    pipe: String,
    /// `None` only after [`Claimed::release_all`] took it.
    data_lock: Option<File>,
}

impl Claimed {
    /// Accepts the next client; its label is `pipe:local` (§2.5).
    pub async fn accept(&self) -> io::Result<(LocalStream, PeerInfo)> {
        let stream = self.listener.accept().await?;
        let peer = PeerInfo::of(&stream);
        Ok((stream, peer))
    }

    /// The pipe name, for the ready line and logs.
    pub fn endpoint_display(&self) -> String {
        self.pipe.clone()
    }

    /// Stops listening; the pipe name disappears with its last instance.
    pub fn release(self) {
        drop(self);
    }

    /// Like [`release`](Self::release), and then also drops the data-dir
    /// lock. For in-process restarts and tests only: the daemon itself keeps
    /// the data-dir lock until it exits (§2.3 step 1a).
    pub fn release_all(mut self) {
        let data_lock = self.data_lock.take();
        drop(self);
        drop(data_lock);
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        // Held until exit: leaking the handle keeps the lock.
        if let Some(data_lock) = self.data_lock.take() {
            std::mem::forget(data_lock);
        }
    }
}

/// Takes the data-dir lock, then creates the first pipe instance (§2.4).
/// `opts.socket_group` has no meaning for pipes and is ignored.
pub async fn claim(
    data_dir: &Path,
    endpoint: &EndpointName,
    opts: &ClaimOptions,
) -> Result<Claimed, EndpointError> {
    let _ = opts;
    let EndpointName::Pipe(pipe) = endpoint;
    super::dirs::create_missing(data_dir, None)?;
    let data_lock = lock::acquire(&data_dir.join("daemon.lock"), || {
        EndpointError::AlreadyServed(Served::DataDir(data_dir.to_path_buf()))
    })?;

    let context = || format!("creating named pipe `{pipe}`");
    let name = pipe
        .as_str()
        .to_fs_name::<GenericFilePath>()
        .map_err(|e| EndpointError::io(context(), e))?;
    let sddl = widestring::U16CString::from_str_truncate(PIPE_SDDL);
    let descriptor =
        SecurityDescriptor::deserialize(&sddl).map_err(|e| EndpointError::io(context(), e))?;
    let listener = ListenerOptions::new()
        .name(name)
        .security_descriptor(descriptor)
        .create_tokio()
        .map_err(|e| match e.raw_os_error() {
            Some(ERROR_ACCESS_DENIED | ERROR_PIPE_BUSY) => {
                EndpointError::AlreadyServed(Served::Serving(pipe.clone()))
            }
            _ => EndpointError::io(context(), e),
        })?;

    Ok(Claimed {
        listener,
        pipe: pipe.clone(),
        data_lock: Some(data_lock),
    })
}
