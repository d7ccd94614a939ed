//! Windows' form of "every process dies with its owner": a Job Object per
//! child the daemon starts (agent programs, the `shell` tool, ACP
//! terminals). What the child starts joins the job too (Windows puts a new
//! process in its parent's job), so killing the job reaches them all, as
//! `kill(-pgid)` reaches a process group on Unix.
//!
//! The job is made with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: when its last
//! handle closes the system kills every process in it. The daemon holds the
//! only handle, so a turn's end, a cancel, a dropped turn and the daemon's
//! exit (even `TerminateProcess` of the daemon: the kernel closes its
//! handles) all end the job's processes.
//!
//! The child is assigned right after `CreateProcess` returns, before it has
//! run more than its loader; a child that starts another process within
//! that instant would leave it outside the job (documented in
//! docs/operations.md).

use std::ffi::c_void;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};

/// The exit code the job's processes get when it is killed (what a
/// `TerminateProcess` of our own would give: 1).
const KILLED: u32 = 1;

/// A Job Object holding one child and whatever it starts.
#[derive(Debug)]
pub struct Job {
    handle: OwnedHandle,
}

impl Job {
    /// A new job, killed when its handle closes, holding the process
    /// `process` (a handle with `PROCESS_SET_QUOTA | PROCESS_TERMINATE`,
    /// as the one `CreateProcess` returns).
    pub fn holding(process: RawHandle) -> io::Result<Job> {
        // SAFETY: null attributes and name are allowed: an unnamed job with
        // the default security descriptor.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh handle nobody else owns.
        let handle = unsafe { OwnedHandle::from_raw_handle(raw) };
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        let size = u32::try_from(std::mem::size_of_val(&limits)).unwrap_or(u32::MAX);
        // SAFETY: the pointer and size describe `limits`, which outlives the call.
        let set = unsafe {
            SetInformationJobObject(
                handle.as_raw_handle(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast::<c_void>(),
                size,
            )
        };
        if set == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both handles are valid for the duration of the call.
        if unsafe { AssignProcessToJobObject(handle.as_raw_handle(), process) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Job { handle })
    }

    /// Kills every process in the job now (the job stays, empty).
    pub fn kill(&self) {
        // SAFETY: the handle is ours and open; a failure (already empty)
        // leaves nothing to do.
        unsafe {
            TerminateJobObject(self.handle.as_raw_handle(), KILLED);
        }
    }
}
