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
# Usage: fuzz/seed_corpus.sh [OUT_DIR]   (default fuzz/corpus/frames)
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
