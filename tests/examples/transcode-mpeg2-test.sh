#!/usr/bin/env bash
# tests/examples/transcode-mpeg2-test.sh: transcode-mpeg2.sh turns MPEG-2 files made from vtest.avi (PS and TS) into MP4s ffmpeg decodes cleanly
# Usage: transcode-mpeg2-test.sh TRANSCODE_MPEG2_SH
set -euo pipefail
SCRIPT=$1
CLIP=${GVC_TEST_CLIP:-/usr/share/doc/opencv-doc/examples/data/vtest.avi}
[ -r "$CLIP" ] || { echo "SKIP: no $CLIP (opencv-doc)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ffmpeg -nostdin -v error -i "$CLIP" -frames:v 16 -vf scale=384:288 -c:v mpeg2video -q:v 3 -an \
  -f mpeg "$TMP/in.mpg"
ffmpeg -nostdin -v error -i "$CLIP" -frames:v 10 -vf scale=176:144 -c:v mpeg2video -an \
  -f mpegts "$TMP/in.ts"
echo "not a video" >"$TMP/in.txt"

if bash "$SCRIPT" "$TMP/in.txt" "$TMP/bad.mp4" 2>"$TMP/err"; then echo "FAIL: text accepted" >&2; exit 1; fi
grep -q "is not an MPEG" "$TMP/err" || { cat "$TMP/err" >&2; echo "FAIL: no clear message" >&2; exit 1; }

for spec in "in.mpg 16 384 288 --qp 26" "in.ts 10 176 144 --bitrate 300"; do
  read -r in frames w h opt val <<<"$spec"
  out=$TMP/$in.mp4
  bash "$SCRIPT" "$opt" "$val" "$TMP/$in" "$out" | tee "$TMP/stdout"
  grep -q "^transcode-mpeg2.sh: $frames frames" "$TMP/stdout" || { echo "FAIL: frame count in the summary" >&2; exit 1; }
  ffmpeg -nostdin -v warning -i "$out" -f null - 2>"$TMP/ffmpeg.err"
  if [ -s "$TMP/ffmpeg.err" ]; then
    cat "$TMP/ffmpeg.err" >&2
    echo "FAIL: ffmpeg printed messages decoding $out" >&2
    exit 1
  fi
  got=$(ffprobe -v error -count_frames -select_streams v:0 \
    -show_entries stream=codec_name,width,height,nb_read_frames -of csv=p=0 "$out")
  echo "ffprobe: $got"
  [ "$got" = "h264,$w,$h,$frames" ] || { echo "FAIL: expected h264,$w,$h,$frames" >&2; exit 1; }
done
echo "ok"
