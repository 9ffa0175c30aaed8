#!/usr/bin/env bash
# tools/quality.sh: QP sweep of cudah264enc, x264enc (constrained-baseline) and openh264enc on real clips: BD-rate table, RD plot, intra-pruning tables
#
# Usage: tools/quality.sh [--build DIR] [--out DIR] [--frames N] [--qps 22,27,32,37]
#                         [--clips vtest,Megamind,tree] [--encoders LIST] [--backend auto|cuda|cpu]
#                         [--pruning-qp Q | --no-pruning] [--repeat R] [--plot FILE | --no-plot]
#                         [--max-bdrate PCT]
#   Encoders: cudah264enc, x264-veryfast, x264-medium, openh264 (skipped when not installed);
#   also x264-veryfast-ipf1 and cudah264enc-ipf1 (ip-factor=1.0: the same QP for I and P frames;
#   both default to 1.4, I frames 3 QP finer), cudah264enc-slow and cudah264enc-fast (speed-preset).
#   x264enc runs in constant-QP mode (pass=quant), psy-tune=psnr, caps profile=constrained-baseline;
#   openh264enc in rate-control=quality with qp-min = qp-max; cudah264enc with qp= (its default
#   speed-preset, medium, and ip-factor, 1.4). Every stream is decoded by ffmpeg and compared with the source frames by
#   ffmpeg's psnr filter (Y-PSNR of the mean squared error over all frames), frame by frame in
#   decode order (setpts=N/TB: x264 writes VUI timing, the others do not, so timestamps differ).
#   Pruning tables: cudah264enc with intra-pruning none, sobel, kirsch at one QP, with I and P
#   frames and with every frame an IDR; CPU time the smallest of R runs (default 3).
#   --max-bdrate PCT: exit 1 if cudah264enc's BD-rate against x264-veryfast exceeds PCT on any clip.
# Writes OUT/results.csv, OUT/pruning.csv and the plot (default OUT/rd.png); prints Markdown tables.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${GVC_BUILD_DIR:-build}
OUT=results/quality
FRAMES=30
QPS=22,27,32,37
CLIPS=vtest,Megamind,tree
ENCODERS=cudah264enc,x264-veryfast,x264-medium,openh264
BACKEND=auto
PRUNING_QP=27
REPEAT=3
PLOT=
MAX_BDRATE=
DATA=/usr/share/doc/opencv-doc/examples/data

while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD_DIR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --frames) FRAMES=$2; shift 2 ;;
    --qps) QPS=$2; shift 2 ;;
    --clips) CLIPS=$2; shift 2 ;;
    --encoders) ENCODERS=$2; shift 2 ;;
    --backend) BACKEND=$2; shift 2 ;;
    --pruning-qp) PRUNING_QP=$2; shift 2 ;;
    --no-pruning) PRUNING_QP=; shift ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --plot) PLOT=$2; shift 2 ;;
    --no-plot) PLOT=none; shift ;;
    --max-bdrate) MAX_BDRATE=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "quality.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -z "$PLOT" ] && PLOT=$OUT/rd.png
# The plot needs matplotlib (Debian: python3-matplotlib, for /usr/bin/python3).
PY=python3
if [ "$PLOT" != none ]; then
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import matplotlib' 2>/dev/null; then PY=$candidate; break; fi
  done
  if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
    echo "quality.sh: no matplotlib (apt-get install python3-matplotlib): no plot" >&2
    PLOT=none
  fi
fi

case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
export GST_PLUGIN_PATH="$BUILD_DIR/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
if ! gst-inspect-1.0 cudah264enc >/dev/null 2>&1; then
  echo "quality.sh: cudah264enc not found in $BUILD_DIR/gst (build first, or pass --build DIR)" >&2
  exit 1
fi
if [[ ",$ENCODERS," == *,openh264,* ]] && ! gst-inspect-1.0 openh264enc >/dev/null 2>&1; then
  echo "quality.sh: openh264enc is not installed (gstreamer1.0-plugins-bad): skipping it" >&2
  ENCODERS=$(echo ",$ENCODERS," | sed 's/,openh264,/,/; s/^,//; s/,$//')
fi
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# clip -> "width height fps": half the native size (tree.avi is already small: native).
clip_geometry() {
  case "$1" in
    vtest) echo "384 288 10/1" ;;
    Megamind) echo "360 264 2997/125" ;;
    tree) echo "320 240 15/1" ;;
    *) echo "quality.sh: unknown clip $1 (vtest, Megamind, tree)" >&2; return 1 ;;
  esac
}

# encoder name, qp -> the gst-launch fragment
encoder_fragment() {
  local q=$2
  case "$1" in
    # cudah264enc[-sobel|-kirsch][-intra]: intra pruning; -intra: every frame an IDR;
    # cudah264enc-ipf1: ip-factor=1.0 (I frames at the P frames' QP); -slow, -fast: speed-preset
    cudah264enc|cudah264enc-sobel*|cudah264enc-kirsch*|cudah264enc-intra|cudah264enc-ipf1|cudah264enc-slow|cudah264enc-fast)
      local extra="" kim=250
      case "$1" in
        *-kirsch*) extra=" intra-pruning=kirsch" ;;
        *-sobel*) extra=" intra-pruning=sobel" ;;
        *-ipf1) extra=" ip-factor=1.0" ;;
        *-slow) extra=" speed-preset=slow" ;;
        *-fast) extra=" speed-preset=fast" ;;
      esac
      case "$1" in *-intra) kim=1 ;; esac
      echo "cudah264enc backend=$BACKEND qp=$q key-int-max=$kim$extra" ;;
    x264-veryfast|x264-medium)
      echo "x264enc pass=quant quantizer=$q speed-preset=${1#x264-} psy-tune=psnr key-int-max=250 !" \
           "video/x-h264,profile=constrained-baseline,stream-format=byte-stream" ;;
    # x264 with the same QP for I and P frames (ip-factor 1.4 by default: I frames ~3 QP finer)
    x264-veryfast-ipf1)
      echo "x264enc pass=quant quantizer=$q speed-preset=veryfast psy-tune=psnr key-int-max=250" \
           "ip-factor=1.0 ! video/x-h264,profile=constrained-baseline,stream-format=byte-stream" ;;
    openh264) echo "openh264enc rate-control=quality qp-min=$q qp-max=$q gop-size=250" ;;
    *) echo "quality.sh: unknown encoder $1" >&2; return 1 ;;
  esac
}

# encode_point CLIP ENCODER QP CSV [REPEAT] -> appends "clip,encoder,qp,kbps,psnr_y,wall_s,cpu_s"
encode_point() {
  local clip=$1 enc=$2 q=$3 csv=$4
  read -r w h fps <<<"$(clip_geometry "$clip")"
  local raw=$TMP/$clip.yuv out=$TMP/$clip-$enc-$q.h264 log=$TMP/$clip-$enc-$q.log
  # Wall and CPU (user + system) seconds of the whole gst-launch; with --repeat R the smallest of
  # R runs (CPU time is what the pruning tables use: wall time swings on a shared machine).
  local wall=1e9 cpu=1e9 r TIMEFORMAT='%R %U %S'
  for ((r = 0; r < ${5:-1}; r++)); do
    # shellcheck disable=SC2046
    if ! { time gst-launch-1.0 -q filesrc location="$raw" ! rawvideoparse width="$w" height="$h" \
        format=i420 framerate="$fps" ! $(encoder_fragment "$enc" "$q") ! h264parse ! \
        filesink location="$out" >"$log" 2>&1 </dev/null; } 2>"$log.time"; then
      cat "$log" >&2
      echo "quality.sh: $enc failed on $clip at qp $q" >&2
      return 1
    fi
    read -r wall cpu <<<"$(awk -v w="$wall" -v c="$cpu" \
      '{ cw = $1; cc = $2 + $3; printf "%s %s", (cw < w ? cw : w), (cc < c ? cc : c) }' "$log.time")"
  done
  local psnr
  psnr=$(ffmpeg -nostdin -hide_banner -s "${w}x$h" -pix_fmt yuv420p -f rawvideo -i "$raw" -i "$out" \
    -lavfi "[1:v]setpts=N/TB[dec];[0:v]setpts=N/TB[src];[dec][src]psnr" -f null - 2>&1 | sed -n 's/.*PSNR y:\([0-9.inf]*\).*/\1/p' | tail -1)
  if [ -z "$psnr" ]; then
    echo "quality.sh: no PSNR for $out" >&2
    return 1
  fi
  python3 - "$clip" "$enc" "$q" "$(stat -c %s "$out")" "$FRAMES" "$fps" "$psnr" "$wall" "$cpu" \
    >>"$csv" <<'PY'
import sys
clip, enc, q, size, frames, fps, psnr, wall, cpu = sys.argv[1:]
num, den = (fps.split("/") + ["1"])[:2]
seconds = int(frames) * int(den) / int(num)
print(f"{clip},{enc},{q},{int(size) * 8 / seconds / 1000:.2f},{float(psnr):.4f},{float(wall):.2f},{float(cpu):.2f}")
PY
  tail -1 "$csv" | awk -F, '{printf "  %-9s %-19s qp %2s  %9.1f kbit/s  %6.2f dB  %6.2f s wall  %6.2f s cpu\n", $1, $2, $3, $4, $5, $6, $7}' >&2
}

IFS=, read -r -a clip_list <<<"$CLIPS"
IFS=, read -r -a qp_list <<<"$QPS"
IFS=, read -r -a enc_list <<<"$ENCODERS"
for clip in "${clip_list[@]}"; do
  read -r w h fps <<<"$(clip_geometry "$clip")"
  ffmpeg -nostdin -v error -y -i "$DATA/$clip.avi" -frames:v "$FRAMES" -vf "scale=$w:$h" \
    -pix_fmt yuv420p -f rawvideo "$TMP/$clip.yuv"
  got=$(($(stat -c %s "$TMP/$clip.yuv") / (w * h * 3 / 2)))
  [ "$got" -eq "$FRAMES" ] || { echo "quality.sh: $clip has only $got frames" >&2; exit 1; }
done

CSV=$OUT/results.csv
echo "clip,encoder,qp,kbps,psnr_y,wall_s,cpu_s" >"$CSV"
echo "quality.sh: $FRAMES frames per clip, QPs $QPS, backend=$BACKEND" >&2
for clip in "${clip_list[@]}"; do
  for enc in "${enc_list[@]}"; do
    for q in "${qp_list[@]}"; do
      encode_point "$clip" "$enc" "$q" "$CSV"
    done
  done
done

BD_ARGS=("$CSV" --anchor x264-veryfast --markdown)
[ "$PLOT" != none ] && BD_ARGS+=(--plot "$PLOT")
[ -n "$MAX_BDRATE" ] && BD_ARGS+=(--test cudah264enc --max "$MAX_BDRATE")
status=0
echo
"$PY" "$ROOT/tools/bdrate.py" "${BD_ARGS[@]}" || status=$?

if [ -n "$PRUNING_QP" ]; then
  PCSV=$OUT/pruning.csv
  echo "clip,encoder,qp,kbps,psnr_y,wall_s,cpu_s" >"$PCSV"
  for clip in "${clip_list[@]}"; do
    for enc in cudah264enc cudah264enc-sobel cudah264enc-kirsch \
               cudah264enc-intra cudah264enc-sobel-intra cudah264enc-kirsch-intra; do
      encode_point "$clip" "$enc" "$PRUNING_QP" "$PCSV" "$REPEAT"
    done
  done
  python3 - "$PCSV" "$FRAMES" "$PRUNING_QP" "$REPEAT" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
frames, qp, repeat = sys.argv[2], sys.argv[3], sys.argv[4]
size = {"vtest": "384×288", "Megamind": "360×264", "tree": "320×240"}
by = {}  # (clip, frame types) -> pruning mode -> row
for r in rows:
    e = r["encoder"]
    mode = "kirsch" if "kirsch" in e else "sobel" if "sobel" in e else "none"
    by.setdefault((r["clip"], "all I" if e.endswith("-intra") else "I + P"), {})[mode] = r
print(f"\nIntra pruning, {frames} frames at qp {qp}: CPU time (s, user + system of the whole pipeline, "
      f"best of {repeat} runs) and speed-up")
print("| clip | size | frames | none | Sobel (Pan) | Kirsch | speed-up Kirsch/none | speed-up Kirsch/Sobel |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for (clip, gop), m in by.items():
    t = {k: float(v["cpu_s"]) for k, v in m.items()}
    print(f"| {clip} | {size.get(clip, '')} | {gop} | {t['none']:.2f} | {t['sobel']:.2f} | {t['kirsch']:.2f} | "
          f"{t['none'] / t['kirsch']:.2f} | {t['sobel'] / t['kirsch']:.2f} |")
print(f"\nIntra pruning, {frames} frames at qp {qp}: luma PSNR (dB) and bit rate")
print("| clip | size | frames | none | Sobel (Pan) | Kirsch | ΔPSNR Kirsch−none | ΔPSNR Kirsch−Sobel | bits Kirsch/none |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (clip, gop), m in by.items():
    p = {k: float(v["psnr_y"]) for k, v in m.items()}
    b = {k: float(v["kbps"]) for k, v in m.items()}
    print(f"| {clip} | {size.get(clip, '')} | {gop} | {p['none']:.2f} | {p['sobel']:.2f} | {p['kirsch']:.2f} | "
          f"{p['kirsch'] - p['none']:+.3f} | {p['kirsch'] - p['sobel']:+.3f} | {b['kirsch'] / b['none']:.3f} |")
PY
fi
echo "quality.sh: results in $CSV${PRUNING_QP:+ and $OUT/pruning.csv}" >&2
exit "$status"
