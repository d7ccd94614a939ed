#!/usr/bin/env bash
# Writes the seed corpus of the `frames` fuzz target from the golden
# transcripts (tests/golden/*.transcript): the client→daemon bytes of each
# transcript as one stream, and each frame on its own. fuzz/corpus/ is
# git-ignored; this script is what is committed.
#
# Input layout of the target (fuzz_targets/frames.rs): byte 0 selects the
# frame bound (even: 8 MiB; odd: 1 + byte/2), bytes 1-4 are two cut points,
# the rest is the stream. Every seed is written with two headers: the real
# bound uncut, and a 33-byte bound cut in the middle, so that the oversized
# path starts covered.
#
# It then seeds the other targets (below, after `frames`): `gateway_http`,
# `config_toml` and `bridge_input`, from the same transcripts, the TOML
# examples of docs/*.md, the config texts of tests/*.rs and the ACP
# messages an editor sends. Those need python3 (to read Rust string
# literals); without it they get the handwritten seeds only.
#
# Usage: fuzz/seed_corpus.sh [OUT_DIR]   (default fuzz/corpus/frames; the
# other targets always go to fuzz/corpus/<target>)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/fuzz/corpus/frames}
mkdir -p "$out"

# A `-->sized N TEMPLATE` frame is cut down to this many bytes of padding.
pad=64

n=0
emit() { # emit NAME FILE: writes FILE with both headers
    local name=$1 body=$2 len half lo hi
    len=$(stat -c %s "$body")
    half=$((len / 2))
    lo=$((half & 255)); hi=$(((half >> 8) & 255))
    { printf '\x00\x00\x00\x00\x00'; cat "$body"; } >"$out/$name-a"
    { printf '\x41'; printf "\\x$(printf %02x $lo)\\x$(printf %02x $hi)\\x$(printf %02x $lo)\\x$(printf %02x $hi)"; cat "$body"; } >"$out/$name-b"
    n=$((n + 2))
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in "$root"/tests/golden/*.transcript; do
    base=$(basename "$t" .transcript)
    stream=$tmp/$base.stream
    : >"$stream"
    i=0
    while IFS= read -r line || [ -n "$line" ]; do
        frame=$tmp/frame
        case "$line" in
            '--> (eof)') break ;;
            '--> '*) printf '%s\n' "${line#--> }" >"$frame" ;;
            '-->raw '*) printf '%b' "${line#-->raw }" >"$frame" ;;
            '-->sized '*)
                rest=${line#-->sized }
                template=${rest#* }
                printf '%s\n' "${template/@PAD@/$(printf '%*s' $pad '' | tr ' ' x)}" >"$frame" ;;
            *) continue ;;
        esac
        cat "$frame" >>"$stream"
        i=$((i + 1))
        emit "$base-$(printf %03d $i)" "$frame"
    done <"$t"
    emit "$base-stream" "$stream"
done
echo "wrote $n seeds to $out"

# ---- gateway_http: 17 header bytes (flags, 16 IP bytes), then Host, Origin,
# Authorization, Content-Type and the pairing header, each ended by \0,
# then the POST /rpc body (fuzz/fuzz_targets/gateway_http.rs).
gw=$root/fuzz/corpus/gateway_http
mkdir -p "$gw"
g=0
gw_emit() { # gw_emit FLAGS IP_HEX HOST ORIGIN AUTH CTYPE PAIRING BODY_FILE
    local f=$gw/seed-$(printf %04d $g)
    { printf "\\x$1"; printf "$2"; printf '%s\0%s\0%s\0%s\0%s\0' "$3" "$4" "$5" "$6" "$7"; cat "$8"; } >"$f"
    g=$((g + 1))
}
v4lo='\x7f\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
v6lo='\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01'
mapped='\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x0a\x00\x00\x07'
v6='\x20\x01\x0d\xb8\x00\x01\x00\x02\x00\x00\x00\x00\x00\x00\x00\x09'
body=$tmp/body
printf '%s' '{"jsonrpc":"2.0","method":"status","id":1}' >"$body"
gw_emit 00 "$v4lo" 127.0.0.1:42617 http://127.0.0.1:42617 'Bearer zc_0123456789abcdef' application/json 0123-4567-8901 "$body"
gw_emit 01 "$v6lo" '[::1]:42617' 'https://[::1]:42617' 'bearer  tok ' 'application/json; charset=utf-8' ' 012345678901 ' "$body"
gw_emit 02 "$mapped" zc.lan:8080 http://zc.lan:8080/ 'Basic dXNlcjpwYXNz' text/plain '0123 4567 8901' "$body"
gw_emit 00 "$v6" evil.example http://evil.example 'Bearer' APPLICATION/JSON 01234567890 "$body"
gw_emit 03 "$v6" LOCALHOST:1 null 'Bearer a b' 'application/json;' '٠١٢٣٤٥٦٧٨٩٠١' "$body"
printf '[]' >"$body"; gw_emit 00 "$v4lo" localhost localhost '' '' '' "$body"
printf ' [ 1 ] ' >"$body"; gw_emit 00 "$v4lo" localhost '' '' '' '' "$body"
printf '[%s]' "$(printf '{"jsonrpc":"2.0","method":"status","id":%d},' $(seq 1 16) | sed 's/,$//')" >"$body"
gw_emit 00 "$v4lo" localhost '' '' '' '' "$body"
printf '[%s]' "$(printf '%d,' $(seq 1 17) | sed 's/,$//')" >"$body"
gw_emit 00 "$v4lo" localhost '' '' '' '' "$body"
# Every client frame of the golden transcripts as a body, alone and as a
# two-element array.
for t in "$root"/tests/golden/*.transcript; do
    grep '^--> ' "$t" | grep -v '^--> (eof)' | sed 's/^--> //' | while IFS= read -r line; do
        printf '%s' "$line" >"$body"
        gw_emit 00 "$v4lo" 127.0.0.1:42617 '' 'Bearer zc_t' application/json '' "$body"
        printf '[%s,%s]' "$line" "$line" >"$body"
        gw_emit 01 "$v6" '[2001:db8::9]:443' 'https://[2001:db8::9]' 'Bearer zc_t' application/json '' "$body"
    done
done
echo "wrote $(ls "$gw" | wc -l) seeds to $gw"

# ---- config_toml: the TOML examples of the docs, the config texts of the
# tests, and a few handwritten ones.
ct=$root/fuzz/corpus/config_toml
mkdir -p "$ct"
printf 'schema_version = 1\n\n[agents.echo]\nbackend = "echo"\n' >"$ct/default"
printf 'schema_version = 1\n[gateway]\npaired_tokens = ["0123456789abcdef0123456789abcdef"]\nallowed_hosts = ["zc.lan"]\nallowed_origins = ["http://zc.lan:42617"]\n' >"$ct/gateway"
printf 'schema_version = 1\n[agents.a]\nbackend = "command"\ncommand = ["sh"]\nenv = { TOKEN = "sk-0123456789abcdefghij" }\n' >"$ct/env"
if command -v python3 >/dev/null; then
    python3 - "$root" "$ct" <<'PY'
import glob, os, re, sys
root, out = sys.argv[1], sys.argv[2]
n = 0
def emit(kind, text):
    global n
    n += 1
    with open(os.path.join(out, f"{kind}-{n:04d}"), "w") as f:
        f.write(text)
for md in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
    for block in re.findall(r"```toml\n(.*?)```", open(md).read(), re.S):
        emit("doc", block)
def unescape(s):
    return re.sub(r'\\(n|t|"|\\|r|0)', lambda m: {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r", "0": "\0"}[m.group(1)], s)
for rs in sorted(glob.glob(os.path.join(root, "tests", "*.rs")) + glob.glob(os.path.join(root, "src", "config", "*.rs"))):
    src = open(rs).read()
    for raw in re.findall(r'r#"(.*?)"#', src, re.S):
        if "schema_version" in raw or "[agents." in raw:
            emit("test", raw)
    for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', src):
        if "schema_version" in lit and "\\n" in lit:
            emit("test", unescape(lit))
print(f"wrote {n} seeds from docs and tests to {out}")
PY
fi

# ---- bridge_input: what an editor sends (ACP), and the golden frames.
bi=$root/fuzz/corpus/bridge_input
mkdir -p "$bi"
b=0
bi_emit() { printf '%s' "$1" >"$bi/seed-$(printf %04d $b)"; b=$((b + 1)); }
bi_emit '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}}}}'
bi_emit '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}'
bi_emit '{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"s1","cwd":"/tmp","mcpServers":[]}}'
bi_emit '{"jsonrpc":"2.0","id":4,"method":"session/resume","params":{"sessionId":"s1"}}'
bi_emit '{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"},{"type":"resource_link","name":"a.rs","uri":"file:///w/a.rs"},{"type":"resource","resource":{"uri":"file:///w/b.rs","text":"fn b() {}","mimeType":"text/x-rust"}},{"type":"resource","resource":{"uri":"","blob":"AAEC"}},{"type":"image","mimeType":"image/png","data":"iVBO"}]}}'
bi_emit '{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"audio","data":""}]}}'
bi_emit '{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}'
bi_emit '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}'
bi_emit '{"jsonrpc":"2.0","id":8,"method":"session/close","params":{"sessionId":"s1"}}'
bi_emit '{"jsonrpc":"2.0","id":9,"method":"session/list","params":{"cwd":"/"}}'
bi_emit '{"jsonrpc":"2.0","id":"perm-1","result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}'
bi_emit '{"jsonrpc":"2.0","id":"perm-2","result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}'
bi_emit '{"jsonrpc":"2.0","id":"perm-3","result":{"outcome":{"outcome":"cancelled"}}}'
bi_emit '{"jsonrpc":"2.0","id":"perm-4","error":{"code":-32603,"message":"no"},"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}'
bi_emit '{"jsonrpc":"2.0","id":"q-1","result":{"action":"accept","content":{"answer":"yes"}}}'
bi_emit '{"jsonrpc":"2.0","id":10,"method":"authenticate","params":{}}'
bi_emit '{"jsonrpc":"2.0","id":11,"method":"nope"}'
bi_emit '{}'
bi_emit '[]'
for t in "$root"/tests/golden/*.transcript; do
    grep '^--> ' "$t" | grep -v '^--> (eof)' | sed 's/^--> //' | while IFS= read -r line; do
        printf '%s' "$line" >"$bi/golden-$(basename "$t" .transcript)-$(printf '%s' "$line" | cksum | cut -d' ' -f1)"
    done
done
echo "wrote $(ls "$bi" | wc -l) seeds to $bi"
