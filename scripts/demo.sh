#!/usr/bin/env bash
# scripts/demo.sh: installs, builds, encodes a real clip to MP4 with cudah264enc (GPU if there is one, else CPU) and prints fps and PSNR; --mv runs the cudamv demo
#
# Usage: scripts/demo.sh [--frames N] [--backend auto|cuda|cpu] [--qp Q] [--preset fast|medium|slow]
#                        [--size WxH|native] [FILE]
#   Encodes FILE (default: OpenCV's vtest.avi, package opencv-doc, people walking, 768x576 at
#   10 fps, encoded at half size 384x288) with cudah264enc: N frames (default 90; 0 = all),
#   backend=auto (CUDA when a device is found, else the CPU reference), qp 26, preset medium.
#   Writes results/<clip>-h264.mp4 and prints the backend, fps (frames / wall time of the whole
#   decode+encode pipeline), the bit rate, PSNR against the source frames (ffmpeg psnr filter)
#   and the output path. About a minute on 2 CPU cores with the default settings.
#
#        scripts/demo.sh --mv [--frames N] [--backend auto|cuda|cpu] [--block 16x16|8x8|4x4|auto]
#                        [--range R] [--subpel none|half|quarter] [--lambda L] [FILE]
#   The motion-vector demo: runs cudamv on FILE (default 150 frames of vtest.avi; 0 = all 795),
#   writes results/<clip>-mv.mp4 (H.264, vectors drawn as arrows), results/<clip>-motion.csv
#   (one row per frame) and prints the same statistics as a table.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${GVC_BUILD_DIR:-build}
MODE=encode
FRAMES=
BACKEND=auto
QP=26
PRESET=medium
SIZE=384x288
BLOCK=16x16
RANGE=16
SUBPEL=quarter
LAMBDA=${GVC_DEMO_LAMBDA:-0}
INPUT=/usr/share/doc/opencv-doc/examples/data/vtest.avi

while [ $# -gt 0 ]; do
  case "$1" in
    --mv) MODE=mv; shift ;;
    --frames) FRAMES=$2; shift 2 ;;
    --qp) QP=$2; shift 2 ;;
    --preset) PRESET=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --backend) BACKEND=$2; shift 2 ;;
    --block) BLOCK=$2; shift 2 ;;
    --range) RANGE=$2; shift 2 ;;
    --subpel) SUBPEL=$2; shift 2 ;;
    --lambda) LAMBDA=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "demo.sh: unknown option $1" >&2; exit 2 ;;
    *) INPUT=$1; shift ;;
  esac
done

bash scripts/test.sh --deps-only
[ -d /usr/local/cuda/bin ] && PATH="$PATH:/usr/local/cuda/bin"

if [ -f "$BUILD_DIR/build.ninja" ]; then
  meson setup --reconfigure "$BUILD_DIR" >/dev/null
else
  meson setup "$BUILD_DIR"
fi
meson compile -C "$BUILD_DIR"

if [ ! -r "$INPUT" ]; then
  echo "demo.sh: cannot read $INPUT" >&2
  exit 1
fi
mkdir -p results
NAME=$(basename "${INPUT%.*}")
export GST_PLUGIN_PATH="$ROOT/$BUILD_DIR${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"

if [ "$MODE" = encode ]; then
  FRAMES=${FRAMES:-90}
  VIDEO=results/$NAME-h264.mp4
  LOG=results/$NAME-encode.log
  SOURCE=$(mktemp --suffix=.yuv)
  trap 'rm -f "$SOURCE"' EXIT
  CAPS=video/x-raw,format=I420
  SCALE=()
  if [ "$SIZE" != native ]; then
    SCALE=(videoscale !)
    CAPS=$CAPS,width=${SIZE%x*},height=${SIZE#*x}
  fi
  LIMIT=()
  [ "$FRAMES" -gt 0 ] && LIMIT=(identity eos-after="$FRAMES" !)
  echo "demo.sh: cudah264enc backend=$BACKEND qp=$QP speed-preset=$PRESET on $INPUT" \
    "($([ "$FRAMES" -gt 0 ] && echo "$FRAMES frames" || echo "all frames"), size $SIZE)"
  start=$(date +%s%N)
  # The tee keeps the exact frames the encoder saw (raw I420) for the PSNR; INFO of the element
  # says which backend it picked.
  GST_DEBUG=cudah264enc:4 GST_DEBUG_NO_COLOR=1 gst-launch-1.0 -e filesrc location="$INPUT" ! \
    decodebin ! videoconvert ! "${SCALE[@]}" "$CAPS" ! "${LIMIT[@]}" tee name=t \
    t. ! queue ! cudah264enc backend="$BACKEND" qp="$QP" speed-preset="$PRESET" ! h264parse ! \
      mp4mux ! filesink location="$VIDEO" \
    t. ! queue ! filesink location="$SOURCE" >"$LOG" 2>&1 </dev/null || {
    tail -20 "$LOG" >&2
    echo "demo.sh: the pipeline failed; full log in $LOG" >&2
    exit 1
  }
  ms=$((($(date +%s%N) - start) / 1000000))
  used=$(sed -n 's/.*Using the \([a-z]*\) backend.*/\1/p' "$LOG" | head -1)
  IFS=, read -r w h n <<<"$(ffprobe -v error -count_frames -select_streams v:0 \
    -show_entries stream=width,height,nb_read_frames -of csv=p=0 "$VIDEO")"
  psnr=$(ffmpeg -nostdin -hide_banner -s "${w}x$h" -pix_fmt yuv420p -f rawvideo -i "$SOURCE" \
    -i "$VIDEO" -lavfi "[1:v]setpts=N/TB[dec];[0:v]setpts=N/TB[src];[dec][src]psnr" -f null - 2>&1 |
    sed -n 's/.*PSNR \(y:.*\) min.*/\1/p' | tail -1)
  kbps=$(ffprobe -v error -show_entries format=bit_rate -of csv=p=0 "$VIDEO")
  python3 - "$n" "$ms" "$kbps" "$w" "$h" "${used:-unknown}" "$psnr" "$VIDEO" <<'PY'
import sys
n, ms, bps, w, h, used, psnr, video = sys.argv[1:]
n, s = int(n), int(ms) / 1000
print(f"demo.sh: {n} frames {w}x{h} encoded on the {used} backend in {s:.1f} s: {n / s:.1f} fps "
      f"(decode + encode + mux, whole pipeline)")
v = dict(kv.split(":") for kv in psnr.split())
print(f"demo.sh: {int(bps) / 1000:.1f} kbit/s; PSNR against the source: Y {float(v['y']):.2f} dB, "
      f"U {float(v['u']):.2f} dB, V {float(v['v']):.2f} dB, average {float(v['average']):.2f} dB")
print(f"demo.sh: output: {video}")
PY
  exit 0
fi

FRAMES=${FRAMES:-150}
VIDEO=results/$NAME-mv.mp4
CSV=results/$NAME-motion.csv
LOG=results/$NAME-messages.log
LIMIT=()
[ "$FRAMES" -gt 0 ] && LIMIT=(identity eos-after="$FRAMES" !)

echo "demo.sh: cudamv backend=$BACKEND block-size=$BLOCK search-range=$RANGE subpel=$SUBPEL lambda=$LAMBDA on $INPUT" \
  "($([ "$FRAMES" -gt 0 ] && echo "$FRAMES frames" || echo "all frames"))"
start=$(date +%s%N)
# -m prints every bus message: the element posts one "cudamv" message per frame.
gst-launch-1.0 -m -e filesrc location="$INPUT" ! decodebin ! videoconvert ! video/x-raw,format=I420 ! \
  "${LIMIT[@]}" cudamv name=mv backend="$BACKEND" block-size="$BLOCK" search-range="$RANGE" \
  subpel="$SUBPEL" lambda="$LAMBDA" draw=true post-messages=true ! videoconvert ! \
  x264enc speed-preset=veryfast ! mp4mux ! filesink location="$VIDEO" >"$LOG" 2>&1 </dev/null || {
  tail -20 "$LOG" >&2
  echo "demo.sh: the pipeline failed; full log in $LOG" >&2
  exit 1
}
ms=$((($(date +%s%N) - start) / 1000000))

python3 - "$LOG" "$CSV" "$ms" <<'PY'
import re, sys

log, csv_path, ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
field = lambda name, line: re.search(name + r"=\([a-z0-9]+\)([^,;]+)", line)
rows = []
with open(log, errors="replace") as f:
    for line in f:
        if "(element): cudamv," not in line:
            continue
        get = {k: field(k, line) for k in ("timestamp", "blocks", "mean-length", "max-length",
                                           "moving-fraction")}
        if not all(get.values()):
            continue
        rows.append((int(get["timestamp"].group(1)) / 1e9, int(get["blocks"].group(1)),
                     float(get["mean-length"].group(1)), float(get["max-length"].group(1)),
                     float(get["moving-fraction"].group(1))))
if not rows:
    sys.exit("demo.sh: the element posted no motion messages; see " + log)
with open(csv_path, "w") as f:
    f.write("frame,pts_s,blocks,mean_length_px,max_length_px,moving_fraction\n")
    for i, r in enumerate(rows, 1):
        f.write(f"{i},{r[0]:.3f},{r[1]},{r[2]:.4f},{r[3]:.4f},{r[4]:.4f}\n")
print(f"{'frame':>5} {'pts (s)':>8} {'mean |mv| px':>12} {'max |mv| px':>11} {'moving':>7}")
for i, r in enumerate(rows, 1):  # frame 0 has no reference, so no message
    print(f"{i:5d} {r[0]:8.3f} {r[2]:12.3f} {r[3]:11.2f} {100 * r[4]:6.1f}%")
n = len(rows)
print(f"{n} frames with vectors ({rows[0][1]} blocks each) in {ms / 1000:.1f} s "
      f"({(n + 1) / (ms / 1000):.1f} fps end to end); mean |mv| {sum(r[2] for r in rows) / n:.3f} px, "
      f"max {max(r[3] for r in rows):.2f} px, moving blocks {100 * sum(r[4] for r in rows) / n:.1f}% on average")
PY
echo "demo.sh: video with the vectors drawn: $VIDEO"
echo "demo.sh: per-frame statistics: $CSV"
