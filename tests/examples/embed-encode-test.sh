#!/usr/bin/env bash
# tests/examples/embed-encode-test.sh: examples/embed-encode writes an MP4 that ffmpeg decodes to the pushed frame count without a message
# Usage: embed-encode-test.sh EMBED_ENCODE_EXE
set -euo pipefail
EXE=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Bad arguments: usage and status 2, no file.
if "$EXE" --size 33x10 "$TMP/bad.mp4" 2>"$TMP/err"; then echo "FAIL: odd size accepted" >&2; exit 1; fi
grep -q usage "$TMP/err" || { echo "FAIL: no usage message" >&2; exit 1; }
[ ! -e "$TMP/bad.mp4" ] || { echo "FAIL: a file was written for bad arguments" >&2; exit 1; }

for spec in "20 256x144" "8 200x120"; do
  read -r frames size <<<"$spec"
  out=$TMP/out-$size.mp4
  "$EXE" --frames "$frames" --size "$size" --qp 28 "$out" | tee "$TMP/stdout"
  grep -q "embed-encode: $frames frames $size" "$TMP/stdout" || { echo "FAIL: no summary line" >&2; exit 1; }
  ffmpeg -nostdin -v warning -i "$out" -f null - 2>"$TMP/ffmpeg.err"
  if [ -s "$TMP/ffmpeg.err" ]; then
    cat "$TMP/ffmpeg.err" >&2
    echo "FAIL: ffmpeg printed messages decoding $out" >&2
    exit 1
  fi
  got=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames,width,height \
    -of csv=p=0 "$out")
  echo "ffprobe: $got (width,height,frames)"
  [ "$got" = "${size%x*},${size#*x},$frames" ] || { echo "FAIL: expected ${size/x/,},$frames" >&2; exit 1; }
done
echo "ok"
