#!/usr/bin/env bash
# examples/transcode-mpeg2.sh: MPEG-2 → H.264 transcoding (seed 002): the CPU decodes MPEG-2, cudah264enc encodes to MP4
#
# Usage: examples/transcode-mpeg2.sh [--qp Q | --bitrate KBPS] [--backend auto|cuda|cpu] IN OUT.mp4
#   IN: MPEG-2 video in a program stream (.mpg), transport stream (.ts) or elementary stream
#   (.m2v); only the video is transcoded. Pixel-domain cascade as in seed 002: the decoded frames
#   go to the encoder, whose motion search runs on the GPU when there is one.
# Prints the frame count, the time and the output size.
set -euo pipefail

QP=24
BITRATE=
BACKEND=auto
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --qp) QP=$2; shift 2 ;;
    --bitrate) BITRATE=$2; shift 2 ;;
    --backend) BACKEND=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    -*) echo "transcode-mpeg2.sh: unknown option $1" >&2; exit 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
if [ ${#ARGS[@]} -ne 2 ]; then
  sed -n '4p' "$0" >&2
  exit 2
fi
IN=${ARGS[0]}
OUT=${ARGS[1]}
[ -r "$IN" ] || { echo "transcode-mpeg2.sh: cannot read $IN" >&2; exit 1; }

# Demuxer by container; mpegvideoparse + avdec_mpeg2video is the MPEG-2 decoder either way.
case "$(head -c 4 "$IN" | od -An -tx1 | tr -d ' \n')" in
  000001ba) DEMUX=(mpegpsdemux !) ;;
  000001b3) DEMUX=() ;;
  47*) DEMUX=(tsdemux !) ;;
  *) echo "transcode-mpeg2.sh: $IN is not an MPEG program, transport or video elementary stream" >&2
     exit 1 ;;
esac
if [ -n "$BITRATE" ]; then
  RC=(rate-control=cbr bitrate="$BITRATE")
else
  RC=(qp="$QP")
fi

LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
start=$(date +%s%N)
if ! gst-launch-1.0 -e filesrc location="$IN" ! "${DEMUX[@]}" mpegvideoparse ! avdec_mpeg2video ! \
    identity name=count silent=false ! videoconvert ! video/x-raw,format=I420 ! \
    cudah264enc backend="$BACKEND" "${RC[@]}" ! h264parse ! mp4mux ! filesink location="$OUT" \
    -v >"$LOG" 2>&1 </dev/null; then
  grep -iE "error|warn" "$LOG" | head -20 >&2
  echo "transcode-mpeg2.sh: the pipeline failed" >&2
  exit 1
fi
ms=$((($(date +%s%N) - start) / 1000000))
frames=$(grep -c 'count.*chain' "$LOG" || true)
echo "transcode-mpeg2.sh: $frames frames in $((ms / 1000)).$(printf %03d $((ms % 1000))) s," \
  "$(stat -c %s "$OUT") bytes: $OUT"
