//! Tests of the echo agent's directives: exact event sequences for every
//! directive and determinism rule of §10.3.

use super::ASK_SCHEMA;
use crate::agent::testing::{ask_line, echo_events, raw, EchoTurn, RecordingSink};
use crate::agent::{ApprovalDecision, AskOutcome, ContextMessage, Role, TurnOutcome};
use serde_json::value::RawValue;

#[tokio::test]
async fn spec_example() {
    assert_eq!(
        echo_events("Hello\n::tool echo {\"text\":\"x\"}\n::think done").await,
        [
            "msg:Hello",
            r#"tool_call:tc_1:echo:{"text":"x"}"#,
            r#"tool_result:tc_1:echo:{"text":"x"}"#,
            "thought:done",
        ]
    );
}

#[tokio::test]
async fn text_items_are_joined_with_newline_prefixes() {
    assert_eq!(
        echo_events("a\nb\n\nc").await,
        ["msg:a", "msg:\nb", "msg:\n", "msg:\nc"]
    );
    // A first empty item emits nothing but still counts as the first item.
    assert_eq!(echo_events("\nx").await, ["msg:\nx"]);
    assert!(echo_events("").await.is_empty());
    assert!(echo_events("\n").await.is_empty());
    // Lines split like str::lines(): CRLF, no empty last line.
    assert_eq!(echo_events("a\r\nb\r\n").await, ["msg:a", "msg:\nb"]);
    assert_eq!(echo_events("a\n").await, ["msg:a"]);
    // Directive lines are not text items.
    assert_eq!(
        echo_events("::delay 0\n::think t\nb").await,
        ["thought:t", "msg:b"]
    );
}

#[tokio::test]
async fn chunking_counts_the_prefix_and_scalar_values() {
    let (_, lines) = EchoTurn::new("ab\ncdef").chunk(3).events().await;
    assert_eq!(lines, ["msg:ab", "msg:\ncd", "msg:ef"]);
    let (_, lines) = EchoTurn::new("héllo wörld").chunk(4).events().await;
    assert_eq!(lines, ["msg:héll", "msg:o wö", "msg:rld"]);
    assert_eq!(
        echo_events("::chunk 2\nabcde\n::chunk 0\nxyz").await,
        [
            "msg:ab", "msg:cd", "msg:e", "msg:\n:", "msg::c", "msg:hu", "msg:nk", "msg: 0",
            "msg:\nx", "msg:yz"
        ]
    );
}

#[tokio::test]
async fn think_is_its_own_segment() {
    assert_eq!(
        echo_events("a\n::think xyz\nb").await,
        ["msg:a", "thought:xyz", "msg:\nb"]
    );
    let (_, lines) = EchoTurn::new("::think abcde\n::think\n::think ")
        .chunk(2)
        .events()
        .await;
    assert_eq!(lines, ["thought:ab", "thought:cd", "thought:e"]);
}

#[tokio::test]
async fn tool_ids_count_tools_and_approvals() {
    let turn = EchoTurn::new("::tool a\n::approve b\n::tool c {\"k\": [1, 2.50], \"a\": \"x y\"}");
    let mut sink = RecordingSink::default();
    sink.approvals.push_back(ApprovalDecision::AllowOnce);
    assert_eq!(turn.run(&mut sink).await, TurnOutcome::Completed);
    assert_eq!(
        sink.lines(),
        [
            "tool_call:tc_1:a:{}",
            "tool_result:tc_1:a:{}",
            "tool_call:tc_2:b:{}",
            "approval:b:{}",
            "tool_result:tc_2:b:{}",
            r#"tool_call:tc_3:c:{"k":[1,2.50],"a":"x y"}"#,
            r#"tool_result:tc_3:c:{"k":[1,2.50],"a":"x y"}"#,
        ]
    );
}

#[tokio::test]
async fn big_tool() {
    assert_eq!(
        echo_events("::tool big {\"bytes\":5}").await,
        [
            r#"tool_call:tc_1:big:{"bytes":5}"#,
            "tool_result:tc_1:big:xxxxx"
        ]
    );
    assert_eq!(
        echo_events("::tool big {\"bytes\":16777216}").await,
        [
            r#"tool_call:tc_1:big:{"bytes":16777216}"#,
            "tool_result:tc_1:big:<16777216 x>"
        ]
    );
    assert_eq!(
        echo_events("::tool big {\"bytes\":16777217}").await,
        ["msg:::tool big {\"byt", "msg:es\":16777217}"]
    );
    let turn = EchoTurn::new("::approve big {\"bytes\":3}");
    let mut sink = RecordingSink::default();
    sink.approvals.push_back(ApprovalDecision::AllowOnce);
    turn.run(&mut sink).await;
    assert_eq!(sink.lines()[2], "tool_result:tc_1:big:xxx");
}

#[tokio::test]
async fn every_approval_decision() {
    let cases = [
        (ApprovalDecision::AllowOnce, r#"{"p":"/tmp"}"#.to_owned()),
        (ApprovalDecision::AllowAlways, r#"{"p":"/tmp"}"#.to_owned()),
        (ApprovalDecision::Rejected, "denied: rejected".to_owned()),
        (
            ApprovalDecision::Replaced("use ls".into()),
            "denied: replaced: use ls".to_owned(),
        ),
        (ApprovalDecision::TimedOut, "denied: timed_out".to_owned()),
        (
            ApprovalDecision::Unreachable,
            "denied: unreachable".to_owned(),
        ),
    ];
    for (decision, output) in cases {
        let turn = EchoTurn::new("::approve rm { \"p\" : \"/tmp\" }");
        let mut sink = RecordingSink::default();
        sink.approvals.push_back(decision);
        assert_eq!(turn.run(&mut sink).await, TurnOutcome::Completed);
        assert_eq!(
            sink.lines(),
            [
                r#"tool_call:tc_1:rm:{"p":"/tmp"}"#.to_owned(),
                r#"approval:rm:{"p":"/tmp"}"#.to_owned(),
                format!("tool_result:tc_1:rm:{output}"),
            ]
        );
    }
}

#[tokio::test]
async fn allow_always_skips_later_requests_for_that_name() {
    let turn = EchoTurn::new("::approve rm\n::approve rm {\"a\":1}\n::approve ls");
    let mut sink = RecordingSink::default();
    sink.approvals
        .extend([ApprovalDecision::AllowAlways, ApprovalDecision::Rejected]);
    assert_eq!(turn.run(&mut sink).await, TurnOutcome::Completed);
    assert_eq!(
        sink.lines(),
        [
            "tool_call:tc_1:rm:{}",
            "approval:rm:{}",
            "tool_result:tc_1:rm:{}",
            r#"tool_call:tc_2:rm:{"a":1}"#,
            r#"tool_result:tc_2:rm:{"a":1}"#,
            "tool_call:tc_3:ls:{}",
            "approval:ls:{}",
            "tool_result:tc_3:ls:denied: rejected",
        ]
    );
}

#[tokio::test]
async fn names_always_allowed_by_the_session_skip_the_request() {
    let mut turn = EchoTurn::new("::approve rm");
    turn.allowed.insert("rm".into());
    assert_eq!(
        turn.events().await.1,
        ["tool_call:tc_1:rm:{}", "tool_result:tc_1:rm:{}"]
    );
}

#[tokio::test]
async fn every_ask_outcome() {
    let cases = [
        (
            AskOutcome::Accept(raw(r#"{"answer":"yes"}"#)),
            "answer: yes",
        ),
        (
            AskOutcome::Accept(raw(r#"{ "b" : 1.0, "answer" : 5 }"#)),
            r#"answer: {"b":1.0,"answer":5}"#,
        ),
        (AskOutcome::Accept(raw(r#"{}"#)), "answer: {}"),
        (AskOutcome::Decline, "answer: declined"),
        (AskOutcome::Cancel, "answer: cancelled"),
        (
            AskOutcome::Unavailable("no client".into()),
            "answer: unavailable",
        ),
    ];
    for (outcome, text) in cases {
        let turn = EchoTurn::new("hi\n::ask Continue?").chunk(1000);
        let mut sink = RecordingSink::default();
        sink.asks.push_back(outcome);
        assert_eq!(turn.run(&mut sink).await, TurnOutcome::Completed);
        assert_eq!(
            sink.lines(),
            [
                "msg:hi".to_owned(),
                ask_line("Continue?"),
                format!("msg:\n{text}")
            ]
        );
    }
}

#[tokio::test]
async fn ask_as_the_first_text_item() {
    let turn = EchoTurn::new("::think hm\n::ask Name?\nok");
    let mut sink = RecordingSink::default();
    sink.asks
        .push_back(AskOutcome::Accept(raw(r#"{"answer":"Zoë\nX"}"#)));
    assert_eq!(turn.run(&mut sink).await, TurnOutcome::Completed);
    assert_eq!(
        sink.lines(),
        [
            "thought:hm".to_owned(),
            ask_line("Name?"),
            "msg:answer: Zoë\nX".to_owned(),
            "msg:\nok".to_owned()
        ]
    );
}

#[test]
fn ask_schema_is_the_spec_schema() {
    let schema: Box<RawValue> = serde_json::from_str(ASK_SCHEMA).unwrap();
    assert_eq!(
        schema.get(),
        r#"{"type":"object","properties":{"answer":{"type":"string","title":"Answer"}},"required":["answer"]}"#
    );
}

#[tokio::test]
async fn repeat_is_one_text_item() {
    assert_eq!(echo_events("::repeat 3 ab").await, ["msg:ababab"]);
    assert_eq!(
        echo_events("a\n::repeat 2 xyz").await,
        ["msg:a", "msg:\nxyzxyz"]
    );
    assert_eq!(echo_events("::repeat 0 x\ny").await, ["msg:\ny"]);
    assert_eq!(
        echo_events("::repeat 20 é").await,
        ["msg:éééééééééééééééé", "msg:éééé"]
    );
    assert_eq!(
        echo_events("::repeat 16777217 x").await,
        ["msg:::repeat 1677721", "msg:7 x"]
    );
}

#[tokio::test]
async fn context_is_the_starting_context() {
    let mut turn = EchoTurn::new("::context\n::context").chunk(10_000);
    turn.context = vec![
        ContextMessage::text(Role::User, "hi"),
        ContextMessage::text(Role::Assistant, "hi"),
    ];
    let doc = r#"{"messages":[{"role":"user","kind":"message","content":"hi"},{"role":"assistant","kind":"message","content":"hi"}]}"#;
    assert_eq!(
        turn.events().await.1,
        [format!("msg:{doc}"), format!("msg:\n{doc}")]
    );
    assert_eq!(echo_events("::context").await, [r#"msg:{"messages":[]}"#]);
}

#[tokio::test]
async fn compact_directives_emit_nothing() {
    assert_eq!(
        echo_events("::compact\nhi\n::compact-empty").await,
        ["msg:hi"]
    );
}

#[tokio::test]
async fn fail_ends_the_turn() {
    let (outcome, lines) = EchoTurn::new("a\n::fail boom now\nb").events().await;
    assert_eq!(outcome, TurnOutcome::Failed("boom now".into()));
    assert_eq!(lines, ["msg:a"]);
}

#[tokio::test]
async fn invalid_directives_are_text_lines() {
    assert_eq!(
        echo_events("::sleep abc\n  ::nope x\n::tool x [1]").await,
        ["msg:::sleep abc", "msg:\n  ::nope x", "msg:\n::tool x [1]"]
    );
}
