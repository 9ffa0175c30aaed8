#!/usr/bin/env bash
# scripts/demo.sh: installs, builds, then runs cudamv on a real clip: a video with the vectors drawn, per-frame motion statistics
#
# Usage: scripts/demo.sh [--frames N] [--backend auto|cuda|cpu] [--block 16x16|8x8|4x4|auto]
#                        [--range R] [--subpel none|half|quarter] [--lambda L] [FILE]
#   FILE defaults to OpenCV's vtest.avi (Debian package opencv-doc), people walking, 768x576.
#   --frames 0 runs the whole clip (795 frames: minutes on the CPU backend, seconds on a GPU).
# Writes results/<clip>-mv.mp4 (H.264, vectors drawn as arrows), results/<clip>-motion.csv
# (one row per frame) and prints the same statistics as a table.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${GVC_BUILD_DIR:-build}
FRAMES=150
BACKEND=auto
BLOCK=16x16
RANGE=16
SUBPEL=quarter
LAMBDA=${GVC_DEMO_LAMBDA:-0}
INPUT=/usr/share/doc/opencv-doc/examples/data/vtest.avi

while [ $# -gt 0 ]; do
  case "$1" in
    --frames) FRAMES=$2; shift 2 ;;
    --backend) BACKEND=$2; shift 2 ;;
    --block) BLOCK=$2; shift 2 ;;
    --range) RANGE=$2; shift 2 ;;
    --subpel) SUBPEL=$2; shift 2 ;;
    --lambda) LAMBDA=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
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
VIDEO=results/$NAME-mv.mp4
CSV=results/$NAME-motion.csv
LOG=results/$NAME-messages.log
LIMIT=()
[ "$FRAMES" -gt 0 ] && LIMIT=(identity eos-after="$FRAMES" !)

export GST_PLUGIN_PATH="$ROOT/$BUILD_DIR${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
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
