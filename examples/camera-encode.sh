#!/usr/bin/env bash
# examples/camera-encode.sh: live camera → cudah264enc tune=zerolatency → RTP over UDP (videotestsrc with --test)
#
# Usage: examples/camera-encode.sh [--device /dev/video0] [--size WxH] [--fps F] [--bitrate KBPS]
#                                  [--host H] [--port P] [--backend auto|cuda|cpu]
#                                  [--test [--frames N]]
#   Sends H.264 in RTP (payload 96) to H:P (default 127.0.0.1:5000) until interrupted.
#   --test: videotestsrc (is-live, a moving ball) stands in for the camera and stops after N
#   frames (default 90), so the script ends by itself.
# Receive and show it with:
#   gst-launch-1.0 udpsrc port=5000 \
#     caps="application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96" ! \
#     rtph264depay ! avdec_h264 ! videoconvert ! autovideosink sync=false
set -euo pipefail

DEVICE=/dev/video0
SIZE=640x480
FPS=30
BITRATE=1500
HOST=127.0.0.1
PORT=5000
BACKEND=auto
TEST=0
FRAMES=90

while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --fps) FPS=$2; shift 2 ;;
    --bitrate) BITRATE=$2; shift 2 ;;
    --host) HOST=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --backend) BACKEND=$2; shift 2 ;;
    --test) TEST=1; shift ;;
    --frames) FRAMES=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "camera-encode.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
WIDTH=${SIZE%x*}
HEIGHT=${SIZE#*x}

if [ "$TEST" = 1 ]; then
  SOURCE=(videotestsrc is-live=true pattern=ball num-buffers="$FRAMES")
else
  if [ ! -e "$DEVICE" ]; then
    echo "camera-encode.sh: no camera at $DEVICE (use --device, or --test for a test pattern)" >&2
    exit 1
  fi
  SOURCE=(v4l2src device="$DEVICE")
fi

# An IDR every second (SPS and PPS come with each), so a receiver that joins late starts within
# a second; speed-preset=fast keeps the CPU backend close to real time at VGA.
echo "camera-encode.sh: ${SOURCE[0]} ${WIDTH}x$HEIGHT@$FPS → cudah264enc (backend=$BACKEND," \
  "$BITRATE kbit/s CBR) → rtp://$HOST:$PORT" >&2
exec gst-launch-1.0 -e "${SOURCE[@]}" ! videoconvert ! videoscale ! videorate ! \
  video/x-raw,format=I420,width="$WIDTH",height="$HEIGHT",framerate="$FPS"/1 ! \
  cudah264enc tune=zerolatency backend="$BACKEND" rate-control=cbr bitrate="$BITRATE" \
    key-int-max="$FPS" speed-preset=fast ! \
  rtph264pay pt=96 config-interval=-1 ! udpsink host="$HOST" port="$PORT"
