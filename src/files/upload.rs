//! One staged upload's state machine (§8.18.1–§8.18.3): declared at
//! begin, grown chunk by chunk at the expected offset, taken whole by a
//! commit that checks its size and hash. Once released (committed, expired,
//! or its connection closed) it answers `unknown_upload`.
//!
//! Its bytes are charged to the daemon-wide memory budget as each chunk is
//! accepted and given back when it is released or dropped: a chunk over the
//! budget is refused with `-32004` `memory` and the upload stays as it was.

use sha2::Digest;

use super::naming::{guess_mime, MAX_FILENAME_BYTES};
use super::{FileToStore, UploadTarget};
use crate::error::{ErrorData, Reason, RpcError};
use crate::limits::{UPLOAD_CHUNK_BYTES, UPLOAD_MAX_BYTES};
use crate::memory::Charge;

/// One staged upload.
#[derive(Debug)]
pub struct Upload {
    bound: UploadTarget,
    size: usize,
    filename: String,
    sha256: Option<String>,
    data: Vec<u8>,
    /// SHA-256 of `data` so far, fed chunk by chunk: a commit only finishes it.
    hasher: sha2::Sha256,
    /// `data`'s bytes, charged to the memory budget.
    charge: Charge,
    released: bool,
}

/// A checked declaration, not yet bound to a session.
#[derive(Debug)]
pub struct Declared {
    size: usize,
    filename: String,
    sha256: Option<String>,
}

impl Declared {
    /// The upload, bound to `bound`.
    pub fn to(self, bound: UploadTarget) -> Upload {
        Upload {
            bound,
            size: self.size,
            filename: self.filename,
            sha256: self.sha256,
            data: Vec::new(),
            hasher: Default::default(),
            charge: Charge::empty(),
            released: false,
        }
    }
}

/// What an accepted chunk did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Appended: the bytes received so far.
    Accepted { received: u64 },
    /// The same bytes at an offset already received (a retry): nothing changed.
    Duplicate { received: u64 },
}

pub(super) fn unknown() -> RpcError {
    RpcError::invalid_params_reason("unknown upload", ErrorData::reason(Reason::UnknownUpload))
}

fn offset_mismatch(expected: u64) -> RpcError {
    RpcError::invalid_params_reason(
        "offset mismatch",
        ErrorData::reason(Reason::OffsetMismatch).with("expected_offset", expected),
    )
}

impl Upload {
    /// An upload of `size` bytes (`None`: not a non-negative integer),
    /// checked as §8.18.1 says before the session is looked at; the filename
    /// defaults to `upload`.
    pub fn declare(
        size: Option<u64>,
        filename: Option<String>,
        sha256: Option<String>,
    ) -> Result<Declared, RpcError> {
        let size = match size {
            Some(n) if n <= UPLOAD_MAX_BYTES as u64 => n as usize,
            Some(n) => return Err(super::attach::file_too_large(n)),
            None => {
                return Err(RpcError::invalid_params(
                    "size_bytes must be an integer 0..=10485760",
                ))
            }
        };
        let filename = filename.unwrap_or_else(|| "upload".to_owned());
        if filename.len() > MAX_FILENAME_BYTES {
            return Err(RpcError::invalid_params(format!(
                "filename exceeds {MAX_FILENAME_BYTES} bytes"
            )));
        }
        let sha256 = match sha256 {
            Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Some(h.to_ascii_lowercase())
            }
            Some(_) => return Err(RpcError::invalid_params("sha256 must be 64 hex digits")),
            None => None,
        };
        Ok(Declared {
            size,
            filename,
            sha256,
        })
    }

    /// The declared size.
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// Bytes of retained metadata (charged by the registry from begin).
    pub(super) fn metadata_bytes(&self) -> usize {
        let b = &self.bound;
        b.session_id.len()
            + b.owner.len()
            + b.agent_alias.len()
            + self.filename.len()
            + self.sha256.as_ref().map_or(0, String::len)
    }

    /// Appends `bytes` at `offset` (§8.18.2): a retry of bytes already
    /// received is a duplicate; anything else must start at the received
    /// length and fit the declared size and the memory budget.
    pub(super) fn append(&mut self, offset: u64, bytes: &[u8]) -> Result<Appended, RpcError> {
        if self.released {
            return Err(unknown());
        }
        if bytes.is_empty() || bytes.len() > UPLOAD_CHUNK_BYTES {
            return Err(RpcError::invalid_params(format!(
                "a chunk decodes to 1..={UPLOAD_CHUNK_BYTES} bytes"
            )));
        }
        let received = self.data.len() as u64;
        // An offset near u64::MAX must not wrap: it simply does not match.
        let end = offset
            .checked_add(bytes.len() as u64)
            .ok_or_else(|| offset_mismatch(received))?;
        if end <= received && self.data.get(offset as usize..end as usize) == Some(bytes) {
            return Ok(Appended::Duplicate { received });
        }
        if offset != received {
            return Err(offset_mismatch(received));
        }
        if end > self.size as u64 {
            return Err(RpcError::invalid_params_reason(
                format!("chunk exceeds the declared size ({} bytes)", self.size),
                ErrorData::reason(Reason::ExceedsDeclaredSize).with("size_bytes", self.size),
            ));
        }
        // Exactly what arrives is allocated and charged, chunk by chunk.
        self.charge.try_grow(bytes.len())?;
        self.data.reserve_exact(bytes.len());
        self.data.extend_from_slice(bytes);
        self.hasher.update(bytes);
        Ok(Appended::Accepted { received: end })
    }

    /// Takes the whole upload for storing (§8.18.3). Unknown or incomplete:
    /// refused, nothing changes. From a successful take on the upload is
    /// released, even when its bytes then fail the declared hash.
    pub(super) fn take(&mut self) -> Result<Taken, RpcError> {
        if self.released {
            return Err(unknown());
        }
        if self.data.len() < self.size {
            let received = self.data.len();
            return Err(RpcError::invalid_params_reason(
                format!("incomplete upload: received {received} of {}", self.size),
                ErrorData::reason(Reason::Incomplete)
                    .with("received_bytes", received)
                    .with("size_bytes", self.size),
            ));
        }
        self.released = true;
        Ok(Taken {
            bytes: std::mem::take(&mut self.data),
            sha: crate::hex::lower(&std::mem::take(&mut self.hasher).finalize()),
            expected: self.sha256.take(),
            filename: std::mem::take(&mut self.filename),
            bound: self.bound.clone(),
            _charge: std::mem::replace(&mut self.charge, Charge::empty()),
        })
    }

    /// Drops the staged bytes (expiry, connection close): the id is unknown from now on.
    pub(super) fn release(&mut self) {
        self.released = true;
        self.data = Vec::new();
        self.charge.set(0);
    }
}

/// A complete upload taken for storing; its bytes stay charged until stored.
#[derive(Debug)]
pub struct Taken {
    bytes: Vec<u8>,
    sha: String,
    expected: Option<String>,
    filename: String,
    bound: UploadTarget,
    _charge: Charge,
}

impl Taken {
    /// What it is bound to, and the file to store, once its hash matches the
    /// declared one (`sha256_mismatch` otherwise).
    pub fn verify(self) -> Result<(UploadTarget, FileToStore), RpcError> {
        if self.expected.as_ref().is_some_and(|e| *e != self.sha) {
            return Err(RpcError::invalid_params_reason(
                "sha256 mismatch",
                ErrorData::reason(Reason::Sha256Mismatch),
            ));
        }
        let mime = guess_mime(&self.filename).to_owned();
        Ok((
            self.bound,
            FileToStore {
                bytes: self.bytes,
                sha256: Some(self.sha),
                filename: self.filename,
                mime,
                original_path: None,
            },
        ))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An upload of `size` bytes to session `s` (owner `o`, agent `echo`).
    pub(in crate::files) fn upload(size: u64) -> Upload {
        let bound = UploadTarget {
            session_id: "s".into(),
            incarnation: 1,
            owner: "o".into(),
            agent_alias: "echo".into(),
        };
        Upload::declare(Some(size), None, None).unwrap().to(bound)
    }

    #[test]
    fn the_charge_follows_the_staged_bytes_and_release_gives_it_back() {
        let mut u = upload(5);
        assert_eq!(u.append(0, b"abc"), Ok(Appended::Accepted { received: 3 }));
        assert_eq!(u.charge.bytes(), 3);
        // A retry changes nothing, charges nothing.
        assert_eq!(u.append(1, b"bc"), Ok(Appended::Duplicate { received: 3 }));
        assert_eq!(u.charge.bytes(), 3);
        assert_eq!(u.append(1, b"xy"), Err(offset_mismatch(3)));
        assert_eq!(
            u.append(3, b"xyz").unwrap_err().data().unwrap().0[0].1,
            "exceeds_declared_size"
        );
        // Incomplete: refused, the upload as it was.
        assert!(u.take().is_err());
        assert_eq!((u.data.len(), u.charge.bytes()), (3, 3));
        // Expiry or a closed connection: the bytes and their charge go.
        u.release();
        assert_eq!((u.data.capacity(), u.charge.bytes()), (0, 0));
        assert_eq!(u.append(3, b"de"), Err(unknown()));
    }

    #[test]
    fn a_taken_upload_keeps_its_charge_until_verified() {
        let mut u = upload(2);
        u.append(0, b"hi").unwrap();
        let taken = u.take().unwrap();
        assert_eq!(u.charge.bytes(), 0, "moved to the taken upload");
        assert_eq!(taken._charge.bytes(), 2);
        let (_, incoming) = taken.verify().unwrap();
        assert_eq!(incoming.bytes, b"hi");
        assert_eq!(
            incoming.sha256.as_deref(),
            Some(crate::hex::sha256(b"hi").as_str())
        );
        assert_eq!(u.take().unwrap_err(), unknown(), "taken once");
    }
}
