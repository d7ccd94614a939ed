//! Keys typed ahead of a question: whether any wait in the terminal's input
//! queue, and dropping them (the chat must not take a line typed during a
//! turn as the answer to an approval). Unix asks the tty (`FIONREAD`,
//! `tcflush`); Windows asks the console input buffer
//! (`GetNumberOfConsoleInputEvents`, `FlushConsoleInputBuffer`).

/// Whether keys wait in the terminal's input queue.
#[cfg(unix)]
pub(super) fn input_waiting() -> bool {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which is valid.
    let r = unsafe { libc::ioctl(libc::STDIN_FILENO, libc::FIONREAD, &mut n) };
    r == 0 && n > 0
}

/// Drops what the terminal holds but nobody read yet.
#[cfg(unix)]
pub(super) fn drop_queued() {
    // SAFETY: tcflush only discards the terminal's queued input; fd 0 is ours.
    unsafe { libc::tcflush(libc::STDIN_FILENO, libc::TCIFLUSH) };
}

/// Whether a key press waits in the console's input buffer. Focus, mouse
/// and resize events (also in that buffer) and key releases are no typing.
#[cfg(windows)]
pub(super) fn input_waiting() -> bool {
    use windows_sys::Win32::System::Console::{
        GetStdHandle, PeekConsoleInputW, INPUT_RECORD, KEY_EVENT, STD_INPUT_HANDLE,
    };
    // SAFETY: GetStdHandle has no preconditions; the handle may be invalid,
    // which PeekConsoleInputW reports as a failure.
    let input = unsafe { GetStdHandle(STD_INPUT_HANDLE) };
    let mut records = [INPUT_RECORD::default(); 64];
    let mut read = 0u32;
    // SAFETY: the buffer holds 64 records and `read` is a valid out pointer.
    let ok = unsafe { PeekConsoleInputW(input, records.as_mut_ptr(), 64, &mut read) };
    if ok == 0 {
        return false;
    }
    records.iter().take(read as usize).any(|r| {
        u32::from(r.EventType) == KEY_EVENT && {
            // SAFETY: EventType says the union holds a KEY_EVENT_RECORD.
            unsafe { r.Event.KeyEvent.bKeyDown != 0 }
        }
    })
}

/// Drops every event waiting in the console's input buffer.
#[cfg(windows)]
pub(super) fn drop_queued() {
    use windows_sys::Win32::System::Console::{
        FlushConsoleInputBuffer, GetStdHandle, STD_INPUT_HANDLE,
    };
    // SAFETY: both calls only take a handle; an invalid one makes the flush
    // fail, which is harmless here (nothing to drop).
    unsafe {
        FlushConsoleInputBuffer(GetStdHandle(STD_INPUT_HANDLE));
    }
}
