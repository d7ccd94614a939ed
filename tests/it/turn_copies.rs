//! The copies of one big turn (docs/reliability.md "The
//! copies of a 16 MB turn"): one ACP `::repeat` of 16 MB, streamed in the
//! same 64 KiB chunks as ever, peaks under 8× its content and keeps under
//! 4× resident once the turn is over (b845396: ~14.6× and ~6×), and a
//! second turn on the same session does not copy the retained context.
//! Figures: scripts/turn_memory.py.

// Unix only: reads the daemon's peak and resident memory from /proc (VmHWM, VmRSS).

use crate::common;

use std::time::Duration;

use common::acp::echo_config;
use common::acp::AcpEnv;
use common::wait::eventually;

const CONTENT: usize = 16_000_000;
const CONTENT_MIB: f64 = CONTENT as f64 / (1024.0 * 1024.0);

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

#[test]
fn one_16_mb_acp_turn_peaks_under_8x_its_content_and_keeps_under_4x() {
    let (env, mut rpc) = AcpEnv::with_session(&echo_config(""), "rep", "acp");
    let id = rpc.start_prompt("rep", "::chunk 65536\n::repeat 16000000 y");
    let t = rpc.finish_turn("rep", &id, Duration::from_secs(120));
    assert_eq!(t.turn_complete()["outcome"], "completed");
    // The repeat is streamed in pieces, chunked exactly as the whole item.
    let chunks = t.of_type("agent_message_chunk");
    assert_eq!(chunks.len(), CONTENT.div_ceil(65536));
    let text = t.text();
    assert_eq!(text.len(), CONTENT);
    assert!(text.bytes().all(|b| b == b'y'));
    let peak = mib(env.d().peak_rss_kib().expect("VmHWM"));
    eprintln!(
        "one 16 MB ::repeat turn (acp): peak {peak:.0} MiB ({:.1}x)",
        peak / CONTENT_MIB
    );
    assert!(peak < 8.0 * CONTENT_MIB, "peak RSS {peak:.0} MiB");
    // Freed heap goes back once the turn has ended (the retained context,
    // 16 MB of it, stays).
    let after = eventually("resident under 4x", Duration::from_secs(5), || {
        let rss = mib(env.d().rss_kib()?);
        (rss < 4.0 * CONTENT_MIB).then_some(rss)
    });
    eprintln!(
        "resident after: {after:.0} MiB ({:.1}x)",
        after / CONTENT_MIB
    );

    // A second big turn borrows the retained context instead of copying it:
    // the peak grows by about its own content, not two.
    let id = rpc.start_prompt("rep", "::chunk 65536\n::repeat 16000000 z");
    let t = rpc.finish_turn("rep", &id, Duration::from_secs(120));
    assert_eq!(t.turn_complete()["outcome"], "completed");
    let peak2 = mib(env.d().peak_rss_kib().expect("VmHWM"));
    eprintln!("after a second turn: peak {peak2:.0} MiB");
    assert!(peak2 < 9.0 * CONTENT_MIB, "peak RSS {peak2:.0} MiB");
}
