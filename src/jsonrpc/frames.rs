//! Outbound frames: the bytes the daemon writes, in the member order of the
//! spec's examples. A result is serialized straight behind its frame
//! prefix, so finishing a response with its id costs no copy; a result
//! shared by many answers (`status`) is written once, straight into the
//! connection's output buffer ([`AnswerFrame`]).

use bytes::{BufMut, Bytes, BytesMut};
use serde::Serialize;

use super::IdText;

use crate::bounded::bound_text;
use crate::dialect::{write_json, Dialect};
use crate::error::RpcError;
use crate::limits::MAX_ERROR_MESSAGE_BYTES;

const RESULT_PREFIX: &[u8] = br#"{"jsonrpc":"2.0","result":"#;
/// Between a response's result (or error) and its id.
const ID_HEAD: &[u8] = b",\"id\":";
/// After the id.
const FRAME_END: &[u8] = b"}\n";

/// A serialized `result`, already framed up to the id: finishing it costs
/// no copy. Or the proof that the request was answered in order by a task of
/// its own ([`Payload::answered`]): the envelope then writes nothing.
#[derive(Debug)]
pub struct Payload(Framed);

#[derive(Debug)]
enum Framed {
    /// The frame's prefix and the result.
    Result(Vec<u8>),
    /// The result alone, shared with other answers.
    Shared(Bytes),
    Answered(AnsweredInOrder),
}

/// Proof that a request's answer was queued on its connection's outbound
/// queue by the request's responder (`crate::request::Responder`), in order
/// with the frames queued before it. Only [`AnsweredInOrder::queued`] makes
/// one, and only the responder calls it, after queueing the answer frame.
#[derive(Debug)]
pub struct AnsweredInOrder(());

impl AnsweredInOrder {
    /// Called by the responder once the answer frame is queued.
    pub(crate) fn queued() -> Self {
        Self(())
    }
}

impl Payload {
    /// Serializes `result` with member names in `dialect`.
    pub fn new<T: Serialize + ?Sized>(result: &T, dialect: Dialect) -> Result<Self, RpcError> {
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(RESULT_PREFIX);
        write_json(&mut buf, result, dialect)
            .map_err(|e| RpcError::internal(format!("serializing the result failed: {e}"), None))?;
        Ok(Self(Framed::Result(buf)))
    }

    /// A result written by `write` straight into the frame buffer (for
    /// answers assembled from pre-serialized parts); `capacity` is a size hint.
    pub fn from_writer(capacity: usize, write: impl FnOnce(&mut Vec<u8>)) -> Self {
        let mut buf = Vec::with_capacity(RESULT_PREFIX.len() + capacity + 32);
        buf.extend_from_slice(RESULT_PREFIX);
        write(&mut buf);
        Self(Framed::Result(buf))
    }

    /// A result serialized once and shared by the answers that repeat it:
    /// answering copies it once, into the output buffer.
    pub fn shared(result: Bytes) -> Self {
        Self(Framed::Shared(result))
    }

    /// The request was answered through its responder.
    pub fn answered(proof: AnsweredInOrder) -> Self {
        Self(Framed::Answered(proof))
    }

    /// Whether this is [`Payload::answered`].
    pub fn is_answered(&self) -> bool {
        matches!(self.0, Framed::Answered(_))
    }

    /// `{}`.
    pub fn empty_object() -> Self {
        let mut buf = Vec::with_capacity(RESULT_PREFIX.len() + 24);
        buf.extend_from_slice(RESULT_PREFIX);
        buf.extend_from_slice(b"{}");
        Self(Framed::Result(buf))
    }

    /// The response frame for request `id` (raw JSON text), `\n` included;
    /// empty for [`Payload::answered`] (already on its way).
    pub fn into_frame(self, id: &[u8]) -> Vec<u8> {
        let mut buf = match self.0 {
            Framed::Result(buf) => buf,
            Framed::Shared(result) => {
                let mut buf = Vec::with_capacity(shared_len(&result) + tail_len(id));
                buf.extend_from_slice(RESULT_PREFIX);
                buf.extend_from_slice(&result);
                buf
            }
            Framed::Answered(_) => return Vec::new(),
        };
        finish_frame(&mut buf, id);
        buf
    }

    /// Appends the response frame for request `id` to `out` (nothing for
    /// [`Payload::answered`]).
    pub fn write_frame(&self, id: &[u8], out: &mut BytesMut) {
        match &self.0 {
            Framed::Result(buf) => out.extend_from_slice(buf),
            Framed::Shared(result) => {
                out.extend_from_slice(RESULT_PREFIX);
                out.extend_from_slice(result);
            }
            Framed::Answered(_) => return,
        }
        finish_frame(out, id);
    }

    /// Bytes of the response frame for request `id`, `\n` included.
    pub fn frame_len(&self, id: &[u8]) -> usize {
        self.len() + tail_len(id)
    }

    /// Bytes of the frame this payload becomes, without the id.
    pub fn len(&self) -> usize {
        match &self.0 {
            Framed::Result(buf) => buf.len(),
            Framed::Shared(result) => shared_len(result),
            Framed::Answered(_) => 0,
        }
    }

    /// Whether no frame is left to write ([`Payload::answered`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Bytes of the frame a shared `result` becomes, without the id.
fn shared_len(result: &[u8]) -> usize {
    RESULT_PREFIX.len() + result.len()
}

/// Bytes [`finish_frame`] adds for `id`.
fn tail_len(id: &[u8]) -> usize {
    ID_HEAD.len() + id.len() + FRAME_END.len()
}

/// Ends a response frame after its result: the id, the brace, the newline.
fn finish_frame(buf: &mut impl BufMut, id: &[u8]) {
    buf.put_slice(ID_HEAD);
    buf.put_slice(id);
    buf.put_slice(FRAME_END);
}

/// What the stack answers one frame with: a whole frame (an error, a
/// rejection), or a result and the id that finishes it, written straight
/// into the connection's output buffer without a frame of its own.
#[derive(Debug)]
pub enum AnswerFrame {
    Whole(Vec<u8>),
    Parts(Payload, IdText),
}

impl AnswerFrame {
    /// Bytes of the frame, `\n` included.
    pub fn len(&self) -> usize {
        match self {
            Self::Whole(frame) => frame.len(),
            Self::Parts(payload, id) => payload.frame_len(id.as_bytes()),
        }
    }

    /// Whether the frame is empty (never: every answer has bytes).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the frame to `out`.
    pub fn write_to(self, out: &mut BytesMut) {
        match self {
            Self::Whole(frame) => out.extend_from_slice(&frame),
            Self::Parts(payload, id) => payload.write_frame(id.as_bytes(), out),
        }
    }

    /// The frame as bytes of its own (for a queue).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Self::Whole(frame) => frame,
            Self::Parts(payload, id) => payload.into_frame(id.as_bytes()),
        }
    }
}

/// The error frame answering request `id` (`None` = `null`), `\n` included.
pub fn error_frame(error: &RpcError, id: Option<&str>) -> Vec<u8> {
    #[derive(Serialize)]
    struct ErrorBody<'a> {
        code: i32,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<crate::error::ErrorData>,
        #[serde(skip)]
        _p: std::marker::PhantomData<&'a ()>,
    }
    let body = ErrorBody {
        code: error.code(),
        message: bound_text(&error.to_string(), MAX_ERROR_MESSAGE_BYTES).into_owned(),
        data: error.data(),
        _p: std::marker::PhantomData,
    };
    let mut buf = Vec::with_capacity(160);
    buf.extend_from_slice(br#"{"jsonrpc":"2.0","error":"#);
    // Serializing plain strings and numbers into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, &body);
    finish_frame(&mut buf, id.unwrap_or("null").as_bytes());
    buf
}

/// `{"jsonrpc":"2.0","method":<method>,"params":`, the head of every frame
/// the daemon sends unasked (notifications and its own requests).
fn method_head(capacity: usize, method: &str) -> serde_json::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(capacity);
    buf.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    serde_json::to_writer(&mut buf, method)?;
    buf.extend_from_slice(br#","params":"#);
    Ok(buf)
}

/// A notification frame (`\n` included), params in `dialect`.
pub fn notification_frame<T: Serialize + ?Sized>(
    method: &str,
    params: &T,
    dialect: Dialect,
) -> serde_json::Result<Vec<u8>> {
    let mut buf = method_head(96, method)?;
    write_json(&mut buf, params, dialect)?;
    buf.extend_from_slice(b"}\n");
    Ok(buf)
}

/// A daemon→client request frame (`\n` included) with a `zc-out-<n>` id.
pub fn request_frame<T: Serialize + ?Sized>(
    method: &str,
    params: &T,
    seq: u64,
) -> serde_json::Result<Vec<u8>> {
    let mut buf = method_head(160, method)?;
    serde_json::to_writer(&mut buf, params)?;
    buf.extend_from_slice(br#","id":"zc-out-"#);
    buf.extend_from_slice(seq.to_string().as_bytes());
    buf.extend_from_slice(b"\"}\n");
    Ok(buf)
}
