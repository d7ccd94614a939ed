//! One accepted (or client) connection: the stream type, its split into an
//! owned read half and write half for the connection's reader and writer
//! tasks, the client-side `connect`, and the peer label of §2.5.
//!
//! interprocess 2.4.7 deprecated its own `split()` in favour of sharing the
//! stream, since `&Stream` implements `AsyncRead` and `AsyncWrite`; the halves
//! here do exactly that over an `Arc`. Unlike interprocess, shutting down the
//! write half really half-closes a Unix socket (`shutdown(SHUT_WR)`), so the
//! peer sees end of stream while the read half keeps reading.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use interprocess::local_socket::tokio::prelude::*;
use interprocess::local_socket::GenericFilePath;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::EndpointName;

/// A connected local stream (Unix domain socket or named pipe).
pub type LocalStream = interprocess::local_socket::tokio::Stream;

/// Who is at the other end of an accepted connection (§2.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The peer's effective uid; `None` on Windows or when the query failed.
    pub uid: Option<u32>,
    /// The peer's pid, when the platform gives one.
    pub pid: Option<u32>,
    /// `unix:pid=<pid>,uid=<uid>`, `unix:unknown`, `pipe:local`, or a gateway peer's.
    pub label: String,
}

impl PeerInfo {
    /// Builds the label of a Unix peer; `pid=0` where the platform gives no pid.
    pub fn unix(uid: u32, pid: Option<u32>) -> Self {
        PeerInfo {
            uid: Some(uid),
            pid,
            label: format!("unix:pid={},uid={uid}", pid.unwrap_or(0)),
        }
    }

    /// A Unix peer whose credentials could not be read.
    pub fn unix_unknown() -> Self {
        PeerInfo {
            uid: None,
            pid: None,
            label: "unix:unknown".to_owned(),
        }
    }

    /// A gateway client (`wss:<ip>:<port>`, `http:<ip>:<port>`): no uid, no pid.
    pub fn remote(label: String) -> Self {
        PeerInfo {
            uid: None,
            pid: None,
            label,
        }
    }

    /// A named-pipe client; Windows gives no uid.
    pub fn pipe(pid: Option<u32>) -> Self {
        PeerInfo {
            uid: None,
            pid,
            label: "pipe:local".to_owned(),
        }
    }

    /// Reads the peer credentials of an accepted stream.
    pub fn of(stream: &LocalStream) -> Self {
        let creds = stream.peer_creds();
        #[cfg(unix)]
        {
            match creds {
                Ok(creds) => match creds.euid() {
                    Some(uid) => {
                        let pid = creds
                            .pid()
                            .and_then(|p| u32::try_from(p).ok())
                            .filter(|p| *p != 0);
                        PeerInfo::unix(uid, pid)
                    }
                    None => PeerInfo::unix_unknown(),
                },
                Err(_) => PeerInfo::unix_unknown(),
            }
        }
        #[cfg(windows)]
        {
            PeerInfo::pipe(creds.ok().and_then(|c| c.pid()))
        }
    }
}

/// Connects to a daemon's endpoint (what `zeroclaw rpc`, `status` and
/// `upload` use).
pub async fn connect(endpoint: &EndpointName) -> io::Result<LocalStream> {
    let name = match endpoint {
        #[cfg(unix)]
        EndpointName::Path(path) => path.as_path().to_fs_name::<GenericFilePath>()?,
        #[cfg(windows)]
        EndpointName::Pipe(pipe) => pipe.as_str().to_fs_name::<GenericFilePath>()?,
    };
    LocalStream::connect(name).await
}

/// The reading half of a [`LocalStream`], for the connection's reader task.
#[derive(Debug)]
pub struct LocalReadHalf(Arc<LocalStream>);

/// The writing half of a [`LocalStream`], for the connection's writer task.
/// The connection closes when both halves are dropped.
#[derive(Debug)]
pub struct LocalWriteHalf(Arc<LocalStream>);

/// The tokio Unix stream inside an accepted local stream (Unix only: the
/// local socket is always a Unix domain socket there).
#[cfg(unix)]
pub fn into_unix(stream: LocalStream) -> tokio::net::UnixStream {
    match stream {
        LocalStream::UdSocket(s) => s.into(),
    }
}

/// Splits a stream into halves that can move to different tasks.
pub fn split(stream: LocalStream) -> (LocalReadHalf, LocalWriteHalf) {
    let shared = Arc::new(stream);
    (LocalReadHalf(Arc::clone(&shared)), LocalWriteHalf(shared))
}

impl AsyncRead for LocalReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut stream: &LocalStream = &self.0;
        Pin::new(&mut stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for LocalWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut stream: &LocalStream = &self.0;
        Pin::new(&mut stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut stream: &LocalStream = &self.0;
        Pin::new(&mut stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut stream: &LocalStream = &self.0;
        match Pin::new(&mut stream).poll_flush(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(half_close(stream)),
            other => other,
        }
    }
}

/// Half-closes the sending direction so the peer reads end of stream.
#[cfg(unix)]
fn half_close(stream: &LocalStream) -> io::Result<()> {
    use std::os::fd::{AsFd, AsRawFd};
    let LocalStream::UdSocket(socket) = stream;
    // SAFETY: the descriptor is borrowed from a live stream for this call only;
    // shutdown neither closes nor invalidates it.
    let rc = unsafe { libc::shutdown(socket.as_fd().as_raw_fd(), libc::SHUT_WR) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    // The peer is already gone: the half-close has nothing left to do.
    if err.raw_os_error() == Some(libc::ENOTCONN) {
        Ok(())
    } else {
        Err(err)
    }
}

/// Named pipes have no half-close; the pipe closes when both halves drop.
#[cfg(windows)]
fn half_close(_stream: &LocalStream) -> io::Result<()> {
    Ok(())
}
