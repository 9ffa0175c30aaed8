#!/bin/sh
# tools/bench_hevc.sh: HEVC decoding fps of our engine (CPU) and cudahevcdec next to avdec_h265 max-threads=1 on one 1080p x265 stream
# Usage: tools/bench_hevc.sh BUILDDIR [CLIP] [FRAMES]; `tools/bench BUILDDIR hevc [CLIP] [FRAMES]` calls it.
#   CLIP    a video, scaled to 1920x1080, or a still image (.jpg/.png, at least 1920x1080) that a
#           1920x1080 window pans across; default opencv-doc's vtest.avi
#   FRAMES  frames encoded (default 60); RUNS (environment, default 5) runs per decoder
# The stream is made once with ffmpeg -c:v libx265 (x265 defaults: preset medium, CRF 28,
# B pyramid) and kept in BUILDDIR/bench-hevc/. Every decoder decodes that same file, all its
# frames (checked against ffprobe's count), single-threaded. Two times per decoder, each the
# median of RUNS runs, the runs of all decoders interleaved:
#   wall  the engine's decoding loop; gst-launch-1.0's "Execution ended after" (PLAYING to EOS,
#         fakesink async=false so that nothing is decoded while prerolling)
#   CPU   the engine's process CPU time over its decoding loop; for the elements, the CPU time
#         (user + system) of the gst-launch-1.0 process minus that of the same pipeline
#         without the decoder (filesrc ! h265parse ! fakesink: start-up, plugin loading,
#         reading and parsing), i.e. what the decoder and its output cost
# On a shared machine the CPU column is the steadier one; the load average is printed.
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
hz=$(getconf CLK_TCK)

# One gst-launch-1.0 run of filesrc ! h265parse ! $1 fakesink ($1: "DECODER [props] !" or
# nothing); prints its wall seconds (PLAYING to EOS) and its process CPU seconds.
gst_run() {
  # shellcheck disable=SC2016 # $1..$3 and $$ belong to the inner shell
  sh -c 'gst-launch-1.0 filesrc location="$1" ! h265parse ! $2 fakesink sync=false async=false \
           >"$3" 2>&1; cat /proc/$$/stat' sh "$stream" "$1" "$times/log" |
    awk -v hz="$hz" '{ print ($16 + $17) / hz }' >"$times/cpu"
  sed -n 's/^Execution ended after \([0-9]*\):\([0-9]*\):\([0-9.]*\)$/\1 \2 \3/p' "$times/log" |
    awk -v cpu="$(cat "$times/cpu")" '{ print $1 * 3600 + $2 * 60 + $3, cpu }'
}

gst_frames() {
  # shellcheck disable=SC2086 # $1 is an element with its properties
  gst-launch-1.0 -v filesrc location="$stream" ! h265parse ! $1 ! \
    fakesink sync=false silent=false 2>&1 | grep -c "last-message = chain" || true
}

# one row of the table: name, frames, wall seconds, CPU seconds; sets $fps (by CPU time)
row() {
  fps=$(echo "$2 $4" | awk '{ print $1 / $2 }')
  printf '%-28s %7s %9.3f %9.2f %9.3f %9.2f\n' "$1" "$2" "$3" "$(echo "$2 $3" | awk '{ print $1 / $2 }')" \
    "$4" "$fps"
  [ "$2" = "$expected" ] || echo "   WARNING: $1 output $2 frames, not $expected" >&2
}

echo "== HEVC decoding, $(basename "$stream"): $expected frames, median of $runs interleaved runs"
echo "   machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs;" \
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
times=$(mktemp -d)
trap 'rm -rf "$times"' EXIT
i=0
while [ $i -lt "$runs" ]; do
  "$build/tools/bench-hevc" "$stream" 1 | tail -1 >"$times/engine.last"
  sed 's/.*median_s=\([0-9.]*\).*median_cpu_s=\([0-9.]*\).*/\1 \2/' "$times/engine.last" >>"$times/engine"
  gst_run "" >>"$times/baseline"
  gst_run "cudahevcdec !" >>"$times/element"
  gst_run "avdec_h265 max-threads=1 !" >>"$times/avdec"
  i=$((i + 1))
done
echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
base_cpu=$(cut -d' ' -f2 "$times/baseline" | median)
echo "   pipeline without a decoder: $base_cpu s CPU (subtracted from the elements' CPU time)"
col() { cut -d' ' -f"$1" "$2" | median; }
minus_base() { awk -v b="$base_cpu" '{ print $2 - b }' "$1" | median; }
printf '%-28s %7s %9s %9s %9s %9s\n' decoder frames "wall s" "wall fps" "CPU s" "CPU fps"
row "engine (tools/bench-hevc)" "$(sed 's/.*frames=\([0-9]*\).*/\1/' "$times/engine.last")" \
  "$(col 1 "$times/engine")" "$(col 2 "$times/engine")"
fps_engine=$fps
row cudahevcdec "$(gst_frames cudahevcdec)" "$(col 1 "$times/element")" "$(minus_base "$times/element")"
fps_element=$fps
row "avdec_h265 max-threads=1" "$(gst_frames "avdec_h265 max-threads=1")" "$(col 1 "$times/avdec")" \
  "$(minus_base "$times/avdec")"
echo "$fps_engine $fps_element $fps" |
  awk '{ printf "   by CPU time: engine / avdec_h265 %.2f, cudahevcdec / avdec_h265 %.2f\n", $1 / $3, $2 / $3 }'
