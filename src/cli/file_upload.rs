//! `zeroclaw upload SESSION FILE [--filename NAME]` and chat's `/upload`:
//! begin, 1 MiB chunks, commit with the declared SHA-256; a chunk whose
//! answer is lost is sent again (the daemon acknowledges an identical
//! re-sent chunk as a duplicate).

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::answers::Answers;
use super::conn::ClientPeer;
use super::exit::{self, CommandFailure};
use super::one_shot::{one_shot, report, OneShot};

/// How long `zeroclaw upload` waits for a chunk's answer before sending it again.
const CHUNK_ANSWER_WAIT: Duration = Duration::from_secs(30);
/// Attempts per chunk.
const CHUNK_ATTEMPTS: usize = 3;

/// `zeroclaw upload`: the commit's answer printed as `zeroclaw rpc` prints one.
pub async fn upload(
    config_dir: Option<&OsStr>,
    session: &str,
    file: &Path,
    filename: Option<String>,
) -> i32 {
    report(upload_file(config_dir, session, file, filename).await)
}

/// Uploads `file` (as `zeroclaw upload` does, progress on a terminal); the
/// commit's answer: the file entry (`marker`, `workspace_path`, …) or the
/// daemon's error.
pub async fn upload_file(
    config_dir: Option<&OsStr>,
    session: &str,
    file: &Path,
    filename: Option<String>,
) -> OneShot {
    use base64::Engine;
    use std::io::IsTerminal;
    let bytes = std::fs::read(file).map_err(|e| {
        CommandFailure::new(exit::USAGE, format!("cannot read {}: {e}", file.display()))
    })?;
    let name = filename.unwrap_or_else(|| {
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "upload".into())
    });
    let sha = crate::hex::sha256(&bytes);
    let progress = std::io::stderr().is_terminal();
    let mut conn = ClientPeer::open(config_dir).await?;
    let none = Answers::default();
    let begin =
        json!({"session_id": session, "size_bytes": bytes.len(), "filename": name, "sha256": sha});
    let upload_id = match one_shot(
        conn.call_answering("file/upload/begin", begin, &none, |_| {})
            .await,
    )? {
        Ok(r) => r
            .get("upload_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        Err(e) => return Ok(Err(e)),
    };
    let chunk = crate::limits::UPLOAD_CHUNK_BYTES;
    for (i, piece) in bytes.chunks(chunk).enumerate() {
        let params = json!({
            "upload_id": upload_id,
            "offset": i * chunk,
            "data_b64": base64::engine::general_purpose::STANDARD.encode(piece),
        });
        let mut answered = None;
        for _ in 0..CHUNK_ATTEMPTS {
            // Cancel-safe: a late answer to an abandoned attempt is dropped
            // by the next one, its id being another.
            if let Ok(r) = tokio::time::timeout(
                CHUNK_ANSWER_WAIT,
                conn.call_answering("file/upload/chunk", params.clone(), &none, |_| {}),
            )
            .await
            {
                answered = Some(one_shot(r)?);
                break;
            }
        }
        match answered {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Ok(Err(e)),
            None => {
                return Err(CommandFailure::new(
                    exit::RPC_ERROR,
                    "no answer to a chunk after 3 attempts",
                ))
            }
        }
        if progress {
            let done = (i * chunk + piece.len()) as f64;
            eprint!(
                "\r{:5.1}% {} / {} bytes",
                100.0 * done / bytes.len().max(1) as f64,
                done as u64,
                bytes.len()
            );
        }
    }
    if progress {
        eprintln!();
    }
    one_shot(
        conn.call_answering(
            "file/upload/commit",
            json!({ "upload_id": upload_id }),
            &none,
            |_| {},
        )
        .await,
    )
}
