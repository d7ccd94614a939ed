#!/usr/bin/env bash
# The production ACP agent codex-acp (npm: @zed-industries/codex-acp) behind
# `backend = "acp"`, offline: codex's model provider is a local server speaking
# the Responses API stream. Checks a plain turn, a tool call run under our
# approval flow, and a kill -9 of the daemon followed by session/load.
# Usage: scripts/codex_acp/run.sh [ZEROCLAW_BIN]   (docs/agents.md)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-$here/../../target/debug/zeroclaw}")
work=$(mktemp -d /tmp/zc-codex-acp.XXXXXX)
port=$((20000 + RANDOM % 20000))
cleanup() { kill "${server:-}" "${daemon:-}" 2>/dev/null || true; }
trap cleanup EXIT

cd "$work"
npm pack -q @zed-industries/codex-acp-linux-x64 >/dev/null
tar xzf zed-industries-codex-acp-linux-x64-*.tgz
agent=$work/package/bin/codex-acp
chmod +x "$agent"
mkdir -p home cfg ws && chmod 700 cfg
cat > home/config.toml <<TOML
model = "local-model"
model_provider = "local"
approval_policy = "untrusted"
sandbox_mode = "danger-full-access"
[model_providers.local]
name = "Local"
base_url = "http://127.0.0.1:$port/v1"
wire_api = "responses"
TOML
cat > cfg/config.toml <<TOML
schema_version = 1
[agents.codex]
backend = "acp"
command = ["$agent"]
env = { CODEX_HOME = "$work/home" }
workspace_dir = "$work/ws"
TOML
chmod 600 cfg/config.toml
python3 "$here/responses_server.py" "$port" requests.log & server=$!
start() { "$bin" --config-dir cfg daemon >daemon.out 2>>daemon.err & daemon=$!; for _ in $(seq 50); do [ -S cfg/data/daemon.sock ] && return; sleep 0.1; done; }
start
python3 "$here/drive.py" cfg/data/daemon.sock c1 "say hello" | tail -1
python3 "$here/drive.py" cfg/data/daemon.sock c1 "please run: touch made-by-codex && echo done" | grep -E "approval_request|tool_result" | cut -c1-160
test -f ws/made-by-codex && echo "ok: the tool ran after our approval"
kill -9 "$daemon"; wait "$daemon" 2>/dev/null || true; rm -f cfg/data/daemon.sock
start
python3 "$here/drive.py" cfg/data/daemon.sock c1 "after restart" | tail -1 | cut -c1-160
grep -q '"event":"acp_session_loaded"' daemon.err && echo "ok: session/load after kill -9"
tail -1 requests.log | grep -q "please run" && echo "ok: the agent kept its context across the restart"
echo "work dir: $work"
