#!/bin/sh
# tools/bench-hevcdec.sh: HEVC decoding fps on a GPU host, side by side in one run: our engine (CPU, --cuda), cudahevcdec, nvh265dec (NVDEC), libde265dec
# Usage: tools/bench-hevcdec.sh BUILDDIR STREAM.hevc... ; RUNS (default 3) runs per decoder,
# interleaved, median reported. Needs the GStreamer runtime in the environment
# (source .gpuhost/gst-env.sh). Every decoder decodes the whole file; the gst-launch-1.0 rows
# are timed from PLAYING to EOS ("Execution ended after"), into fakesink:
#   cudahevcdec backend=cuda|cpu  system memory out (each picture downloaded)
#   nvh265dec                     NVDEC, CUDA memory out (nothing downloaded)
#   libde265dec max-threads=16    libde265 on 16 threads
# and the engine rows are bench-hevc's median (no GStreamer, pictures taken as 16-bit planes).
set -u
build=${1:?usage: tools/bench-hevcdec.sh BUILDDIR STREAM.hevc...}
shift
runs=${RUNS:-3}
export GST_PLUGIN_PATH="$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

gst_seconds() {  # $1 stream, $2 decoder with properties, $3 caps after it (or "")
  gst-launch-1.0 filesrc location="$1" ! h265parse ! $2 ! ${3:+$3 !} fakesink sync=false async=false 2>&1 |
    sed -n 's/^Execution ended after \([0-9]*\):\([0-9]*\):\([0-9.]*\)$/\1 \2 \3/p' |
    awk '{ print $1 * 3600 + $2 * 60 + $3 }'
}

for stream in "$@"; do
  frames=$("$build/tools/bench-hevc" "$stream" 1 | sed -n 's/^frames=\([0-9]*\).*/\1/p')
  [ -n "$frames" ] || { echo "bench-hevcdec: $stream does not decode" >&2; continue; }
  echo "== $(basename "$stream"): $frames frames, median of $runs runs; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null), $(nproc) CPUs"
  printf '%-34s %9s %9s\n' decoder seconds fps
  tmp=$(mktemp -d)
  for r in $(seq "$runs"); do
    "$build/tools/bench-hevc" "$stream" 1 | sed -n 's/.*median_s=\([0-9.]*\).*/\1/p' >> "$tmp/engine-cpu"
    "$build/tools/bench-hevc" --cuda "$stream" 1 | sed -n 's/.*median_s=\([0-9.]*\).*/\1/p' >> "$tmp/engine-cuda"
    gst_seconds "$stream" "cudahevcdec backend=cuda" >> "$tmp/el-cuda"
    gst_seconds "$stream" "cudahevcdec backend=cpu" >> "$tmp/el-cpu"
    gst_seconds "$stream" "nvh265dec" "video/x-raw(memory:CUDAMemory)" >> "$tmp/nvdec"
    gst_seconds "$stream" "libde265dec max-threads=16" >> "$tmp/de265"
  done
  for row in "engine-cpu:engine, CPU reconstruction" "engine-cuda:engine, GPU reconstruction" \
             "el-cpu:cudahevcdec backend=cpu" "el-cuda:cudahevcdec backend=cuda" \
             "nvdec:nvh265dec (NVDEC)" "de265:libde265dec max-threads=16"; do
    f=${row%%:*}
    s=$(median < "$tmp/$f")
    if [ -n "$s" ]; then
      printf '%-34s %9.3f %9.1f\n' "${row#*:}" "$s" "$(echo "$frames $s" | awk '{ print $1 / $2 }')"
    else
      printf '%-34s %9s\n' "${row#*:}" "failed"
    fi
  done
  rm -rf "$tmp"
done
