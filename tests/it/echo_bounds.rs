//! A turn's memory is bounded whatever the backend produces: the
//! echo `::context` bomb (the context fed back into itself, ~3× a
//! turn) is cut at 16 MiB like `::repeat`, the retained context is compacted
//! by bytes, and the session survives a restart and rehydrates within bounds.

// Unix only: reads the daemon's peak memory from /proc (VmHWM).

use crate::common;

use std::time::Duration;

use common::acp::echo_config;
use common::acp::AcpEnv;

const ITEM_MAX: usize = 16 * 1024 * 1024;
const SUFFIX: &str = "…[truncated]";

/// Peak resident set of the daemon, in MiB.
fn peak_mib(d: &common::Daemon) -> u64 {
    d.peak_rss_kib().expect("VmHWM") / 1024
}

#[test]
fn the_context_bomb_is_bounded_and_the_session_survives_a_restart() {
    let (mut env, mut rpc) = AcpEnv::with_session(&echo_config(""), "bomb", "acp");
    let mut longest = 0;
    for turn in 1..=14 {
        let id = rpc.start_prompt("bomb", "::chunk 65536\n::context");
        let t = rpc.finish_turn("bomb", &id, Duration::from_secs(60));
        let text = t.text();
        assert_eq!(t.turn_complete()["outcome"], "completed", "turn {turn}");
        assert!(
            text.len() <= ITEM_MAX + SUFFIX.len(),
            "turn {turn}: {} bytes",
            text.len()
        );
        longest = longest.max(text.len());
    }
    assert_eq!(
        longest,
        ITEM_MAX + SUFFIX.len(),
        "the bomb reached the bound"
    );
    let peak = peak_mib(env.d());
    eprintln!("context bomb, 14 turns: peak RSS {peak} MiB");
    assert!(peak < 1024, "peak RSS {peak} MiB");

    // Rehydration after a restart stays bounded too.
    let mut rpc = env.restart();
    let id = rpc.start_prompt("bomb", "after");
    let t = rpc.finish_turn("bomb", &id, Duration::from_secs(60));
    assert_eq!(t.turn_complete()["outcome"], "completed");
    let peak = peak_mib(env.d());
    eprintln!("rehydrating the bombed session: peak RSS {peak} MiB");
    assert!(peak < 512, "peak RSS {peak} MiB after rehydration");
}

#[test]
fn one_16_mb_repeat_turn_peaks_under_240_mib_and_gives_memory_back() {
    let (env, mut rpc) = AcpEnv::with_session(&echo_config(""), "rep", "acp");
    let id = rpc.start_prompt("rep", "::chunk 65536\n::repeat 16000000 y");
    let t = rpc.finish_turn("rep", &id, Duration::from_secs(60));
    assert_eq!(t.turn_complete()["outcome"], "completed");
    let peak = peak_mib(env.d());
    let after = env.d().rss_kib().unwrap() / 1024;
    eprintln!("one 16 MB ::repeat turn (acp): peak {peak} MiB, resident after {after} MiB");
    // Before: ~295 MiB peak, ~240 MiB kept.
    assert!(peak < 240, "peak RSS {peak} MiB");
    assert!(after < 160, "resident {after} MiB after the turn");
}
