#!/bin/bash
# tools/gpu-host-test.sh: on a GPU host: unpack GStreamer, build, run every test and the benchmarks
#
# Run from the repository root on the device machine, with .gpuhost (shared/GPU-HOST.md) and
# .content (the raw real-content file and the HEVC matrix streams, made by
# `tools/gpu-host-test.sh --make-content` here)
# carried. Logs go to $OUT (or /tmp/gvc-out). Environment:
#   SUITES="checkgpu"   run only these meson test suites (default: all)
#   BENCH=0             skip the benchmarks        ARCHS=90   CUDA archs to build
#   TARGETS="a b"       build only these targets (when a subdir of others does not build yet)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
content=$root/.content/elephants_4096x2304.gray

if [ "${1:-}" = --make-content ]; then  # on the development machine (needs ffmpeg)
  mkdir -p .content
  grep -qx '/.content/' .git/info/exclude 2>/dev/null || echo '/.content/' >> .git/info/exclude
  ffmpeg -v error -y -i /usr/share/backgrounds/mate/abstract/Elephants_5640x3172.jpg \
    -vf crop=4096:2304:772:434,format=gray -f rawvideo "$content" || exit 1
  # the HEVC conformance matrix's streams, for checkgpu's HevcReconStreams (a build in
  # ${GVC_BUILD_DIR:-build} with the decoder tests is needed)
  mkdir -p .content/hevc
  GVC_HEVC_SAVE_DIR=$root/.content/hevc GVC_TEST_CLIP=/usr/share/doc/opencv-doc/examples/data/vtest.avi \
    "${GVC_BUILD_DIR:-build}/tests/hevc/hevc_decode_test" --gtest_filter='*MatchesFfmpeg*' > /dev/null || exit 1
  # and the synthetic ones (tiles, dependent slices, PCM)
  synth=$(mktemp -d)
  GVC_SYNTH_DUMP=$synth GVC_TEST_CLIP=/usr/share/doc/opencv-doc/examples/data/vtest.avi \
    "${GVC_BUILD_DIR:-build}/tests/hevc/hevc_synth_test" > /dev/null || exit 1
  for f in "$synth"/*.hevc; do cp "$f" ".content/hevc/synth_$(basename "${f%.hevc}").265"; done
  rm -rf "$synth"
  exit 0
fi
[ -d "$root/.content/hevc" ] && export GVC_HEVC_STREAMS=$root/.content/hevc

out=${OUT:-/tmp/gvc-out}
mkdir -p "$out"
build=/tmp/b
log() { echo "== $*"; }

log "unpack GStreamer runtime"
mkdir -p /opt/gstrt && tar -xJf .gpuhost/gst-runtime.tar.xz -C /opt/gstrt || exit 1
# shellcheck disable=SC1091
source .gpuhost/gst-env.sh /opt/gstrt
[ -f "$content" ] && export GVC_ELEPHANTS=$content
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"

log "configure and build"
if ! meson setup "$build" -Dcuda=enabled -Dcuda-archs="${ARCHS:-90}" > "$out/setup.log" 2>&1; then
  tail -30 "$out/setup.log"; exit 1
fi
# shellcheck disable=SC2086
if ! meson compile -C "$build" ${TARGETS:-} > "$out/build.log" 2>&1; then
  grep -E "error|FAILED" "$out/build.log" | head -40; exit 1
fi

rc=0
log "meson test ${SUITES:-(all)}"
suite_args=()
for s in ${SUITES:-}; do suite_args+=(--suite "$s"); done
meson test -C "$build" --print-errorlogs ${TARGETS:+--no-rebuild} "${suite_args[@]}" > "$out/test.log" 2>&1 || rc=1
cp "$build/meson-logs/testlog.txt" "$out/testlog.txt" 2>/dev/null
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Expected Fail|Unexpected Pass|Timeout):" "$out/test.log" | tail -40
grep -m1 "checkgpu: seed" "$out/testlog.txt" 2>/dev/null

if [ "${BENCH:-1}" != 0 ]; then
  log "kernel benchmark"
  tools/bench "$build" kernel > "$out/bench.log" 2>&1 || rc=1
  log "checkgpu --bench"
  "$build/tests/checkgpu/checkgpu" --gtest_filter=BackendCheck.* --bench >> "$out/bench.log" 2>&1 || rc=1
  cat "$out/bench.log"
  [ -x tools/bench-element.sh ] && { tools/bench "$build" element > "$out/bench-element.log" 2>&1 || rc=1; }
fi
exit $rc
