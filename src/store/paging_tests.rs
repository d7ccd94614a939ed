use super::super::checkpoint::tests::{call, result, text};
use super::super::testing::{durable_session, durable_turn, store};
use super::super::TRUNCATION_SUFFIX;
use super::*;

fn json(page: &MessagesPage) -> String {
    serde_json::to_string(&page.messages).unwrap()
}

fn seqs(page: &MessagesPage) -> Vec<i64> {
    page.messages.iter().map(|m| m.seq).collect()
}

/// One finalized turn holding just its prompt.
async fn prompt_row(store: &Store, row: i64, prompt: &str) {
    store.turn_begin(row, "t", prompt).await.unwrap();
    store.turn_finalize(row, None).await.unwrap();
}

#[tokio::test]
async fn entries_match_the_spec_example() {
    let (_dir, store, _, s) = durable_session("page-example").await;
    store.turn_begin(s.row, "t", "hi").await.unwrap();
    store
        .checkpoint_append(
            s.row,
            &[
                call("tc_1", "{\"text\": \"x\"}"),
                result("tc_1", "{\"text\":\"x\"}"),
            ],
        )
        .await
        .unwrap();
    store.recover(s.row).await.unwrap();
    let page = store.durable_messages(s.row, None, 200).await.unwrap();
    assert_eq!((page.total, page.start), (4, 0));
    assert_eq!(
        json(&page),
        r#"[{"seq":1,"role":"user","kind":"message","content":"hi"},{"seq":2,"role":"assistant","kind":"tool_call","content":"","tool_call_id":"tc_1","tool_name":"echo","tool_input":{"text":"x"}},{"seq":3,"role":"tool","kind":"tool_result","content":"{\"text\":\"x\"}","tool_call_id":"tc_1","tool_name":"echo"},{"seq":4,"role":"system","kind":"interruption_marker","content":"Turn interrupted"}]"#
    );
}

#[tokio::test]
async fn pages_walk_backwards_from_before_index() {
    let (_dir, store, _, s) = durable_session("page-walk").await;
    let empty = store.durable_messages(s.row, None, 10).await.unwrap();
    assert_eq!((empty.total, empty.start, empty.messages.len()), (0, 0, 0));
    for n in 1..=7 {
        prompt_row(&store, s.row, &format!("p{n}")).await;
    }
    let page = store.durable_messages(s.row, None, 3).await.unwrap();
    assert_eq!((page.total, page.start, seqs(&page)), (7, 4, vec![5, 6, 7]));
    let page = store.durable_messages(s.row, Some(4), 3).await.unwrap();
    assert_eq!((page.start, seqs(&page)), (1, vec![2, 3, 4]));
    let page = store.durable_messages(s.row, Some(1), 3).await.unwrap();
    assert_eq!((page.start, seqs(&page)), (0, vec![1]));
    let page = store.durable_messages(s.row, Some(0), 3).await.unwrap();
    assert_eq!((page.start, page.messages.len()), (0, 0));
    let page = store.durable_messages(s.row, Some(1000), 2).await.unwrap();
    assert_eq!((page.total, page.start, seqs(&page)), (7, 5, vec![6, 7]));
    assert_eq!(page.messages[1].message.content, "p7");
}

#[tokio::test]
async fn pages_shrink_to_4_mib_and_keep_at_least_one_row() {
    let (_dir, store, _, s) = durable_session("page-shrink").await;
    let big = "x".repeat(1_000_000);
    for _ in 0..6 {
        prompt_row(&store, s.row, &big).await;
    }
    let page = store.durable_messages(s.row, None, 200).await.unwrap();
    assert_eq!(
        (page.total, page.start, seqs(&page)),
        (6, 2, vec![3, 4, 5, 6])
    );
    assert!(json(&page).len() <= PAGE_JSON_MAX);
    let page = store.durable_messages(s.row, Some(2), 200).await.unwrap();
    assert_eq!((page.start, seqs(&page)), (0, vec![1, 2]));

    // Rows whose JSON alone exceeds the budget still come one per page.
    let t = store.durable_create("t", "echo", "me", "/w").await.unwrap();
    let escaped = "\u{1}".repeat(PAGE_CONTENT_MAX); // 6 JSON bytes per byte
    prompt_row(&store, t.row, &escaped).await;
    prompt_row(&store, t.row, &escaped).await;
    let page = store.durable_messages(t.row, None, 200).await.unwrap();
    assert_eq!((page.start, seqs(&page)), (1, vec![2]));
    assert!(json(&page).len() > PAGE_JSON_MAX);
    assert!(!page.messages[0].truncated);
}

#[tokio::test]
async fn contents_over_1_mib_are_bounded_and_flagged() {
    let (_dir, store, _, s) = durable_session("page-truncate").await;
    let long = format!("{}é", "a".repeat(PAGE_CONTENT_MAX - 1));
    prompt_row(&store, s.row, &long).await;
    prompt_row(&store, s.row, &"b".repeat(PAGE_CONTENT_MAX)).await;
    let page = store.durable_messages(s.row, None, 200).await.unwrap();
    let first = &page.messages[0];
    assert!(first.truncated);
    assert_eq!(
        first.message.content,
        format!("{}{TRUNCATION_SUFFIX}", "a".repeat(PAGE_CONTENT_MAX - 1))
    );
    assert!(!page.messages[1].truncated);
    assert_eq!(page.messages[1].message.content.len(), PAGE_CONTENT_MAX);
    let text = serde_json::to_string(first).unwrap();
    assert!(text.ends_with(r#"[truncated]","truncated":true}"#));
    // The stored row keeps the full text.
    assert_eq!(
        store.durable_transcript(s.row).await.unwrap()[0]
            .message
            .content,
        long
    );
}

#[tokio::test]
async fn chat_pages_are_plain_messages() {
    let (_dir, store, _) = store("page-chat").await;
    store.chat_create("c", "echo", "me", "/w").await.unwrap();
    store
        .chat_append_turn("c", "hi", Some("hello"))
        .await
        .unwrap();
    store.chat_append_turn("c", "again", None).await.unwrap();
    // A durable row with the same id is a different store.
    let acp = store.durable_create("c", "echo", "me", "/w").await.unwrap();
    durable_turn(&store, acp.row, "t", "acp", &[text("x")]).await;

    let page = store.chat_messages("c", None, 2).await.unwrap();
    assert_eq!((page.total, page.start), (3, 1));
    assert_eq!(
        json(&page),
        r#"[{"seq":2,"role":"assistant","kind":"message","content":"hello"},{"seq":3,"role":"user","kind":"message","content":"again"}]"#
    );
    let page = store.chat_messages("c", Some(1), 2).await.unwrap();
    assert_eq!((page.start, seqs(&page)), (0, vec![1]));
    let none = store.chat_messages("missing", None, 2).await.unwrap();
    assert_eq!((none.total, none.messages.len()), (0, 0));
}
