//! File entries of `file/attach` and of prompt attachments (§8.17,
//! §8.4 step 1a): their shape, the local-only and admin-only `path` mode,
//! and the per-file and per-request limits, all checked on the whole request
//! before any file is read or stored.

use std::borrow::Cow;

use base64::Engine;
use serde::Deserialize;

use super::naming::{guess_mime, MAX_FILENAME_BYTES};
use super::FileToStore;
use crate::config::Principal;
use crate::conn_state::Transport;
use crate::error::{ErrorData, Forbidden, Reason, RpcError};
use crate::limits::UPLOAD_MAX_BYTES;

/// Decoded bytes of one `file/attach` request.
pub const REQUEST_MAX_BYTES: usize = 2 * UPLOAD_MAX_BYTES;

/// One entry of `files` / `attachments`.
#[derive(Debug, Deserialize)]
pub struct FileEntry<'a> {
    #[serde(borrow)]
    pub data_b64: Option<Cow<'a, str>>,
    pub path: Option<String>,
    pub filename: Option<String>,
    pub mime_type: Option<String>,
    pub source: Option<String>,
}

/// `-32602` `file_too_large`.
pub fn file_too_large(n: u64) -> RpcError {
    RpcError::invalid_params_reason(
        format!("File exceeds 10 MB limit ({n} bytes)"),
        ErrorData::reason(Reason::FileTooLarge).with("max_bytes", UPLOAD_MAX_BYTES),
    )
}

/// Bytes per read of a `path` entry.
const READ_BLOCK: usize = 64 * 1024;

/// `-32602` `request_too_large`.
fn request_too_large(total: u64) -> RpcError {
    RpcError::invalid_params_reason(
        format!("Request exceeds 20 MB limit ({total} bytes)"),
        ErrorData::reason(Reason::RequestTooLarge).with("max_bytes", REQUEST_MAX_BYTES),
    )
}

/// The bytes of the file at `path`, never more than the file limit plus
/// one byte whatever its size claims (`/proc/self/pagemap` says 0 and never
/// ends, §8.17). It is opened non-blocking and checked to be a regular file
/// through the open descriptor, so a FIFO swapped in after the `stat` of
/// [`regular_file_len`] is refused instead of blocking the connection.
fn read_bounded(i: usize, path: &str) -> Result<Vec<u8>, RpcError> {
    use std::io::Read;
    let cannot = |err: std::io::Error| {
        RpcError::invalid_params(format!("files[{i}]: cannot read {path}: {err}"))
    };
    let file = open_nonblocking(path).map_err(cannot)?;
    if !file.metadata().map_err(cannot)?.is_file() {
        return Err(RpcError::invalid_params(format!(
            "files[{i}]: {path} is not a regular file"
        )));
    }
    // Whole 64 KiB reads: some files (pagemap) refuse reads that are not a
    // multiple of their record size, which `take(n)` would ask for at the end.
    let mut file = file;
    let mut bytes = Vec::new();
    let mut block = vec![0u8; READ_BLOCK];
    while bytes.len() <= UPLOAD_MAX_BYTES {
        match file.read(&mut block) {
            Ok(0) => return Ok(bytes),
            Ok(n) => bytes.extend_from_slice(&block[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(cannot(e)),
        }
    }
    // How far past the limit the file goes is unknown: one byte is enough.
    Err(file_too_large(UPLOAD_MAX_BYTES as u64 + 1))
}

#[cfg(unix)]
fn open_nonblocking(path: &str) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &str) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// Decoded length of standard padded base64, or `None` if it cannot be base64.
fn decoded_len(b64: &str) -> Option<u64> {
    let n = b64.len();
    if !n.is_multiple_of(4) {
        return None;
    }
    let pad = b64.bytes().rev().take(2).filter(|b| *b == b'=').count();
    Some((n / 4 * 3 - pad) as u64)
}

/// The size of the regular file at absolute `path`. Anything else (a
/// relative path, a FIFO, a device, a directory) is refused before it is
/// opened: reading a FIFO without a writer would block forever.
fn regular_file_len(i: usize, path: &str) -> Result<u64, RpcError> {
    if !std::path::Path::new(path).is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "files[{i}]: path must be absolute"
        )));
    }
    let meta = std::fs::metadata(path).map_err(|err| {
        RpcError::invalid_params(format!("files[{i}]: cannot read {path}: {err}"))
    })?;
    if !meta.is_file() {
        return Err(RpcError::invalid_params(format!(
            "files[{i}]: {path} is not a regular file"
        )));
    }
    Ok(meta.len())
}

/// Shape and admin-only checks, right after decoding (§3.5): before any existence check.
pub fn check_entries(
    entries: &[FileEntry<'_>],
    transport: Transport,
    principal: &Principal,
) -> Result<(), RpcError> {
    for (i, e) in entries.iter().enumerate() {
        match (&e.data_b64, &e.path) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(RpcError::invalid_params(format!(
                    "files[{i}]: give exactly one of data_b64 and path"
                )))
            }
        }
        if e.path.is_some() {
            if transport != Transport::Local {
                return Err(RpcError::invalid_params_reason(
                    format!("files[{i}]: path is only available on local connections"),
                    ErrorData::reason(Reason::PathNotAllowed),
                ));
            }
            if !principal.admin {
                return Err(RpcError::Forbidden(Forbidden::AdminOnlyParam {
                    param: "path",
                }));
            }
        }
        if e.filename
            .as_ref()
            .is_some_and(|f| f.len() > MAX_FILENAME_BYTES)
        {
            return Err(RpcError::invalid_params(format!(
                "files[{i}]: filename exceeds {MAX_FILENAME_BYTES} bytes"
            )));
        }
        if !matches!(e.source.as_deref(), None | Some("file" | "clipboard")) {
            return Err(RpcError::invalid_params(format!(
                "files[{i}]: source must be \"file\" or \"clipboard\""
            )));
        }
    }
    Ok(())
}

/// Sizes on the whole request, then the bytes of every entry.
pub fn read_entries(entries: Vec<FileEntry<'_>>) -> Result<Vec<FileToStore>, RpcError> {
    let mut total = 0u64;
    for (i, e) in entries.iter().enumerate() {
        let n = match (&e.data_b64, &e.path) {
            (Some(b), _) => decoded_len(b).ok_or_else(|| {
                RpcError::invalid_params(format!("files[{i}]: data_b64 is not padded base64"))
            })?,
            (_, Some(p)) => regular_file_len(i, p)?,
            _ => 0,
        };
        if n > UPLOAD_MAX_BYTES as u64 {
            return Err(file_too_large(n));
        }
        total += n;
    }
    if total > REQUEST_MAX_BYTES as u64 {
        return Err(request_too_large(total));
    }
    // `st_size` is a hint (a /proc file says 0 and never ends): what was
    // actually read is what counts against the request's bound.
    let mut read_total = 0u64;
    entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let (bytes, original_path) = match (e.data_b64, e.path) {
                (Some(b), _) => (
                    base64::engine::general_purpose::STANDARD
                        .decode(b.as_bytes())
                        .map_err(|err| {
                            RpcError::invalid_params(format!("files[{i}]: data_b64: {err}"))
                        })?,
                    None,
                ),
                (_, Some(p)) => {
                    let bytes = read_bounded(i, &p)?;
                    read_total += bytes.len() as u64;
                    if read_total > REQUEST_MAX_BYTES as u64 {
                        return Err(request_too_large(read_total));
                    }
                    (bytes, Some(p))
                }
                _ => (Vec::new(), None),
            };
            let filename = e.filename.unwrap_or_else(|| {
                original_path
                    .as_deref()
                    .and_then(|p| std::path::Path::new(p).file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "upload".to_owned())
            });
            let mime = e
                .mime_type
                .unwrap_or_else(|| guess_mime(&filename).to_owned());
            Ok(FileToStore {
                sha256: None,
                bytes,
                filename,
                mime,
                original_path,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_lengths() {
        assert_eq!(decoded_len(""), Some(0));
        assert_eq!(decoded_len("YQ=="), Some(1));
        assert_eq!(decoded_len("YWI="), Some(2));
        assert_eq!(decoded_len("YWJj"), Some(3));
        assert_eq!(decoded_len("YWJ"), None);
    }
}
