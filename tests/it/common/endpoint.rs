//! The harness's side of the local endpoint: a connected [`Stream`] to the
//! daemon, a Unix socket on Unix and a named pipe on Windows, with the same
//! blocking surface (`Read`, `Write`, read and write timeouts, `try_clone`)
//! so that the clients above it are written once.
//!
//! The daemon's ready line names the endpoint (`<data>/daemon.sock`, or
//! `\\.\pipe\zeroclaw-<hash>`); the harness carries it as a `Path` either way.

#[cfg(windows)]
pub use pipe::Stream;
#[cfg(unix)]
pub use std::os::unix::net::UnixStream as Stream;

use std::io;
use std::path::Path;

/// Connects to the endpoint `name` (a socket path or a pipe name).
#[cfg(unix)]
pub fn connect(name: &Path) -> io::Result<Stream> {
    Stream::connect(name)
}

/// Connects to the endpoint `name` (a socket path or a pipe name).
#[cfg(windows)]
pub fn connect(name: &Path) -> io::Result<Stream> {
    pipe::Stream::connect(name.as_os_str())
}

/// The peer label the daemon logs for connections made by this process.
#[cfg(unix)]
pub fn own_peer_label() -> String {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    format!("unix:pid={},uid={euid}", std::process::id())
}

/// The peer label the daemon logs for connections over its pipe (§2.5).
#[cfg(windows)]
pub fn own_peer_label() -> String {
    "pipe:local".to_owned()
}

/// Whether this Windows program runs under Wine, which cannot show some
/// things real Windows does (pipe ACLs, `FILE_FLAG_FIRST_PIPE_INSTANCE`).
/// Wine's ntdll exports `wine_get_version`; Windows' does not.
#[cfg(windows)]
pub fn under_wine() -> bool {
    use std::os::windows::ffi::OsStrExt;
    extern "system" {
        fn GetModuleHandleW(name: *const u16) -> *mut std::ffi::c_void;
        fn GetProcAddress(module: *mut std::ffi::c_void, name: *const u8) -> *mut std::ffi::c_void;
    }
    let name: Vec<u16> = std::ffi::OsStr::new("ntdll.dll")
        .encode_wide()
        .chain(Some(0))
        .collect();
    // SAFETY: both names are NUL-terminated and outlive the calls; ntdll is
    // loaded in every process.
    unsafe {
        let ntdll = GetModuleHandleW(name.as_ptr());
        !ntdll.is_null() && !GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_null()
    }
}

/// Never on Unix.
#[cfg(unix)]
pub fn under_wine() -> bool {
    false
}

#[cfg(windows)]
mod pipe {
    //! A blocking client of a named pipe on top of tokio's (overlapped I/O
    //! does what a synchronous pipe handle cannot: a read waiting in one
    //! thread while another writes, and reads that time out).
    //!
    //! A plain thread blocks on the harness's runtime (`block_on`, the
    //! operation polled on the calling thread). A caller that is itself a
    //! task of a test's runtime (`#[tokio::test]`), where entering another
    //! runtime's `block_on` would panic, hands the operation to that runtime
    //! as a task and waits for its answer on a std channel: so the client
    //! blocks like a Unix socket's either way.

    use std::ffi::OsStr;
    use std::future::Future;
    use std::io;
    use std::sync::{mpsc, Arc, Mutex, OnceLock};
    use std::time::{Duration, Instant};

    use tokio::net::windows::named_pipe::{ClientOptions, NamedPipeClient};
    use tokio::runtime::Runtime;

    /// `ERROR_PIPE_BUSY`: every instance is taken; the daemon makes the next one.
    const ERROR_PIPE_BUSY: i32 = 231;
    /// How long a connect retries a busy pipe.
    const BUSY_WAIT: Duration = Duration::from_secs(10);

    /// One runtime for every pipe of the test process: its worker drives
    /// the pipes' I/O while test threads block on their reads and writes.
    fn runtime() -> &'static Runtime {
        static RT: OnceLock<Runtime> = OnceLock::new();
        RT.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("the harness's pipe runtime")
        })
    }

    /// A connected pipe; clones share it (one reads while another writes).
    #[derive(Debug, Clone)]
    pub struct Stream {
        pipe: Arc<NamedPipeClient>,
        timeouts: Arc<Mutex<(Option<Duration>, Option<Duration>)>>,
    }

    impl Stream {
        pub fn connect(name: &OsStr) -> io::Result<Stream> {
            let deadline = Instant::now() + BUSY_WAIT;
            let name = name.to_owned();
            let pipe = as_task(None, async move {
                loop {
                    match ClientOptions::new().open(&name) {
                        Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY) => {
                            if Instant::now() >= deadline {
                                return Err(e);
                            }
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        other => return other,
                    }
                }
            })?;
            Ok(Stream {
                pipe: Arc::new(pipe),
                timeouts: Arc::default(),
            })
        }

        pub fn try_clone(&self) -> io::Result<Stream> {
            Ok(self.clone())
        }

        pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
            self.timeouts.lock().unwrap().0 = t;
            Ok(())
        }

        pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
            self.timeouts.lock().unwrap().1 = t;
            Ok(())
        }

        /// A pipe has no half-close: only `Both` is possible (the handle
        /// is closed when the last clone is dropped, not here).
        pub fn shutdown(&self, how: std::net::Shutdown) -> io::Result<()> {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("a named pipe cannot shut down {how:?} alone"),
            ))
        }
    }

    /// `op` bounded by `limit` (a timeout drops the operation: a read or a
    /// write that waits for readiness loses nothing when dropped).
    async fn bounded<T>(
        limit: Option<Duration>,
        op: impl Future<Output = io::Result<T>>,
    ) -> io::Result<T> {
        match limit {
            Some(t) => tokio::time::timeout(t, op)
                .await
                .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into())),
            None => op.await,
        }
    }

    /// Whether the calling thread runs a tokio runtime's tasks.
    fn in_a_runtime() -> bool {
        tokio::runtime::Handle::try_current().is_ok()
    }

    /// Runs `op` as a task of the harness's runtime and waits for its answer.
    fn as_task<T: Send + 'static>(
        limit: Option<Duration>,
        op: impl Future<Output = io::Result<T>> + Send + 'static,
    ) -> io::Result<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        runtime().spawn(async move {
            let _ = tx.send(bounded(limit, op).await);
        });
        rx.recv()
            .unwrap_or_else(|_| Err(io::Error::other("the pipe's task ended without an answer")))
    }

    async fn read_into(pipe: &NamedPipeClient, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            pipe.readable().await?;
            match pipe.try_read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return other,
            }
        }
    }

    async fn write_from(pipe: &NamedPipeClient, buf: &[u8]) -> io::Result<usize> {
        loop {
            pipe.writable().await?;
            match pipe.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return other,
            }
        }
    }

    impl std::os::windows::io::AsRawHandle for Stream {
        fn as_raw_handle(&self) -> std::os::windows::io::RawHandle {
            self.pipe.as_raw_handle()
        }
    }

    impl io::Read for Stream {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let limit = self.timeouts.lock().unwrap().0;
            let got = if in_a_runtime() {
                // The task owns its buffer; what it read is copied out.
                let pipe = Arc::clone(&self.pipe);
                let mut owned = vec![0u8; buf.len()];
                as_task(limit, async move {
                    let n = read_into(&pipe, &mut owned).await?;
                    Ok((n, owned))
                })
                .map(|(n, owned)| {
                    buf[..n].copy_from_slice(&owned[..n]);
                    n
                })
            } else {
                runtime().block_on(bounded(limit, read_into(&self.pipe, buf)))
            };
            match got {
                // The server closed its end: the end of the stream.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
                other => other,
            }
        }
    }

    impl io::Read for &Stream {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let mut s = (*self).clone();
            io::Read::read(&mut s, buf)
        }
    }

    impl io::Write for Stream {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let limit = self.timeouts.lock().unwrap().1;
            if in_a_runtime() {
                let pipe = Arc::clone(&self.pipe);
                let owned = buf.to_vec();
                as_task(limit, async move { write_from(&pipe, &owned).await })
            } else {
                runtime().block_on(bounded(limit, write_from(&self.pipe, buf)))
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl io::Write for &Stream {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut s = (*self).clone();
            io::Write::write(&mut s, buf)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}
