#!/bin/sh
# tools/bench-hevcdec.sh: HEVC decoding fps on a GPU host, side by side in one run: our engine (CPU, --cuda), cudahevcdec, nvh265dec (NVDEC), libde265dec
# Usage: tools/bench-hevcdec.sh BUILDDIR STREAM.hevc... ; RUNS (default 3) runs per decoder,
# interleaved, median reported. Needs the GStreamer runtime in the environment
# (source .gpuhost/gst-env.sh). Every decoder decodes the whole file; the gst-launch-1.0 rows
# are timed from PLAYING to EOS ("Execution ended after"), into fakesink:
#   cudahevcdec backend=cuda      CUDA memory out (nothing downloaded), and system memory out
#   cudahevcdec backend=cpu       system memory out
#   nvh265dec                     NVDEC, CUDA memory out (nothing downloaded)
#   libde265dec max-threads=16    libde265 on 16 threads
# and the engine rows are bench-hevc's median (no GStreamer; pictures taken as 16-bit planes,
# or with --keep copied on the GPU as NV12/P010, with FRAME_THREADS pictures parsed at once,
# default 16 as cudahevcdec's frame-threads). TRANSCODE=1 adds one run of each
# transcode into fakesink: cudahevcdec ! cudah264enc and nvh265dec ! cudah264enc. CPU=0 leaves
# out the two CPU-reconstruction rows (the slowest). MEM=1 adds the GPU memory of each
# GStreamer decoder (nvidia-smi's largest sample of the gst-launch-1.0 process) next to a
# process holding only a CUDA context (videotestsrc ! cudaupload), and bench-hevc's count of
# what the reconstructor leaves allocated (cudaMemGetInfo) with its pictures.
# REPEAT=N (default 8) also times every GStreamer row on the stream repeated N times (one
# file, the coded video sequences one after another) and adds a "steady" column:
# (N - 1) x frames / (t(N) - t(1)), the rate once running, free of what a run pays once
# (process start, CUDA context, allocations, the first pictures), the engine rows' likewise
# from their frame counts (REPEAT=1: the single stream only, no steady column). The repeated
# stream is taken to give REPEAT times the frames (a stream that opens with an IDR picture: a
# CRA's RASL pictures are dropped only at the start of the file).
set -u
build=${1:?usage: tools/bench-hevcdec.sh BUILDDIR STREAM.hevc...}
shift
runs=${RUNS:-3}
ft=${FRAME_THREADS:-16}
repeat=${REPEAT:-8}
[ "$repeat" -ge 1 ] 2>/dev/null || { echo "bench-hevcdec: REPEAT must be a whole number >= 1" >&2; exit 1; }
export GST_PLUGIN_PATH="$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

gst_seconds() {  # $1 stream, $2 decoder with properties, $3 caps after it (or "")
  gst-launch-1.0 filesrc location="$1" ! h265parse ! $2 ! ${3:+$3 !} fakesink sync=false async=false 2>&1 |
    sed -n 's/^Execution ended after \([0-9]*\):\([0-9]*\):\([0-9.]*\)$/\1 \2 \3/p' |
    awk '{ print $1 * 3600 + $2 * 60 + $3 }'
}

. "$(dirname "$0")/gpu-mem.sh"

for stream in "$@"; do
  frames=$("$build/tools/bench-hevc" "$stream" 1 | sed -n 's/^frames=\([0-9]*\).*/\1/p')
  [ -n "$frames" ] || { echo "bench-hevcdec: $stream does not decode" >&2; continue; }
  echo "== $(basename "$stream"): $frames frames$([ "$repeat" -gt 1 ] && echo " (steady: repeated $repeat times)"), median of $runs runs; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null), $(nproc) CPUs"
  tmp=$(mktemp -d)
  long=$stream
  if [ "$repeat" -gt 1 ]; then
    long=$tmp/repeated.hevc
    for i in $(seq "$repeat"); do cat "$stream"; done > "$long"
  fi
  # Each run is one line of its row's file: seconds on the stream, then (REPEAT > 1) seconds
  # and frames on the repeated one; "x" where a run failed (the line is then left out).
  engine() {  # $1 row file, rest: bench-hevc options
    f=$1
    shift
    one=$("$build/tools/bench-hevc" "$@" "$stream" 1 | sed -n 's/.*median_s=\([0-9.]*\).*/\1/p')
    many="x x"
    [ "$repeat" -gt 1 ] && many=$("$build/tools/bench-hevc" "$@" "$long" 1 |
      sed -n 's/^frames=\([0-9]*\) median_s=\([0-9.]*\).*/\2 \1/p')
    echo "${one:-x} ${many:-x x}" >> "$tmp/$f"
  }
  gst_row() {  # $1 row file, $2 decoder, $3 caps
    one=$(gst_seconds "$stream" "$2" "$3")
    many=x
    [ "$repeat" -gt 1 ] && many=$(gst_seconds "$long" "$2" "$3")
    echo "${one:-x} ${many:-x} $((repeat * frames))" >> "$tmp/$1"
  }
  for r in $(seq "$runs"); do
    [ "${CPU:-1}" = 0 ] || engine engine-cpu
    engine engine-cuda --cuda
    engine engine-keep --cuda --keep --frame-threads "$ft"
    gst_row el-cuda "cudahevcdec backend=cuda" "video/x-raw(memory:CUDAMemory)"
    gst_row el-cuda-sys "cudahevcdec backend=cuda" "video/x-raw"
    [ "${CPU:-1}" = 0 ] || gst_row el-cpu "cudahevcdec backend=cpu" ""
    gst_row nvdec "nvh265dec" "video/x-raw(memory:CUDAMemory)"
    gst_row de265 "libde265dec max-threads=16" ""
  done
  if [ "${TRANSCODE:-0}" = 1 ]; then
    gst_row tc-ours "cudahevcdec backend=cuda ! cudah264enc" ""
    gst_row tc-nvdec "nvh265dec ! cudah264enc" ""
  fi
  if [ "$repeat" -gt 1 ]; then
    printf '%-34s %9s %9s %12s\n' decoder seconds fps "steady fps"
  else
    printf '%-34s %9s %9s\n' decoder seconds fps
  fi
  for row in "engine-cpu:engine, CPU reconstruction" "engine-cuda:engine, GPU reconstruction" \
             "engine-keep:engine, GPU, kept, $ft frame threads" \
             "el-cpu:cudahevcdec backend=cpu" "el-cuda:cudahevcdec backend=cuda, CUDA mem" \
             "el-cuda-sys:cudahevcdec backend=cuda, system mem" \
             "nvdec:nvh265dec (NVDEC)" "de265:libde265dec max-threads=16" \
             "tc-ours:cudahevcdec ! cudah264enc" "tc-nvdec:nvh265dec ! cudah264enc"; do
    case $row in
      tc-*) [ "${TRANSCODE:-0}" = 1 ] || continue ;;
      *-cpu:*) [ "${CPU:-1}" = 0 ] && continue ;;
    esac
    f=${row%%:*}
    s=$(awk '$1 != "x" { print $1 }' "$tmp/$f" | median)
    if [ -z "$s" ]; then
      printf '%-34s %9s\n' "${row#*:}" "failed"
      continue
    fi
    # the median of the runs' steady rates
    steady=$(awk -v fr="$frames" '$1 != "x" && $2 != "x" && $2 > $1 { print ($3 - fr) / ($2 - $1) }' "$tmp/$f" | median)
    printf '%-34s %9.3f %9.1f %12s\n' "${row#*:}" "$s" "$(echo "$frames $s" | awk '{ print $1 / $2 }')" \
      "$([ -n "$steady" ] && printf '%.1f' "$steady")"
  done
  rm -rf "$tmp"
  if [ "${MEM:-0}" = 1 ]; then
    base=$(gpu_mem_mib videotestsrc num-buffers=30 ! cudaupload ! fakesink)
    ours=$(gpu_mem_mib filesrc location="$stream" ! h265parse ! cudahevcdec backend=cuda ! fakesink)
    nv=$(gpu_mem_mib filesrc location="$stream" ! h265parse ! nvh265dec ! fakesink)
    echo "GPU memory (MiB, per process): CUDA context alone $base, cudahevcdec $ours, nvh265dec $nv"
    "$build/tools/bench-hevc" --cuda --keep --frame-threads "$ft" "$stream" 1 | grep gpu_memory
  fi
done
