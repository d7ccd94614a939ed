//! The envelope members a minimal server reads, borrowed from the frame:
//! what `e2e_load`'s baseline servers parse per request, and the `codec`
//! bench's reference for the daemon's own envelope scan.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// A request's envelope; `id` is echoed verbatim. (The `codec` bench
/// reads no member: it times the parse.)
#[derive(Deserialize)]
#[allow(dead_code)]
pub struct MinimalRequest<'a> {
    #[serde(borrow)]
    pub jsonrpc: Option<&'a RawValue>,
    #[serde(borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub params: Option<&'a RawValue>,
}
