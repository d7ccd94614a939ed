//! The request as the layers and services see it: the frame it came from,
//! its method's table row, where its params are, and what the layers have
//! learnt about it (binding, dialect). Params are decoded only by the
//! method's service, straight from the frame text.

use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::authz::Binding;
use crate::conn_state::{Conn, Hold};
use crate::dialect::Dialect;
use crate::error::RpcError;
use crate::jsonrpc::{error_frame, kind, AnsweredInOrder, IdText, JsonKind, Payload};
use crate::methods::MethodSpec;

/// One valid request or notification on its way through the stack: a
/// pointer to its [`RequestParts`], so that each layer hands down eight
/// bytes instead of copying the whole request.
#[derive(Debug)]
pub struct Request(Box<RequestParts>);

impl std::ops::Deref for Request {
    type Target = RequestParts;
    fn deref(&self) -> &RequestParts {
        &self.0
    }
}

impl std::ops::DerefMut for Request {
    fn deref_mut(&mut self) -> &mut RequestParts {
        &mut self.0
    }
}

/// What a [`Request`] holds.
#[derive(Debug)]
pub struct RequestParts {
    frame: String,
    params: Option<Range<usize>>,
    /// The method's table row.
    pub method: &'static MethodSpec,
    /// `false` for a notification (no `id` member): never answered.
    pub expects_reply: bool,
    /// The request's id as received, for a handler that writes its own
    /// answer in order with other frames (`session/prompt`).
    pub id: Option<IdText>,
    /// The connection's binding, attached by the handshake layer and refreshed by authz.
    pub binding: Option<Arc<Binding>>,
    /// The connection's dialect when the request was read.
    pub dialect: Dialect,
    /// The request's place in its connection's in-flight bound, set by the
    /// limit layer (see [`Hold`]).
    pub hold: Hold,
}

impl Request {
    /// A request over `frame`, whose params text (if any) is `frame[params]`.
    pub fn with_params_range(
        frame: String,
        params: Option<Range<usize>>,
        method: &'static MethodSpec,
        expects_reply: bool,
        dialect: Dialect,
    ) -> Self {
        Self(Box::new(RequestParts {
            frame,
            params,
            method,
            expects_reply,
            id: None,
            binding: None,
            dialect,
            hold: Hold::default(),
        }))
    }
}

impl RequestParts {
    /// Bytes of the frame (counted by the in-flight limit).
    pub fn frame_len(&self) -> usize {
        self.frame.len()
    }

    /// Frees the frame once its params are decoded into owned values: a
    /// prompt waiting in its session's queue then holds its text once, not
    /// twice. The in-flight accounting keeps the size it
    /// charged at admission; params read afterwards are `{}`.
    pub fn release_frame(&mut self) {
        self.frame = String::new();
        self.params = None;
    }

    /// The raw params text, if present.
    pub fn raw_params(&self) -> Option<&str> {
        self.params.clone().and_then(|r| self.frame.get(r))
    }

    /// Decodes params (§1.3): omitted → `{}`, an array → `-32602`, unknown fields ignored.
    pub fn params<'a, T: Deserialize<'a>>(&'a self) -> Result<T, RpcError> {
        if self.raw_params().is_none() {
            // Absent params are `{}`, read without a parser (most requests
            // of methods without members carry none). A struct that needs a
            // member fails here and again below, where the error names it.
            let empty = serde::de::value::MapDeserializer::<'_, _, serde::de::value::Error>::new(
                std::iter::empty::<(&str, ())>(),
            );
            if let Ok(params) = T::deserialize(empty) {
                return Ok(params);
            }
        }
        let text = self.raw_params().unwrap_or("{}");
        if text.starts_with('[') {
            return Err(RpcError::invalid_params(
                "params must be an object: positional parameters are not supported",
            ));
        }
        serde_json::from_str(text)
            .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
    }

    /// For methods without params: only an object (or nothing) is accepted.
    pub fn no_params(&self) -> Result<(), RpcError> {
        match self.raw_params() {
            None => Ok(()),
            Some(_) => self.params::<serde::de::IgnoredAny>().map(|_| ()),
        }
    }

    /// The bound principal's binding. Present for every method but `initialize`.
    pub fn binding(&self) -> Result<&Arc<Binding>, RpcError> {
        self.binding
            .as_ref()
            .ok_or(RpcError::Auth(crate::error::AuthReason::NotInitialized))
    }
}

/// Whether `raw` is JSON `null` (§1.3: a null parameter is absent).
pub fn is_null(raw: &RawValue) -> bool {
    kind(raw.get()) == JsonKind::Null
}

/// The answer of a request that a domain task sends itself, in order with
/// the frames it queued before (`session/prompt`: the turn's updates and
/// `turn_complete` precede its answer, and the next turn cannot start before
/// it is queued). A handle on the connection's outbound queue: the task
/// hands it the result, the frame is built here.
#[derive(Debug)]
pub struct Responder {
    id: IdText,
    hold: Hold,
    conn: Conn,
}

impl Responder {
    /// The responder of `req` on `conn`; `None` for a notification (never
    /// answered).
    pub fn of(req: &Request, conn: &Conn) -> Option<Self> {
        let id = req.id.clone()?;
        Some(Self {
            id,
            hold: req.hold,
            conn: conn.clone(),
        })
    }

    /// Queues the answer: `result` serialized in `dialect`, or the error.
    /// The request's in-flight slot is free before the client can read the
    /// answer and send again. `Err` only when the result cannot be
    /// serialized: nothing was queued, and the caller's reply answers with
    /// that error.
    pub async fn answer<T: Serialize>(
        self,
        result: Result<&T, &RpcError>,
        dialect: Dialect,
        cancel: &CancellationToken,
    ) -> Result<AnsweredInOrder, RpcError> {
        let frame = match result {
            Ok(r) => Payload::new(r, dialect)?.into_frame(self.id.as_bytes()),
            Err(e) => error_frame(e, Some(self.id.as_str())),
        };
        self.hold.release(&self.conn.in_flight);
        // A connection that closed first reads no answer: done all the same.
        let _ = self.conn.outbound.send_or_cancelled(frame, cancel).await;
        Ok(AnsweredInOrder::queued())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Absent params read as `{}` on the fast path, and a member they lack
    /// is named by the same message as when `{}` is sent.
    #[test]
    fn absent_params_are_an_empty_object() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Optional {
            limit: Option<u32>,
        }
        #[derive(Deserialize, Debug)]
        struct Required {
            #[allow(dead_code)]
            session_id: String,
        }
        let spec = crate::methods::lookup("status", false).unwrap();
        let absent = Request::with_params_range(
            r#"{"method":"status"}"#.into(),
            None,
            spec,
            true,
            Dialect::Camel,
        );
        let frame = r#"{"method":"status","params":{}}"#;
        let at = frame.find("{}").unwrap();
        let empty =
            Request::with_params_range(frame.into(), Some(at..at + 2), spec, true, Dialect::Camel);
        assert_eq!(
            absent.params::<Optional>().unwrap(),
            Optional { limit: None }
        );
        let message = |r: &Request| match r.params::<Required>() {
            Err(e) => format!("{e:?}"),
            Ok(_) => "accepted".into(),
        };
        assert_eq!(message(&absent), message(&empty));
        assert!(message(&absent).contains("missing field `session_id`"));
    }
}
