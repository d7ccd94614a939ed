#!/usr/bin/env bash
# A short fuzzing pass for CI (docs/reliability.md, "Fuzzing"): installs
# cargo-fuzz if missing, seeds the corpora (fuzz/seed_corpus.sh), then runs
# every fuzz target for a bounded time over its corpus, one job each. It
# fails when a target finds a crash (its input is left in
# fuzz/artifacts/<target>/) or does not build.
#
# Built without a sanitizer (`-s none`): the code under test is safe Rust,
# and AddressSanitizer would triple the build time and cut executions by
# two to three times; the panics and assertions are what the targets check.
#
# Usage: scripts/fuzz_smoke.sh [SECONDS_PER_TARGET]   (default 25)
# Needs a nightly toolchain (`rustup toolchain install nightly`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
secs=${1:-25}
targets=(frames gateway_http config_toml bridge_input)

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
fuzz/seed_corpus.sh >/dev/null

start=$SECONDS
cargo +nightly fuzz build -s none
echo "build: $((SECONDS - start)) s"

failed=()
for t in "${targets[@]}"; do
    t0=$SECONDS
    log=$(mktemp)
    # -max_len bounds the inputs the mutator grows (the seeds are shorter).
    if cargo +nightly fuzz run -s none "$t" -- \
        -max_total_time="$secs" -max_len=4096 -jobs=1 -workers=1 \
        -print_final_stats=1 >"$log" 2>&1; then
        echo "$t: ok, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in $((SECONDS - t0)) s"
    else
        echo "$t: FAILED (last lines below; the input is in fuzz/artifacts/$t/)"
        tail -n 40 "$log"
        failed+=("$t")
    fi
    rm -f "$log"
done
echo "total: $((SECONDS - start)) s"
if ((${#failed[@]})); then
    echo "fuzz smoke failed: ${failed[*]}"
    exit 1
fi
