#!/usr/bin/env bash
# tests/examples/camera-encode-test.sh: camera-encode.sh --test streams RTP that a loopback udpsrc ! rtph264depay ! avdec_h264 receiver decodes
# Usage: camera-encode-test.sh CAMERA_ENCODE_SH
set -euo pipefail
SCRIPT=$1
TMP=$(mktemp -d)
RECEIVER=
cleanup() {
  [ -n "$RECEIVER" ] && kill "$RECEIVER" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
PORT=$((20000 + $$ % 20000))
WANT=20

# The receiver ends by itself after WANT decoded 320x240 frames (identity eos-after), or is
# killed by timeout: status 124 then, and the test fails.
timeout 30 gst-launch-1.0 -e udpsrc address=127.0.0.1 port="$PORT" \
  caps="application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96" ! \
  rtph264depay ! avdec_h264 ! video/x-raw,width=320,height=240 ! \
  identity eos-after="$WANT" ! fakesink >"$TMP/receiver.log" 2>&1 &
RECEIVER=$!
sleep 1

# 45 frames at 30 fps: 1.5 s of stream time (longer on a slow CPU); the receiver needs 20.
timeout 60 bash "$SCRIPT" --test --frames 45 --size 320x240 --fps 30 --port "$PORT" \
  >"$TMP/sender.log" 2>&1 || { cat "$TMP/sender.log" >&2; echo "FAIL: the sender failed" >&2; exit 1; }
grep -q "Got EOS from element" "$TMP/sender.log" || { cat "$TMP/sender.log" >&2; echo "FAIL: sender did not end on EOS" >&2; exit 1; }

status=0
wait "$RECEIVER" || status=$?
RECEIVER=
cat "$TMP/receiver.log"
if [ "$status" != 0 ]; then
  echo "FAIL: the receiver did not decode $WANT frames (status $status)" >&2
  exit 1
fi
if grep -E "^(ERROR|WARNING)" "$TMP/receiver.log"; then
  echo "FAIL: the receiver reported an error or warning" >&2
  exit 1
fi
echo "ok: the receiver decoded $WANT frames from rtp://127.0.0.1:$PORT"
