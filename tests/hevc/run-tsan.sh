#!/usr/bin/env bash
# tests/hevc/run-tsan.sh: the HEVC decoder tests built with ThreadSanitizer in a build folder of their own, run on every matrix and synthetic stream (WPP rows on 8 threads) and the reconstructor tests (its calls on the decoder's own thread)
#
# Usage (meson test hevc_decode_tsan runs it): tests/hevc/run-tsan.sh OUT_DIR
# The project's build cannot carry -fsanitize=thread for one test, so this configures a second
# meson build (no CUDA, no examples) in OUT_DIR and builds only the two test programs. Any
# race report fails the test. Exit status 77 (skip) where the compiler cannot link a TSan
# program.
set -uo pipefail
main() {
  here=$(cd "$(dirname "$0")" && pwd)
  root=$(cd "$here/../.." && pwd)
  out=${1:?usage: run-tsan.sh OUT_DIR}
  mkdir -p "$out"
  printf 'int main() { return 0; }\n' > "$out/probe.cpp"
  if ! c++ -fsanitize=thread "$out/probe.cpp" -o "$out/probe" > "$out/probe.log" 2>&1 || ! "$out/probe"; then
    cat "$out/probe.log"
    echo "run-tsan.sh: SKIP: the compiler cannot build or run a ThreadSanitizer program"
    exit 77
  fi
  if [ ! -f "$out/build/build.ninja" ]; then
    meson setup "$out/build" "$root" -Dcuda=disabled -Dexamples=disabled -Db_sanitize=thread \
      -Dbuildtype=debugoptimized > "$out/setup.log" 2>&1 || { cat "$out/setup.log"; exit 1; }
  fi
  ninja -C "$out/build" tests/hevc/hevc_decode_test tests/hevc/hevc_synth_test > "$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log"; exit 1; }
  export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
  "$out/build/tests/hevc/hevc_decode_test" --gtest_filter='*MatchesFfmpeg*:HevcDecodeReconstructor.*:HevcDecodeFrameThreads.*:Inter/HevcDecodeTest.FrameThreads*:Rewritten/HevcDecodeTest.FrameThreads*' || exit 1
  "$out/build/tests/hevc/hevc_synth_test" || exit 1
}
main "$@"
