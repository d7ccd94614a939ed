#!/usr/bin/env bash
# Windows build and tests, cross-compiled on Debian 12 and run under Wine.
#
# The target is x86_64-pc-windows-gnu. Debian's own toolchain packages do it
# with nothing downloaded but crates: `rustc-web` is a recent compiler,
# `rust-web-src` is the source of ITS standard library (where
# `cargo -Zbuild-std` looks for it: /usr/lib/rustlib/src/rust), mingw-w64
# links, Wine runs the result. `-Zbuild-std` is a nightly flag, so the stable
# compiler is told to accept it (RUSTC_BOOTSTRAP=1); the rustup toolchain on
# the PATH is not used here (it has no Windows std).
#
# Everything the build writes goes to $ZC_WIN (default target-win: the
# cargo target dir, a cargo home and a Wine prefix), never to target/debug,
# so the Linux build is untouched and a CI cache of target-win/ keeps the std
# build, the dependencies and the prefix for the next run.
#
# Usage: bash scripts/windows.sh [all|setup|check|build|lib|protocol|skipped]   (default all)
#        ZC_WIN_TESTS="golden pipe" bash scripts/windows.sh protocol   (only those modules)
#   setup     packages (apt-get, needs root when missing), Wine prefix, the DLL
#   check     cargo check of every target (the quickest way to see errors)
#   build     everything built: binary, examples, library and protocol tests
#   lib       the library's unit tests under Wine
#   protocol  the protocol tests (the modules of tests/it/) that run on Windows, under Wine
#   skipped   only the list of test modules not run on Windows, with reasons (no build)
# Extra arguments after the step go to the test executables (a name filter).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
ZC_WIN=${ZC_WIN:-$ROOT/target-win}
STEP=${1:-all}
[ $# -gt 0 ] && shift
mkdir -p "$ZC_WIN"

TARGET=x86_64-pc-windows-gnu
# panic_unwind: the test harness needs unwinding (a failed assert is a panic).
CARGO_WIN=(-Zbuild-std=std,panic_unwind --target "$TARGET" -j 2)

# The protocol tests are the one test crate tests/it/ (`--test it`). Its
# modules about Unix-only means are compiled out on Windows (`#[cfg(unix)]`
# in tests/it/main.rs; each says why in its header, and `unix_only` prints
# it): what remains is the Windows suite, built once and run whole.
# ZC_WIN_TESTS="golden pipe" runs only those modules in the protocol step
# (libtest name filters `golden::` `pipe::`, which match anywhere in a test's
# path: `golden::` also runs `gateway_golden::`).
MODULE_FILTERS=()
for m in ${ZC_WIN_TESTS:-}; do MODULE_FILTERS+=("$m::"); done

setup() {
  if ! dpkg -s rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine64 wine >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 wine64 wine >/dev/null
  fi
  env_vars
  if [ ! -f "$WINEPREFIX/system.reg" ]; then
    wineboot -i >/dev/null 2>&1 || true
    wineserver -w  # the registry is written when the server exits
  fi
  # Rust's std (1.78 and later) takes its randomness from ProcessPrng in
  # bcryptprimitives.dll; Wine 8.0 has no such DLL, so every program would
  # die at load (status c0000135, exit 53). A stand-in built here forwards to
  # RtlGenRandom, which Wine has. Real Windows has the DLL.
  local dll="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
  if [ ! -f "$dll" ]; then
    local src="$ZC_WIN/bcryptprimitives"
    mkdir -p "$src"
    cat >"$src/bcryptprimitives.c" <<'EOF'
/* Stand-in for Windows' bcryptprimitives.dll under Wine: ProcessPrng only. */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length); /* RtlGenRandom */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG part = length > 0x7fffffff ? 0x7fffffff : (ULONG)length;
        if (!SystemFunction036(data, part)) return FALSE;
        data += part;
        length -= part;
    }
    return TRUE;
}
EOF
    x86_64-w64-mingw32-gcc -O2 -shared -o "$src/bcryptprimitives.dll" \
      "$src/bcryptprimitives.c" -ladvapi32
    cp "$src/bcryptprimitives.dll" "$dll"
  fi
}

env_vars() {
  # Debian's compiler and cargo, not rustup's (whose proxies come first on
  # a developer's PATH).
  export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  export RUSTC=/usr/bin/rustc
  export RUSTDOC=/usr/bin/rustdoc
  export RUSTC_BOOTSTRAP=1
  export CARGO_HOME=$ZC_WIN/cargo-home
  export CARGO_TARGET_DIR=$ZC_WIN/target
  export CARGO_INCREMENTAL=0
  export CARGO_TERM_COLOR=never
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine
  export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc
  export AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
  # Warnings fail the build, as on Linux (clippy's -D warnings).
  export RUSTFLAGS="-D warnings"
  export WINEPREFIX=$ZC_WIN/wineprefix
  export WINEDEBUG=-all
  export RUST_BACKTRACE=0
}

check() {
  env_vars
  nice -n 15 cargo check "${CARGO_WIN[@]}" --all-targets --keep-going
}

build() {
  env_vars
  # One build graph for everything (the library, the binary, the examples,
  # the test executables): `cargo test` unifies the dev-dependencies'
  # features (tokio's test-util), so a separate `cargo build` would compile
  # every dependency a second time. Modules about Unix-only means are not built.
  nice -n 15 cargo test "${CARGO_WIN[@]}" --no-run
}

lib_tests() {
  env_vars
  nice -n 15 cargo test "${CARGO_WIN[@]}" --lib --no-fail-fast -- --test-threads=2 "$@"
}

# The test modules not run here, each with the reason its header gives
# (`// Unix only: <why>` or `// Not in the Windows suite: <why>`): the
# modules tests/it/main.rs declares under `#[cfg(unix)]`, so the log says
# what Windows does not cover.
unix_only() {
  local name why
  for name in $(awk '/^#\[cfg\(unix\)\]$/ { unix = 1; next }
                     /^mod [a-z0-9_]+;$/ { if (unix) { sub(/^mod /, ""); sub(/;$/, ""); print }
                                           unix = 0; next }
                     { unix = 0 }' tests/it/main.rs); do
    why=$(grep -m1 -E '^// (Unix only|Not in the Windows suite): ' "tests/it/$name.rs" | sed 's|^// [^:]*: ||') || true
    echo "SKIPPED on Windows: tests/it/$name.rs: ${why:-no reason given}"
  done
}

# The agents the tests host, built ahead: under Wine a test cannot start
# cargo (a Linux program) to build them as it does on Linux. The ACP test
# agent is the example (`cargo test --test it` builds no examples); the
# SDK agent is a package of its own (tests/acp-sdk-agent), built for the
# target into the same target dir and named by ZC_ACP_SDK_AGENT. If it cannot
# be built (no crates.io), its tests skip and say why.
agents() {
  nice -n 15 cargo build "${CARGO_WIN[@]}" --example acp_test_agent
  local sdk=$CARGO_TARGET_DIR/$TARGET/debug/acp-sdk-agent.exe
  if nice -n 15 cargo build "${CARGO_WIN[@]}" --locked \
    --manifest-path tests/acp-sdk-agent/Cargo.toml; then
    export ZC_ACP_SDK_AGENT=$sdk
  else
    echo "the SDK test agent (tests/acp-sdk-agent) did not build; tests/it/acp_sdk_agent.rs skips" >&2
  fi
}

protocol_tests() {
  env_vars
  unix_only
  agents
  # The harness starts the daemon binary the way it does on Linux; one
  # wineserver serves the daemon and the test, so the pipe is shared.
  nice -n 15 cargo test "${CARGO_WIN[@]}" --test it --no-fail-fast -- --test-threads=2 \
    ${MODULE_FILTERS[@]+"${MODULE_FILTERS[@]}"} "$@"
}

case "$STEP" in
  setup) setup ;;
  check) setup; check ;;
  build) setup; build ;;
  lib) setup; lib_tests "$@" ;;
  protocol) setup; protocol_tests "$@" ;;
  skipped) unix_only ;;
  all)
    setup
    build
    # Both suites run even if the first fails; the step fails if either did.
    failed=0
    lib_tests "$@" || failed=1
    protocol_tests "$@" || failed=1
    exit "$failed"
    ;;
  *) echo "usage: scripts/windows.sh [all|setup|check|build|lib|protocol|skipped] [test filter]" >&2; exit 2 ;;
esac
