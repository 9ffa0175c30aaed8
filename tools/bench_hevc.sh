#!/bin/sh
# tools/bench_hevc.sh: HEVC decoding fps of our engine (CPU) and cudahevcdec next to avdec_h265 max-threads=1 on one 1080p x265 stream
# Usage: tools/bench_hevc.sh BUILDDIR [CLIP] [FRAMES]; `tools/bench BUILDDIR hevc [CLIP] [FRAMES]` calls it.
#   CLIP    a video, scaled to 1920x1080, or a still image (.jpg/.png, at least 1920x1080) that a
#           1920x1080 window pans across; default opencv-doc's vtest.avi
#   FRAMES  frames encoded (default 60); RUNS (environment, default 5) runs per decoder
# The stream is made once with ffmpeg -c:v libx265 (x265 defaults: preset medium, CRF 28,
# B pyramid) and kept in BUILDDIR/bench-hevc/. Every decoder decodes that same file, all its
# frames (checked against ffprobe's count), single-threaded; the median of RUNS is shown.
# gst-launch-1.0 times are its "Execution ended after" (PLAYING to EOS: no process start or
# plugin loading); fakesink async=false so that no frame is decoded while prerolling.
set -eu
build=${1:?usage: tools/bench_hevc.sh BUILDDIR [CLIP] [FRAMES]}
clip=${2:-/usr/share/doc/opencv-doc/examples/data/vtest.avi}
frames=${3:-60}
runs=${RUNS:-5}
[ -f "$clip" ] || { echo "bench_hevc: no clip $clip" >&2; exit 1; }
[ -x "$build/tools/bench-hevc" ] || { echo "bench_hevc: build $build/tools/bench-hevc first" >&2; exit 1; }
export GST_PLUGIN_PATH="$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"

dir="$build/bench-hevc"
mkdir -p "$dir"
base=$(basename "$clip")
stream="$dir/${base%.*}-1080p-$frames.hevc"
case "$clip" in
  *.jpg|*.jpeg|*.png|*.JPG|*.PNG)
    input="-loop 1 -framerate 25 -i $clip"
    vf="crop=1920:1080:n*24:(ih-1080)/2+n*2" ;;
  *)
    input="-i $clip"
    vf="scale=1920:1080:flags=bicubic" ;;
esac
if [ ! -s "$stream" ]; then
  echo "== encoding $frames frames of $clip at 1920x1080 with libx265 (once) -> $stream"
  # shellcheck disable=SC2086 # $input is several arguments
  ffmpeg -nostdin -y -loglevel error $input -frames:v "$frames" -vf "$vf,format=yuv420p" \
    -c:v libx265 -x265-params log-level=error -f hevc "$stream"
fi
expected=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
  -of csv=p=0 "$stream")

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# seconds from PLAYING to EOS of a gst-launch-1.0 decode of the stream with decoder $1
gst_seconds() {
  # shellcheck disable=SC2086 # $1 is an element with its properties
  gst-launch-1.0 filesrc location="$stream" ! h265parse ! $1 ! fakesink sync=false async=false 2>&1 |
    sed -n 's/^Execution ended after \([0-9]*\):\([0-9]*\):\([0-9.]*\)$/\1 \2 \3/p' |
    awk '{ print $1 * 3600 + $2 * 60 + $3 }'
}

gst_frames() {
  # shellcheck disable=SC2086
  gst-launch-1.0 -v filesrc location="$stream" ! h265parse ! $1 ! \
    fakesink sync=false silent=false 2>&1 | grep -c "last-message = chain" || true
}

# one row of the table; sets $fps
row() {
  fps=$(echo "$2 $3" | awk '{ print $1 / $2 }')
  printf '%-28s %8s %10.3f %10.2f\n' "$1" "$2" "$3" "$fps"
  [ "$2" = "$expected" ] || echo "   WARNING: $1 output $2 frames, not $expected" >&2
}

gst_row() {
  n=$(gst_frames "$1")
  s=$(i=0; while [ $i -lt "$runs" ]; do gst_seconds "$1"; i=$((i + 1)); done | median)
  row "$1" "$n" "$s"
}

echo "== HEVC decoding, $(basename "$stream"): $expected frames, median of $runs runs"
echo "   machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs"
printf '%-28s %8s %10s %10s\n' decoder frames seconds fps
engine=$("$build/tools/bench-hevc" "$stream" "$runs" | tail -1)
row "engine (tools/bench-hevc)" "$(echo "$engine" | sed 's/.*frames=\([0-9]*\).*/\1/')" \
  "$(echo "$engine" | sed 's/.*median_s=\([0-9.]*\).*/\1/')"
fps_engine=$fps
gst_row cudahevcdec
fps_element=$fps
gst_row "avdec_h265 max-threads=1"
echo "$fps_engine $fps_element $fps" |
  awk '{ printf "   engine / avdec_h265: %.2f; cudahevcdec / avdec_h265: %.2f\n", $1 / $3, $2 / $3 }'
