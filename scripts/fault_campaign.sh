#!/usr/bin/env bash
# Fault campaign (docs/reliability.md): kill -9 the daemon at random moments
# during real work, restart it on the same config dir, and check that nothing
# is half written.
#
# Usage: scripts/fault_campaign.sh [ITERATIONS]          (default 200)
#        scripts/fault_campaign.sh sigterm [ROUNDS]      (default 100; see below)
#
# Environment:
#   ZC_SEED=N        seed of the random choices (default: the PID); printed, so a run repeats
#   ZC_BIN=PATH      use this zeroclaw binary instead of building the release one
#   ZC_KEEP=1        keep the campaign directory (it is always kept after a violation)
#   ZC_MAX_DELAY_MS  upper bound of the random kill delay (default 600; a quarter of it
#                    for uploads, which take ~100 ms)
#   CARGO_TARGET_DIR as for cargo (the binary is $CARGO_TARGET_DIR/release/zeroclaw)
#
# Each iteration starts, in the background, one of:
#   acp     a slow ACP prompt (one chunk per character, 8 ms apart: ~0.4 s) on one of four
#           ACP sessions, which a restart leaves persisted: the next prompt rehydrates
#           it, recovering whatever checkpoint the last kill left;
#   upload  `zeroclaw upload` of a random 1-6 MiB file into a live Chat session;
#   config  a loop of `config/set-many` batches, each acknowledged one logged;
# kills the daemon with SIGKILL after a random delay, waits for the client to end,
# restarts the daemon and checks, after every iteration whatever the operation:
#   - the daemon restarts, and `config/get` succeeds (config.toml parses) and shows
#     exactly one whole committed batch: the last acknowledged one, or the one in
#     flight at the kill (committed, its answer lost); never older, never mixed;
#   - every ACP transcript (`session/messages`) has seqs 1..n without a gap; every
#     turn is its user row, at most one assistant row holding a prefix of the
#     expected reply, then at most one `Turn interrupted` marker, last; a turn
#     without a marker holds the whole reply; no prompt appears twice; a prompt whose
#     client got its answer is there, whole and unmarked;
#   - every file in uploads/ has the SHA-256 its name says; an acknowledged upload is
#     there; no `.upload-*.tmp` is left once the restarted daemon is ready (it
#     removes dead writers' temporaries at startup).
# Prints counts per operation and outcome; exits 1 on any violated invariant.
#
# `sigterm` rounds (§2.6): each round starts the daemon, runs 1-4 clients
# whose prompts are turns that sleep for a minute, waits until every turn
# streams, sends SIGTERM after a random delay, and checks:
#   - the daemon exits 0 and removes its socket;
#   - every client got its turn_complete and then the prompt's answer
#     (stop_reason "cancelled"), and exited 0.

# The whole script is one brace group, parsed before it runs: editing the file
# while a campaign runs cannot change the running campaign.
{
set -u

mode=kill
if [ "${1:-}" = sigterm ]; then mode=sigterm; shift; fi
iterations=${1:-$([ "$mode" = sigterm ] && echo 100 || echo 200)}
seed=${ZC_SEED:-$$}
max_delay=${ZC_MAX_DELAY_MS:-600}
RANDOM=$seed
root=$(cd "$(dirname "$0")/.." && pwd)

for tool in jq sha256sum timeout; do
    command -v "$tool" >/dev/null || { echo "fault_campaign: needs $tool" >&2; exit 2; }
done

if [ -n "${ZC_BIN:-}" ]; then
    bin=$ZC_BIN
else
    echo "building the release binary..." >&2
    (cd "$root" && cargo build --release --bin zeroclaw -q) || exit 2
    bin=${CARGO_TARGET_DIR:-$root/target}/release/zeroclaw
    case $bin in /*) ;; *) bin=$root/$bin ;; esac
fi
[ -x "$bin" ] || { echo "fault_campaign: no binary at $bin" >&2; exit 2; }

# A short path: <dir>/cfg/data/daemon.sock must fit in sun_path.
dir=$(mktemp -d /tmp/zcf.XXXXXX)
cfg=$dir/cfg
mkdir -m 700 -p "$cfg" "$dir/files" "$dir/out"
printf 'schema_version = 1\n\n[agents.echo]\nbackend = "echo"\n' >"$cfg/config.toml"
chmod 600 "$cfg/config.toml"
uploads=$cfg/agents/echo/workspace/uploads
log=$dir/daemon.log

# Hermetic client and daemon environment.
unset ZEROCLAW_CONFIG_DIR ZEROCLAW_DATA_DIR ZEROCLAW_SOCKET RUST_LOG
export ZEROCLAW_LOG=info HOME=$dir

rpc() { timeout 30 "$bin" --config-dir "$cfg" rpc "$@"; }

violations=0
declare -A count=()
bump() { count[$1]=$(( ${count[$1]:-0} + 1 )); }
violation() {
    violations=$((violations + 1))
    echo "VIOLATION (iteration $iter, $op): $*" | tee -a "$dir/violations" >&2
}

daemon_pid=
start_daemon() {
    local out=$dir/out/ready.$iter
    "$bin" --config-dir "$cfg" daemon >"$out" 2>>"$log" &
    daemon_pid=$!
    local t=0
    until grep -q '"ready"' "$out" 2>/dev/null; do
        if ! kill -0 "$daemon_pid" 2>/dev/null || [ $t -ge 400 ]; then
            violation "the daemon did not restart (see $log)"
            return 1
        fi
        sleep 0.05
        t=$((t + 1))
    done
}

rand_ms() { echo $(( (RANDOM * 32768 + RANDOM) % ($1 + 1) )); }
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }
rand_text() { tr -dc 'a-z0-9' </dev/urandom | head -c "$1"; }

# --- config/set-many batches -------------------------------------------------
# Batch k: even batches carry a 4 KiB prompt, odd ones a short one, so a torn or
# mixed file cannot pass for either.
batch_prompt() {
    if [ $(($1 % 2)) -eq 0 ]; then printf 'batch-%d-%s' "$1" "$(printf '%4096s' '' | tr ' ' a)"
    else printf 'batch-%d-short' "$1"; fi
}
batch_params() {
    jq -cn --argjson k "$1" --arg p "$(batch_prompt "$1")" \
        '{sets:[{prop:"agents.echo.system_prompt",value:$p},
                {prop:"daemon.ask_timeout_secs",value:($k+1)},
                {prop:"agents.echo.env",value:{MARK:($k|tostring)}}]}'
}
acked=0          # highest batch whose client got its answer
next_batch=1     # next batch to attempt
inflight=0       # the batch in flight at the last kill, if unacknowledged (0: none)
config_loop() {  # runs in the background until $dir/stop exists
    local k=$next_batch
    while [ ! -e "$dir/stop" ]; do
        echo "$k" >"$dir/attempt"
        if rpc config/set-many "$(batch_params "$k")" >/dev/null 2>&1; then
            echo "$k" >>"$dir/acked"
            k=$((k + 1))
        else
            sleep 0.01
        fi
    done
}
check_config() {
    local got k
    if ! got=$(rpc config/get '{}' 2>>"$dir/errors"); then
        violation "config/get failed after restart"
        return
    fi
    k=$(jq -r '.agents.echo.env.MARK // "none"' <<<"$got")
    if [ "$k" = none ]; then
        # No batch committed yet: the initial config, untouched.
        [ "$acked" -eq 0 ] || violation "config lost its batches (acknowledged $acked)"
        [ "$(jq -r '.agents.echo.system_prompt' <<<"$got")" = "" ] ||
            violation "initial config altered: $(head -c 200 <<<"$got")"
        return
    fi
    if ! jq -e --argjson k "$k" --arg p "$(batch_prompt "$k")" \
        '.agents.echo.system_prompt == $p and .daemon.ask_timeout_secs == $k + 1' <<<"$got" >/dev/null; then
        violation "config holds no whole batch (MARK says $k): $(head -c 300 <<<"$got")"
    elif [ "$k" -ne "$acked" ] && [ "$k" -ne "$inflight" ]; then
        violation "config holds batch $k; last acknowledged $acked, in flight ${inflight/#0/none}"
    elif [ "$k" -ne "$acked" ]; then
        bump "config: in-flight batch committed (answer lost)"
        acked=$k
    fi
}

# --- ACP transcripts -----------------------------------------------------------
acp_sessions=(acp-0 acp-1 acp-2 acp-3)
declare -A acp_created=() acp_acked=()   # acp_acked: JSON array of answered prompts
# jq: the violations in one transcript page (the whole transcript: limit 1000).
read -r -d '' acp_check <<'JQ'
def turns: reduce .messages[] as $r ([]; if $r.role == "user" or length == 0 then . + [[$r]] else .[-1] += [$r] end);
($acked - [.messages[] | select(.role == "user") | .content] | .[] | "an answered prompt is missing: \(.)"),
(if .start != 0 or .total != (.messages | length) then "paging: start \(.start), total \(.total), \(.messages | length) rows" else empty end),
(if [.messages[].seq] != [range(1; (.messages | length) + 1)] then "seqs not 1..n: \([.messages[].seq])" else empty end),
([.messages[] | select(.role == "user") | .content] | group_by(.) | map(select(length > 1))[] | "prompt stored twice: \(.[0])"),
(turns[] |
  (.[0].content | split("\n") | last) as $text
  | [.[] | select(.kind == "interruption_marker")] as $marks
  | (.[0].content as $p | $acked | index([$p]) != null) as $answered
  | [.[] | select(.role == "assistant")] as $asst
  | (if .[0].role != "user" then "turn without its user row: \(.)" else empty end),
    (if $answered and ($marks | length) > 0 then "an answered turn is marked interrupted: \($text)" else empty end),
    (if ($marks | length) > 1 then "\($marks | length) markers in one turn: \($text)" else empty end),
    (if ($marks | length) == 1 and (.[-1].kind != "interruption_marker" or $marks[0].content != "Turn interrupted")
       then "misplaced or unexpected marker: \(.)" else empty end),
    (if ($asst | length) > 1 or (length - 1 - ($asst | length) - ($marks | length)) != 0
       then "unexpected rows in a turn: \(map(.kind))" else empty end),
    (($asst[0].content // "") as $a
     | if ($text | startswith($a)) | not then "reply is not a prefix of \($text): \($a)"
       elif ($marks | length) == 0 and $a != $text then "unmarked turn with a partial reply: \($a) of \($text)"
       else empty end))
JQ
check_acp() {
    local s got bad
    for s in "${acp_sessions[@]}"; do
        [ -n "${acp_created[$s]:-}" ] || continue
        if ! got=$(rpc session/messages "{\"session_id\":\"$s\",\"chat_mode\":\"acp\",\"limit\":1000}" 2>>"$dir/errors"); then
            violation "session/messages $s failed"
            continue
        fi
        bad=$(jq -r --argjson acked "${acp_acked[$s]:-[]}" "$acp_check" <<<"$got")
        [ -z "$bad" ] || violation "$s: $bad"
        count["acp: $s at the end: rows, turns, markers"]=$(jq -r \
            '"\(.total), \([.messages[] | select(.role == "user")] | length), \([.messages[] | select(.kind == "interruption_marker")] | length)"' <<<"$got")
    done
}

# --- uploads ---------------------------------------------------------------------
declare -A upload_acked=()
# A kill between the store step's create and rename leaves a temporary; the
# daemon removes those of dead writers at startup, before its ready line. So
# any temporary seen once the restarted daemon is ready is a violation.
check_uploads() {
    local f name sha
    [ -d "$uploads" ] || return
    for f in "$uploads"/.upload-*.tmp; do
        [ -e "$f" ] || continue
        violation "partial upload left after restart: $(basename "$f") ($(stat -c %s "$f") bytes)"
    done
    for f in "$uploads"/*; do
        [ -e "$f" ] || continue
        name=$(basename "$f")
        sha=$(sha256sum "$f" | cut -d' ' -f1)
        [ "${name%%.*}" = "$sha" ] || violation "upload $name has SHA-256 $sha"
    done
    for sha in "${!upload_acked[@]}"; do
        [ -f "$uploads/$sha.bin" ] || violation "an acknowledged upload is missing: $sha"
    done
}

# The summary and exit status of a campaign: counts, violations, the kept directory.
finish() {
    echo "$1 in $(( $(date +%s) - began )) s, seed $seed"
    for k in "${!count[@]}"; do printf '  %-48s %s\n' "$k" "${count[$k]}"; done | sort
    echo "  violations: $violations"
    if [ "$violations" -gt 0 ]; then
        echo "kept $dir (violations in $dir/violations, daemon log in $log)"
        exit 1
    fi
    if [ -n "${ZC_KEEP:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
    exit 0
}

# --- SIGTERM rounds ----------------------------------------------------------------------
sigterm_round() {
    local n k t st out
    start_daemon || return 1
    n=$((1 + RANDOM % 4))
    count["sigterm: turns running at the signal"]=$(( ${count["sigterm: turns running at the signal"]:-0} + n ))
    for k in $(seq 1 "$n"); do
        out=$dir/out/$iter.$k
        rpc session/new "{\"agent_alias\":\"echo\",\"session_id\":\"t-$iter-$k\",\"chat_mode\":\"acp\"}" >/dev/null 2>>"$dir/errors" ||
            violation "session/new t-$iter-$k failed"
        ( rpc session/prompt "{\"session_id\":\"t-$iter-$k\",\"prompt\":\"started\\n::sleep 60000\"}" >"$out.answer" 2>"$out.updates"
          echo $? >"$out.rc" ) &
    done
    # Every turn is running once it has streamed its first chunk.
    for k in $(seq 1 "$n"); do
        t=0
        until grep -q agent_message_chunk "$dir/out/$iter.$k.updates" 2>/dev/null; do
            [ $t -ge 200 ] && { violation "turn $k never started"; break; }
            sleep 0.05
            t=$((t + 1))
        done
    done
    sleep_ms "$(rand_ms 200)"
    kill -TERM "$daemon_pid"
    wait "$daemon_pid"
    st=$?
    [ "$st" -eq 0 ] || violation "the daemon exited $st after SIGTERM"
    [ -e "$cfg/data/daemon.sock" ] && violation "the socket is left after SIGTERM"
    wait
    for k in $(seq 1 "$n"); do
        out=$dir/out/$iter.$k
        if [ "$(cat "$out.rc" 2>/dev/null)" != 0 ]; then
            violation "client $k exited $(cat "$out.rc" 2>/dev/null): $(head -c 300 "$out.updates")"
        elif ! jq -e '.stop_reason == "cancelled"' "$out.answer" >/dev/null 2>&1; then
            violation "client $k: no cancelled answer: $(head -c 300 "$out.answer")"
        elif ! grep -q turn_complete "$out.updates"; then
            violation "client $k: no turn_complete before its answer"
        else
            bump "sigterm: answers delivered"
        fi
    done
}

if [ "$mode" = sigterm ]; then
    echo "fault campaign (sigterm): $iterations rounds, seed $seed, dir $dir, binary $bin" >&2
    op=sigterm
    began=$(date +%s)
    for iter in $(seq 1 "$iterations"); do
        echo "--- round $iter" >>"$log"
        sigterm_round || break
        bump "sigterm: rounds"
        if [ $((iter % 25)) -eq 0 ]; then
            echo "  $iter rounds, $violations violations, $(( $(date +%s) - began )) s" >&2
        fi
    done
    finish "fault campaign (sigterm): $iter rounds"
fi

# --- the campaign ----------------------------------------------------------------------
echo "fault campaign: $iterations iterations, seed $seed, dir $dir, binary $bin" >&2
iter=0
op=start
start_daemon || exit 1
began=$(date +%s)
for iter in $(seq 1 "$iterations"); do
    echo "--- iteration $iter" >>"$log"
    rm -f "$dir/stop" "$dir/acked" "$dir/attempt"
    ops=(acp upload config)
    op=${ops[$((RANDOM % 3))]}
    bump "op $op"
    prompt=
    sha=
    upload_ok=0
    case $op in
        acp)
            s=${acp_sessions[$((RANDOM % ${#acp_sessions[@]}))]}
            if [ -z "${acp_created[$s]:-}" ]; then
                rpc session/new "{\"agent_alias\":\"echo\",\"session_id\":\"$s\",\"chat_mode\":\"acp\"}" >/dev/null 2>>"$dir/errors" ||
                    violation "session/new $s failed"
                acp_created[$s]=1
            fi
            prompt=$(printf '::delay 8\n::chunk 1\nturn-%d-%s' "$iter" "$(rand_text 40)")
            params=$(jq -cn --arg s "$s" --arg p "$prompt" '{session_id:$s, prompt:$p}')
            ( rpc session/prompt "$params" >/dev/null 2>&1 ) &
            ;;
        upload)
            rpc session/new '{"agent_alias":"echo","session_id":"up","chat_mode":"chat"}' >/dev/null 2>>"$dir/errors" ||
                violation "session/new up failed"
            file=$dir/files/payload.bin
            head -c $(( (1 + RANDOM % 6) * 1024 * 1024 - RANDOM )) /dev/urandom >"$file"
            sha=$(sha256sum "$file" | cut -d' ' -f1)
            ( timeout 60 "$bin" --config-dir "$cfg" upload up "$file" >/dev/null 2>&1 ) &
            ;;
        config)
            ( config_loop ) &
            ;;
    esac
    op_pid=$!
    if [ "$op" = upload ]; then delay=$(rand_ms $((max_delay / 4))); else delay=$(rand_ms "$max_delay"); fi
    sleep_ms "$delay"
    kill -9 "$daemon_pid" 2>/dev/null
    wait "$daemon_pid" 2>/dev/null
    touch "$dir/stop"
    wait "$op_pid"
    status=$?
    case $op in
        acp)
            if [ $status -eq 0 ]; then
                bump "acp: answered before the kill"
                acp_acked[$s]=$(jq -c --arg p "$prompt" '. + [$p]' <<<"${acp_acked[$s]:-[]}")
            else
                bump "acp: killed mid-turn (or before it began)"
            fi
            ;;
        upload)
            if [ $status -eq 0 ]; then
                bump "upload: acknowledged before the kill"
                upload_acked[$sha]=1
                upload_ok=1
            else
                bump "upload: killed mid-upload"
            fi
            ;;
        config)
            n=0
            if [ -e "$dir/acked" ]; then
                n=$(wc -l <"$dir/acked")
                acked=$(tail -n 1 "$dir/acked")
            fi
            count["config: batches acknowledged"]=$(( ${count["config: batches acknowledged"]:-0} + n ))
            [ "$n" -gt 0 ] && bump "config: iterations with commits"
            inflight=0
            if [ -e "$dir/attempt" ] && [ "$(cat "$dir/attempt")" -gt "$acked" ]; then
                inflight=$(cat "$dir/attempt")
            fi
            ;;
    esac
    start_daemon || break
    check_config
    check_acp
    check_uploads
    # An in-flight batch that was not committed is attempted again.
    next_batch=$((acked + 1))
    inflight=0
    if [ $((iter % 25)) -eq 0 ]; then
        echo "  $iter iterations, $violations violations, $(( $(date +%s) - began )) s" >&2
    fi
done

kill -TERM "$daemon_pid" 2>/dev/null
wait "$daemon_pid" 2>/dev/null

finish "fault campaign: $iter iterations"
}
