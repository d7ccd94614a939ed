//! `session/request_permission` → our `approval_request` / `session/approve`
//! (§8.12), the decision mapped onto the options the agent offered.
//!
//! `allow_once` / `allow_always` / `reject` pick the offered option of that
//! kind (the nearest other kind of the same sense when it is missing: an
//! `allow_always` answer may select `allow_once`, never the reverse sense).
//! A timeout or an unreachable client becomes the agent's
//! `permission_default`; a cancelled turn answers `cancelled` (ACP requires
//! it). A tool already allowed always in this live session is allowed
//! without asking.

use std::collections::HashSet;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::mapping::Tools;
use super::schema::{PermissionOption, RequestPermissionRequest};
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
    let call = &request.tool_call;
    let id = &call.tool_call_id;
    let name = call
        .name
        .clone()
        .or_else(|| ask.tools.name_of(id).map(str::to_owned))
        .or_else(|| call.kind.clone())
        .unwrap_or_else(|| "other".to_owned());
    let summary = call.title.clone().unwrap_or_else(|| id.clone());

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
    let preference: &[&str] = match decision {
        ApprovalDecision::AllowAlways => {
            ask.always.insert(name);
            &["allow_always", "allow_once"]
        }
        ApprovalDecision::AllowOnce => &["allow_once"],
        _ => &["reject_once", "reject_always"],
    };
    Ok(Ok(select(&request.options, preference)))
}

fn select(options: &[PermissionOption], preference: &[&str]) -> Value {
    let chosen = preference
        .iter()
        .find_map(|kind| options.iter().find(|o| o.kind == *kind));
    match chosen {
        Some(o) => json!({"outcome": {"outcome": "selected", "optionId": o.option_id}}),
        None => cancelled(),
    }
}

fn cancelled() -> Value {
    json!({"outcome": {"outcome": "cancelled"}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_select_the_offered_option_of_their_kind() {
        let options: Vec<PermissionOption> = serde_json::from_value(json!([
            {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
            {"optionId": "no", "name": "No", "kind": "reject_once"}
        ]))
        .unwrap();
        let picked = |p: &[&str]| select(&options, p);
        assert_eq!(
            picked(&["allow_always", "allow_once"]),
            json!({"outcome": {"outcome": "selected", "optionId": "yes"}})
        );
        assert_eq!(
            picked(&["reject_once"]),
            json!({"outcome": {"outcome": "selected", "optionId": "no"}})
        );
        assert_eq!(
            picked(&["reject_always"]),
            json!({"outcome": {"outcome": "cancelled"}})
        );
    }
}
