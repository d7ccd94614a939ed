//! One `session/prompt` turn: the prompt's text is a list of directives, one
//! per line, each sent through the SDK's client handle:
//!
//! - `say TEXT` / `think TEXT`: one message / thought chunk;
//! - `tool ID KIND TITLE`: a tool call (`pending`, `rawInput {"arg":1}`), an
//!   `in_progress` update, then `completed` with `rawOutput {"ok":true}`;
//! - `ask ID`: a tool call then `session/request_permission` (options `yes`
//!   allow_once, `always` allow_always, `no` reject_once); says
//!   `permission: <optionId>` or `permission: cancelled`;
//! - `read PATH` / `write PATH TEXT`: `fs/*`; says `read: <content>`,
//!   `wrote` or `fs error <code>`;
//! - `plan`: a `plan` update; `history`: says how many earlier prompts the
//!   session remembers; `pid`: says the process id;
//! - `sleep MS` / `hang`: waits MS ms / until `session/cancel` (a cancel
//!   ends the turn `cancelled`);
//! - `stop REASON`: the stop reason (default `end_turn`);
//! - `flood N`: N message chunks `.`;
//! - `crash CODE`: exits with status CODE, mid-turn, once the client has
//!   read everything sent before it (a `fs/read_text_file` of `/`, which
//!   the client refuses, makes the round trip: the SDK writes from its own
//!   task, and an exit at once could lose what it had not written yet).
//!
//! A prompt without directives is answered `you said: <prompt>`. A finished
//! turn is appended to the session's history.

use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, PermissionOption, PermissionOptionKind, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, PromptRequest, PromptResponse, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    StopReason, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, WriteTextFileRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, Error};
use serde_json::json;

use crate::{lock, Shared};

/// How often a waiting directive looks at the cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(10);

struct Turn<'a> {
    cx: &'a ConnectionTo<Client>,
    shared: &'a Shared,
    session: String,
}

pub async fn run(
    cx: &ConnectionTo<Client>,
    shared: &Shared,
    req: PromptRequest,
) -> Result<PromptResponse, Error> {
    let t = Turn {
        cx,
        shared,
        session: req.session_id.0.to_string(),
    };
    let history = lock(shared).history(&t.session)?;
    let text: String = req
        .prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let mut said = String::new();
    let mut stop = StopReason::EndTurn;
    let mut directives = 0;
    for line in text.lines() {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        directives += 1;
        let say = match word {
            "say" => Some(rest.to_owned()),
            "think" => {
                t.chunk(false, rest)?;
                None
            }
            "tool" => {
                t.tool(rest)?;
                None
            }
            "ask" => Some(t.ask(rest).await?),
            "read" => Some(t.read(rest).await),
            "write" => Some(t.write(rest).await),
            "plan" => {
                let entry =
                    PlanEntry::new("step", PlanEntryPriority::High, PlanEntryStatus::Pending);
                t.update(SessionUpdate::Plan(Plan::new(vec![entry])))?;
                None
            }
            "history" => Some(format!("history: {}", history.len())),
            "pid" => Some(format!("pid: {}", std::process::id())),
            "sleep" => {
                let ms = rest.parse().unwrap_or(0);
                t.wait(Some(Instant::now() + Duration::from_millis(ms)))
                    .await;
                None
            }
            "hang" => {
                t.wait(None).await;
                None
            }
            "flood" => {
                for _ in 0..rest.parse::<u64>().unwrap_or(0) {
                    t.chunk(true, ".")?;
                }
                None
            }
            "crash" => {
                t.read("/").await;
                std::process::exit(rest.parse().unwrap_or(1));
            }
            "stop" => {
                stop = serde_json::from_value(json!(rest)).map_err(Error::into_internal_error)?;
                None
            }
            _ => {
                directives -= 1;
                None
            }
        };
        if let Some(s) = say {
            t.chunk(true, &s)?;
            said.push_str(&s);
        }
        if t.cancelled() {
            break;
        }
    }
    if directives == 0 {
        said = format!("you said: {text}");
        t.chunk(true, &said)?;
    }
    if t.cancelled() {
        stop = StopReason::Cancelled;
    }
    lock(shared).record(&t.session, (text, said))?;
    Ok(PromptResponse::new(stop))
}

impl Turn<'_> {
    fn update(&self, update: SessionUpdate) -> Result<(), Error> {
        self.cx
            .send_notification(SessionNotification::new(self.session.clone(), update))
    }

    /// A message (`agent`) or thought chunk.
    fn chunk(&self, agent: bool, text: &str) -> Result<(), Error> {
        let chunk = ContentChunk::new(ContentBlock::from(text));
        self.update(if agent {
            SessionUpdate::AgentMessageChunk(chunk)
        } else {
            SessionUpdate::AgentThoughtChunk(chunk)
        })
    }

    fn status(&self, id: &str, fields: ToolCallUpdateFields) -> Result<(), Error> {
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_owned(),
            fields,
        )))
    }

    fn tool(&self, rest: &str) -> Result<(), Error> {
        let mut parts = rest.splitn(3, ' ');
        let (id, kind, title) = (
            parts.next().unwrap_or("t"),
            parts.next().unwrap_or("other"),
            parts.next().unwrap_or(""),
        );
        let kind: ToolKind = serde_json::from_value(json!(kind)).unwrap_or(ToolKind::Other);
        let call = ToolCall::new(id.to_owned(), title)
            .kind(kind)
            .status(ToolCallStatus::Pending)
            .raw_input(json!({"arg": 1}));
        self.update(SessionUpdate::ToolCall(call))?;
        self.status(
            id,
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        )?;
        let done = ToolCallContent::Content(Content::new("done"));
        self.status(
            id,
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::Completed)
                .raw_output(json!({"ok": true}))
                .content(vec![done]),
        )
    }

    async fn ask(&self, id: &str) -> Result<String, Error> {
        let title = format!("Edit {id}");
        let call = ToolCall::new(id.to_owned(), title.clone())
            .kind(ToolKind::Edit)
            .status(ToolCallStatus::Pending);
        self.update(SessionUpdate::ToolCall(call))?;
        let options = vec![
            PermissionOption::new("yes", "Yes", PermissionOptionKind::AllowOnce),
            PermissionOption::new("always", "Always", PermissionOptionKind::AllowAlways),
            PermissionOption::new("no", "No", PermissionOptionKind::RejectOnce),
        ];
        let asked = ToolCallUpdate::new(
            id.to_owned(),
            ToolCallUpdateFields::new()
                .title(title)
                .kind(ToolKind::Edit),
        );
        let request = RequestPermissionRequest::new(self.session.clone(), asked, options);
        let answer = self.cx.send_request(request).block_task().await;
        let said = match answer.map(|r| r.outcome) {
            Ok(RequestPermissionOutcome::Selected(s)) => format!("permission: {}", s.option_id.0),
            Ok(RequestPermissionOutcome::Cancelled) => "permission: cancelled".to_owned(),
            Ok(_) | Err(_) => "permission: invalid".to_owned(),
        };
        let allowed = said == "permission: yes" || said == "permission: always";
        let status = if allowed {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        self.status(id, ToolCallUpdateFields::new().status(status))?;
        Ok(said)
    }

    async fn read(&self, path: &str) -> String {
        let request = ReadTextFileRequest::new(self.session.clone(), path);
        match self.cx.send_request(request).block_task().await {
            Ok(r) => format!("read: {}", r.content),
            Err(e) => format!("fs error {}", i32::from(e.code)),
        }
    }

    async fn write(&self, rest: &str) -> String {
        let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
        let request = WriteTextFileRequest::new(self.session.clone(), path, content);
        match self.cx.send_request(request).block_task().await {
            Ok(_) => "wrote".to_owned(),
            Err(e) => format!("fs error {}", i32::from(e.code)),
        }
    }

    fn cancelled(&self) -> bool {
        lock(self.shared).is_cancelled(&self.session)
    }

    /// Waits until `until` (forever if `None`) or a `session/cancel`.
    async fn wait(&self, until: Option<Instant>) {
        while !self.cancelled() && until.is_none_or(|u| Instant::now() < u) {
            tokio::time::sleep(CANCEL_POLL).await;
        }
    }
}
