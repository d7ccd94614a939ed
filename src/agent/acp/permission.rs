//! `session/request_permission` → our `approval_request` / `session/approve`
//! (SPEC §8.12), the decision mapped onto the options the agent offered.
//!
//! `allow_once` / `allow_always` / `reject` pick the offered option of that
//! kind (the nearest other kind of the same sense when it is missing: an
//! `allow_always` answer may select `allow_once`, never the reverse sense).
//! A timeout or an unreachable client becomes the agent's
//! `permission_default`; a cancelled turn answers `cancelled` (ACP requires
//! it). A tool already allowed always in this live session is allowed
//! without asking.

use std::collections::HashSet;

use agent_client_protocol_schema::v1::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::mapping::Tools;
use crate::agent::sink::{ApprovalDecision, EventSink, SinkClosed};
use crate::agent::PermissionDefault;

/// What the turn knows when a request comes.
pub struct Ask<'a> {
    pub tools: &'a Tools,
    /// Tool names allowed always (the session's, plus this turn's).
    pub always: &'a mut HashSet<String>,
    pub default: PermissionDefault,
    pub cancel: &'a CancellationToken,
}

/// The result object answering one permission request; `Err(text)` when its
/// params are not a permission request.
pub async fn answer<S: EventSink>(
    params: Value,
    ask: Ask<'_>,
    sink: &mut S,
) -> Result<Result<Value, String>, SinkClosed> {
    let request: RequestPermissionRequest = match serde_json::from_value(params) {
        Ok(r) => r,
        Err(e) => {
            return Ok(Err(format!(
                "invalid session/request_permission params: {e}"
            )))
        }
    };
    let id = request.tool_call.tool_call_id.0.to_string();
    let fields = &request.tool_call.fields;
    let name = fields
        .name
        .clone()
        .or_else(|| ask.tools.name_of(&id).map(str::to_owned))
        .or_else(|| {
            fields
                .kind
                .and_then(|k| serde_json::to_value(k).ok()?.as_str().map(str::to_owned))
        })
        .unwrap_or_else(|| "other".to_owned());
    let summary = fields.title.clone().unwrap_or_else(|| id.clone());

    let decision = if ask.always.contains(&name) {
        ApprovalDecision::AllowAlways
    } else {
        tokio::select! {
            d = sink.request_approval(&name, &summary) => d?,
            () = ask.cancel.cancelled() => return Ok(Ok(cancelled())),
        }
    };
    let decision = match decision {
        ApprovalDecision::TimedOut | ApprovalDecision::Unreachable => match ask.default {
            PermissionDefault::Reject => ApprovalDecision::Rejected,
            PermissionDefault::AllowOnce => ApprovalDecision::AllowOnce,
        },
        d => d,
    };
    use PermissionOptionKind::{AllowAlways, AllowOnce, RejectAlways, RejectOnce};
    let preference: &[PermissionOptionKind] = match decision {
        ApprovalDecision::AllowAlways => {
            ask.always.insert(name);
            &[AllowAlways, AllowOnce]
        }
        ApprovalDecision::AllowOnce => &[AllowOnce],
        _ => &[RejectOnce, RejectAlways],
    };
    Ok(Ok(select(&request.options, preference)))
}

fn select(options: &[PermissionOption], preference: &[PermissionOptionKind]) -> Value {
    let chosen = preference
        .iter()
        .find_map(|kind| options.iter().find(|o| o.kind == *kind));
    match chosen {
        Some(o) => to_value(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(o.option_id.clone())),
        )),
        None => cancelled(),
    }
}

fn cancelled() -> Value {
    to_value(RequestPermissionResponse::new(
        RequestPermissionOutcome::Cancelled,
    ))
}

fn to_value(r: RequestPermissionResponse) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn decisions_select_the_offered_option_of_their_kind() {
        let options: Vec<PermissionOption> = serde_json::from_value(json!([
            {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
            {"optionId": "no", "name": "No", "kind": "reject_once"}
        ]))
        .unwrap();
        let picked = |p: &[PermissionOptionKind]| select(&options, p);
        assert_eq!(
            picked(&[
                PermissionOptionKind::AllowAlways,
                PermissionOptionKind::AllowOnce
            ]),
            json!({"outcome": {"outcome": "selected", "optionId": "yes"}})
        );
        assert_eq!(
            picked(&[PermissionOptionKind::RejectOnce]),
            json!({"outcome": {"outcome": "selected", "optionId": "no"}})
        );
        assert_eq!(
            picked(&[PermissionOptionKind::RejectAlways]),
            json!({"outcome": {"outcome": "cancelled"}})
        );
    }
}
