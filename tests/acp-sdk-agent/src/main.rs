//! The ACP test agent written with the official Rust SDK's agent side
//! (`agent-client-protocol`, `Agent.v1()` over `Stdio`): the conformance
//! counterpart of examples/acp_test_agent.rs for tests/it/acp_sdk_agent.rs.
//! This file owns the wiring: initialize (advertising `loadSession`),
//! `session/new`, `session/load` (replaying the history), `session/prompt`
//! (run by [`turn`] outside the SDK's dispatch loop) and `session/cancel`.
//! Prompts are directives, one per line (see [`turn`]); sessions are kept in
//! `$ACP_TEST_STATE_DIR` or `<cwd>/.acp-sdk-agent` (see [`store`]).

mod store;
mod turn;

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, SessionNotification, SessionUpdate,
};
use agent_client_protocol::{on_receive_notification, on_receive_request, Agent, Error, Stdio};

use store::Sessions;

/// The sessions of this process, shared by the handlers and the turns.
pub type Shared = Arc<Mutex<Sessions>>;

/// Locks the sessions; a panicked turn must not wedge the others.
pub fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Sessions> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let shared: Shared = Arc::default();
    let (new, load, prompt, cancel) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
    );
    Agent
        .v1()
        .name("acp-sdk-agent")
        .on_receive_request(
            async |init: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(init.protocol_version)
                        .agent_capabilities(AgentCapabilities::new().load_session(true))
                        .agent_info(Implementation::new("acp-sdk-agent", "1")),
                )
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, _cx| {
                let id = lock(&new).create(&req.cwd);
                match id {
                    Ok(id) => responder.respond(NewSessionResponse::new(id)),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx| {
                let id = req.session_id.0.to_string();
                let history = lock(&load).load(&id, &req.cwd);
                let history = match history {
                    Ok(h) => h,
                    Err(e) => return responder.respond_with_error(e),
                };
                // The replay precedes the answer (ACP: "stream the entire
                // conversation back … then respond").
                for (user, agent) in history {
                    for (text, kind) in [(user, true), (agent, false)] {
                        let chunk = ContentChunk::new(ContentBlock::from(text));
                        let update = if kind {
                            SessionUpdate::UserMessageChunk(chunk)
                        } else {
                            SessionUpdate::AgentMessageChunk(chunk)
                        };
                        cx.send_notification(SessionNotification::new(id.clone(), update))?;
                    }
                }
                responder.respond(LoadSessionResponse::new())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx| {
                let shared = prompt.clone();
                lock(&shared).uncancel(&req.session_id.0);
                // A turn waits for the client's answers (permission, fs): it
                // must run outside the dispatch loop that delivers them.
                cx.spawn({
                    let cx = cx.clone();
                    async move {
                        let _ = match turn::run(&cx, &shared, req).await {
                            Ok(r) => responder.respond(r),
                            Err(e) => responder.respond_with_error(e),
                        };
                        Ok(())
                    }
                })
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                lock(&cancel).cancel(&n.session_id.0);
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}
