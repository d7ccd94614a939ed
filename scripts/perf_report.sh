#!/usr/bin/env bash
# Performance report (docs/performance.md): builds the benches once, then runs every
# scenario of the issues back to back in one sitting, each against its own same-run
# baseline, and keeps every bench's full output.
#
#   scripts/perf_report.sh [OUT_DIR]     # default: perf-report-<UTC time>
#
# Writes OUT_DIR/<bench>.txt for each bench and OUT_DIR/summary.txt (the machine, the
# commit, the load average before and after each bench, and each bench's verdict
# lines). The table in docs/performance.md is filled from one such directory.
# CARGO_TARGET_DIR is honoured as by cargo. Takes about 5 minutes on 2 cores once built.
{
set -u
cd "$(dirname "$0")/.."
out=${1:-perf-report-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
summary="$out/summary.txt"

benches=(e2e_load idle_connections acp_stream upload config_commit gateway stack)

echo "building the benches (bench profile)..." >&2
cargo bench --no-run $(printf -- '--bench %s ' "${benches[@]}") >"$out/build.txt" 2>&1 || {
    echo "perf_report: the build failed, see $out/build.txt" >&2
    exit 1
}

{
    echo "perf report, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
} >"$summary"

status=0
for b in "${benches[@]}"; do
    echo "running $b..." >&2
    before=$(cut -d' ' -f1-3 /proc/loadavg)
    args=()
    # criterion: shorter than its defaults, still tens of thousands of samples.
    [ "$b" = stack ] && args=(-- --warm-up-time 1 --measurement-time 3)
    if ! cargo bench --bench "$b" "${args[@]}" >"$out/$b.txt" 2>&1; then
        status=1
        echo "perf_report: $b FAILED (see $out/$b.txt)" >&2
    fi
    {
        echo
        echo "== $b (load average before: $before, after: $(cut -d' ' -f1-3 /proc/loadavg))"
        # The bench's own report: everything but cargo's and criterion's progress lines.
        grep -v -E '^\s*(Compiling|Finished|Running|Benchmarking|Found [0-9]+ outliers|[0-9]+ \([0-9.]+%\) (low|high))' "$out/$b.txt" |
            grep -v -E '^\s*(change:|time:\s+\[[-+−])' | tail -n 40
    } >>"$summary"
done
cat "$summary"
exit $status
}
