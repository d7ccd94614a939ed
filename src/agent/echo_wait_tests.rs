//! Tests of the echo agent's waits and limits: chunk delay and `::sleep` in
//! paused time, cancellation at every wait, a closed sink, one million
//! chunks, determinism across runs, and a `Send` turn future.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use crate::agent::testing::{ask_line, echo_events, raw, EchoTurn, RecordingSink};
use crate::agent::{
    run_turn, ApprovalDecision, AskOutcome, Backend, TurnInput, TurnOutcome, SINK_CLOSED_MESSAGE,
};

#[tokio::test(start_paused = true)]
async fn sleep_and_delay_take_virtual_time() {
    let start = Instant::now();
    assert_eq!(echo_events("::sleep 500\na").await, ["msg:a"]);
    assert_eq!(start.elapsed(), Duration::from_millis(500));

    let start = Instant::now();
    assert_eq!(
        echo_events("::chunk 1\n::delay 100\nabc").await,
        ["msg:a", "msg:b", "msg:c"]
    );
    assert_eq!(start.elapsed(), Duration::from_millis(300));

    let start = Instant::now();
    let mut turn = EchoTurn::new("ab\n::delay 0\ncd").chunk(1);
    turn.settings.chunk_delay_ms = 70;
    assert_eq!(
        turn.events().await.1,
        ["msg:a", "msg:b", "msg:\n", "msg:c", "msg:d"]
    );
    assert_eq!(start.elapsed(), Duration::from_millis(140));

    let start = Instant::now();
    assert_eq!(echo_events("::delay 50\n::think x").await, ["thought:x"]);
    assert_eq!(start.elapsed(), Duration::from_millis(50));
}

/// Runs `turn` with a cancel `ms` into paused time: it must end `Cancelled`
/// at that very instant. Gives the lines it wrote.
async fn cancelled_at(turn: EchoTurn<'_>, ms: u64) -> Vec<String> {
    let mut sink = RecordingSink::default();
    let start = Instant::now();
    assert_eq!(
        turn.run_cancelled_after(&mut sink, ms).await,
        TurnOutcome::Cancelled
    );
    assert_eq!(start.elapsed(), Duration::from_millis(ms));
    sink.lines()
}

#[tokio::test(start_paused = true)]
async fn cancel_during_chunk_delay() {
    let turn = EchoTurn::new("::delay 200\nabcdef").chunk(1);
    assert_eq!(cancelled_at(turn, 450).await, ["msg:a", "msg:b"]);
}

#[tokio::test(start_paused = true)]
async fn cancel_during_sleep() {
    let turn = EchoTurn::new("a\n::sleep 3600000\nb");
    assert_eq!(cancelled_at(turn, 100).await, ["msg:a"]);
}

#[tokio::test(start_paused = true)]
async fn cancel_during_ask_and_approval_waits() {
    let turn = EchoTurn::new("::ask Sure?\nafter");
    assert_eq!(cancelled_at(turn, 50).await, [ask_line("Sure?")]);
    let turn = EchoTurn::new("::approve rm\nafter");
    assert_eq!(
        cancelled_at(turn, 50).await,
        ["tool_call:tc_1:rm:{}", "approval:rm:{}"]
    );
}

#[tokio::test]
async fn already_cancelled_turn_stops_at_first_chunk() {
    let turn = EchoTurn::new("::tool a\nhello");
    turn.cancel.cancel();
    let (outcome, lines) = turn.events().await;
    assert_eq!(outcome, TurnOutcome::Cancelled);
    assert_eq!(lines, ["tool_call:tc_1:a:{}", "tool_result:tc_1:a:{}"]);
}

#[tokio::test]
async fn closed_sink_stops_the_turn() {
    let turn = EchoTurn::new("::chunk 1\n::repeat 1000 x");
    let mut sink = RecordingSink {
        close_after: Some(3),
        ..Default::default()
    };
    assert_eq!(
        turn.run(&mut sink).await,
        TurnOutcome::Failed(SINK_CLOSED_MESSAGE.into())
    );
    assert_eq!(sink.message_chunks, 4);
    assert_eq!(sink.lines().len(), 3);
}

/// Runs `turn` to completion into a counting sink: (message chunks, bytes).
async fn counted(turn: EchoTurn<'_>) -> (usize, usize) {
    let mut sink = RecordingSink {
        count_only: true,
        ..Default::default()
    };
    assert_eq!(turn.run(&mut sink).await, TurnOutcome::Completed);
    (sink.message_chunks, sink.message_bytes)
}

#[tokio::test]
async fn one_million_chunks() {
    let turn = EchoTurn::new("::chunk 1\n::repeat 1000000 x");
    assert_eq!(counted(turn).await, (1_000_000, 1_000_000));
}

#[tokio::test]
async fn sixteen_mib_repeat_in_one_chunk() {
    let turn = EchoTurn::new("a\n::repeat 8388608 xy").chunk(u32::MAX);
    assert_eq!(counted(turn).await, (2, 1 + 1 + 16 * 1024 * 1024));
}

#[tokio::test]
async fn same_inputs_same_echo_events() {
    let prompt = "x\n::tool t {\"b\":2,\"a\":1}\n::ask q\n::approve z\n::repeat 40 ab\n::think ok";
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut sink = RecordingSink::default();
        sink.asks
            .push_back(AskOutcome::Accept(raw(r#"{"answer":"y"}"#)));
        sink.approvals.push_back(ApprovalDecision::Rejected);
        EchoTurn::new(prompt).run(&mut sink).await;
        runs.push(sink.lines());
    }
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0].len(), 15);
}

#[test]
fn turn_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let turn = EchoTurn::new("x");
    let mut sink = RecordingSink::default();
    let input = TurnInput {
        session_id: "s",
        turn_id: "t",
        agent_alias: "a",
        cwd: Path::new("."),
        prompt: turn.prompt,
        system_prompt: "",
        context: &turn.context,
        settings: &turn.settings,
        always_allowed: &turn.allowed,
        acp_hosts: None,
        deadline: std::time::Instant::now()
            + std::time::Duration::from_secs(turn.settings.timeout_secs),
    };
    let fut = run_turn(Backend::Command, input, &mut sink, &turn.cancel);
    assert_send(&fut);
}
