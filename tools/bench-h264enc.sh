#!/bin/bash
# tools/bench-h264enc.sh: H.264 encoding fps at 1080p: our engine (CUDA and CPU backends) next to x264enc, GPU memory and 16 instances, one run
#
# Usage: tools/bench-h264enc.sh BUILDDIR [FRAMES]   ($GVC_ELEPHANTS names the raw painting)
# The same panning 1080p frames (bench-h264enc --write-raw) go through: bench-h264enc with the
# CUDA backend (per-stage medians; the engine's defaults, then pipelined with the fast preset),
# cudah264enc in a CUDA-memory pipeline (cudaupload), and x264enc ultrafast / veryfast /
# medium with threads=0, constrained-baseline, from the same file; then cudah264enc and
# x264enc veryfast with a queue before them. fps = frames / wall time of the encoding
# pipeline (file read and parse included), and the steady rate without the start-up (see
# run()).
# bench-h264enc-live (GPU hosts) also times the steady rates at the sink, every frame queued
# in an appsrc (cudah264enc from CUDA memory, x264enc veryfast from system memory), and pushes
# frames from CUDA memory at 30 fps, as cameras would: per-frame latency with tune=zerolatency,
# and whether 16 instances keep up in real time.
set -uo pipefail
build=${1:?usage: tools/bench-h264enc.sh BUILDDIR [FRAMES]}
frames=${2:-60}
raw=${TMPDIR:-/tmp}/gvc-bench-1080p.i420
bench=$build/tools/bench-h264enc
export GST_PLUGIN_PATH=$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

echo "== bench-h264enc, CUDA backend ($frames frames)"
"$bench" --backend cuda --frames "$frames" --write-raw "$raw" || exit 1
echo "== bench-h264enc, CUDA backend, pipelined, speed-preset fast ($frames frames)"
"$bench" --backend cuda --frames "$frames" --pipelined 1 --preset fast || true
echo "== bench-h264enc, CPU backend (5 frames)"
"$bench" --backend cpu --frames 5 || true

src_of() { echo "filesrc location=$1 ! rawvideoparse width=1920 height=1080 format=i420 framerate=30/1"; }
src=$(src_of "$raw")
# The first 10 frames alone: a pipeline's steady rate is (frames - 10) / (t(frames) - t(10)),
# free of what every run pays once (process start, plugin loading, CUDA context, first IDR).
short=${TMPDIR:-/tmp}/gvc-bench-1080p-10.i420
head -c $((1920 * 1080 * 3 * 10 / 2)) "$raw" > "$short"
gst-inspect-1.0 cudah264enc > /dev/null 2>&1  # the registry is built before any timing
seconds() {  # seconds RAWFILE PIPELINE-TAIL: wall time of one run, or nothing on failure
  local file=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  # shellcheck disable=SC2046
  gst-launch-1.0 -q $(src_of "$file") ! "$@" ! fakesink sync=false > /tmp/gvc-bench-gst.log 2>&1 || return 1
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
run() {  # run LABEL PIPELINE-TAIL: prints fps over the whole run and in the steady state
  local label=$1 whole part
  shift
  if ! whole=$(seconds "$raw" "$@") || ! part=$(seconds "$short" "$@"); then
    echo "$label: failed"; tail -3 /tmp/gvc-bench-gst.log; return 1
  fi
  python3 -c "print(f'{\"$label\":28s} {$frames / $whole:8.1f} fps over the run, {($frames - 10) / max($whole - $part, 1e-9):8.1f} fps steady')"
}
echo "== pipelines ($frames frames of 1920x1080 I420, $(nproc) cores)"
run "cudah264enc (CUDA memory)" cudaupload ! cudah264enc backend=cuda
for p in ultrafast veryfast medium; do
  run "x264enc $p" x264enc speed-preset=$p threads=0 ! "video/x-h264,profile=constrained-baseline"
done
# With a queue before the encoder, the file's reading (and the upload) run on a thread of their
# own, as in most applications' pipelines: both encoders gain from it (x264enc's own threads
# start at its input).
run "cudah264enc, queue before" cudaupload ! queue ! cudah264enc backend=cuda
run "x264enc veryfast, queue before" queue ! x264enc speed-preset=veryfast threads=0 ! "video/x-h264,profile=constrained-baseline"

. "$(dirname "$0")/gpu-mem.sh"
tees() {  # tees N: a tee into N cudah264enc branches
  local n=$1 i out="cudaupload ! tee name=t"
  for ((i = 0; i < n; i++)); do out+=" t. ! queue ! cudah264enc backend=cuda ! fakesink sync=false"; done
  echo "$out"
}
if command -v nvidia-smi > /dev/null; then
  echo "== GPU memory (nvidia-smi, per process; the CUDA context is counted once per process)"
  # shellcheck disable=SC2046
  one=$(gpu_mem_mib $src ! $(tees 1))
  # shellcheck disable=SC2046
  two=$(gpu_mem_mib $src ! $(tees 2))
  echo "one cudah264enc: $one MiB in all; a second one in the same process adds $((two - one)) MiB"
  echo "== 16 cudah264enc at once in one process ($frames frames each)"
  t0=$(date +%s.%N)
  # shellcheck disable=SC2046
  # shellcheck disable=SC2086,SC2046
  gst-launch-1.0 -q $src ! $(tees 16) > /tmp/gvc-bench-gst.log 2>&1 || { echo "16 instances: failed"; tail -3 /tmp/gvc-bench-gst.log; }
  t1=$(date +%s.%N)
  python3 -c "print(f'16 instances: {$frames / ($t1 - $t0):.1f} fps each, {16 * $frames / ($t1 - $t0):.1f} fps in all')"
fi
live=$build/tools/bench-h264enc-live
if [ -x "$live" ] && command -v nvidia-smi > /dev/null; then
  # The steady rates again, timed at the sink with every frame waiting in an appsrc (--flood):
  # no process start, no file, no upload, and the same frames for both encoders (bench-h264enc's
  # pan, every frame its own), cudah264enc's in CUDA memory, x264enc's in system memory. Rounds
  # interleaved.
  echo "== steady rate, 1080p frames all queued in appsrc, timed at appsink (bench-h264enc-live --flood, 600 frames)"
  # (speed-preset fast and x264enc veryfast: both fast presets, cudah264enc's at a better
  # BD-rate, docs/quality.md)
  flood() { "$live" --flood --instances 1 --frames 600 "$@" | sed -n 's/^in all: \([0-9.]*\) fps.*/\1/p'; }
  for round in 1 2 3; do
    cm=$(flood)
    cf=$(flood --preset fast)
    xv=$(flood --x264 veryfast)
    python3 -c "m, f, x = (float(v or 0) for v in ('$cm', '$cf', '$xv')); r = lambda c: c / x if x else 0; print(f'round $round: cudah264enc {m:7.1f} fps ({r(m):.2f}x), speed-preset=fast {f:7.1f} fps ({r(f):.2f}x); x264enc veryfast {x:7.1f} fps')"
  done
  # Frames pushed from CUDA memory at 30 fps, like cameras: the latency target (zerolatency,
  # one instance) and 16 instances in real time (the default tune).
  echo "== bench-h264enc-live: one cudah264enc tune=zerolatency, 1080p pushed at 30 fps (120 frames)"
  "$live" --instances 1 --tune zerolatency --frames 120 || echo "bench-h264enc-live: failed (status $?)"
  echo "== bench-h264enc-live: 16 cudah264enc at once, 1080p30 each (120 frames)"
  "$live" --instances 16 --frames 120 || echo "bench-h264enc-live: failed (status $?)"
fi
