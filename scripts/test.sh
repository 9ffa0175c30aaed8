#!/usr/bin/env bash
# scripts/test.sh: installs what is missing, builds, runs every test, ends with "N passed, N failed, N skipped"
#
# Usage: scripts/test.sh [--deps-only]
#   GVC_BUILD_DIR     build folder (default: build)
#   GVC_MESON_ARGS    extra `meson setup` options, e.g. "-Dcuda-archs=90" or "-Dcuda=disabled"
#   GVC_TEST_ARGS     extra `meson test` options, e.g. "--suite unit"
# The CUDA backend is built when nvcc is found (/usr/local/cuda/bin is searched too). Tests that
# need a GPU skip on a machine without one and are counted as skipped.
set -uo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${GVC_BUILD_DIR:-build}

# --- packages --------------------------------------------------------------------------------
APT_PACKAGES=(
  meson ninja-build pkg-config g++ python3
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
  libgtest-dev libgmock-dev
  ffmpeg valgrind libde265-examples clang
  opencv-doc mate-backgrounds
)

install_deps() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "test.sh: all ${#APT_PACKAGES[@]} packages are installed"
    return 0
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo -n)
    else
      echo "test.sh: missing packages (${missing[*]}), and neither root nor sudo to install them" >&2
      return 1
    fi
  fi
  echo "test.sh: installing ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" </dev/null
}

# --- timing ----------------------------------------------------------------------------------
TIMINGS=()
timed() {  # timed LABEL COMMAND...: runs, records the seconds, returns the command's status
  local label=$1 start rc ms
  shift
  start=$(date +%s%N)
  "$@"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  TIMINGS+=("$(printf '%-8s %5d.%01d s' "$label" $((ms / 1000)) $((ms % 1000 / 100)))")
  return $rc
}

print_timings() {
  echo "---- time per step ----"
  local t
  for t in "${TIMINGS[@]}"; do echo "$t"; done
}

if ! timed install install_deps; then
  print_timings
  echo "test.sh: could not install the packages the build needs"
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
fi
[ "${1:-}" = "--deps-only" ] && exit 0

# nvcc lives outside PATH in the CUDA toolkit's default install; meson finds it there too.
[ -d /usr/local/cuda/bin ] && case ":$PATH:" in *":/usr/local/cuda/bin:"*) ;; *) PATH="$PATH:/usr/local/cuda/bin" ;; esac

# --- build -----------------------------------------------------------------------------------
# shellcheck disable=SC2206
MESON_ARGS=(${GVC_MESON_ARGS:-})
setup() {
  if [ -f "$BUILD_DIR/build.ninja" ]; then
    meson setup --reconfigure "$BUILD_DIR" "${MESON_ARGS[@]}"
  else
    meson setup "$BUILD_DIR" "${MESON_ARGS[@]}"
  fi
}
if ! timed setup setup || ! timed compile meson compile -C "$BUILD_DIR"; then
  print_timings
  echo "test.sh: the build failed (see above)"
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
fi

# --- tests -----------------------------------------------------------------------------------
# shellcheck disable=SC2206
TEST_ARGS=(${GVC_TEST_ARGS:-})
rm -f "$BUILD_DIR/meson-logs/testlog.json" "$BUILD_DIR/meson-logs/testlog.junit.xml"
timed test meson test -C "$BUILD_DIR" --no-rebuild --print-errorlogs --timeout-multiplier 3 \
  "${TEST_ARGS[@]}"
MESON_RC=$?

print_timings

# Count individual cases: GoogleTest cases from meson's JUnit file (it merges each gtest XML),
# and every other test (or a gtest program that died before writing its XML) from testlog.json.
python3 - "$BUILD_DIR" "$MESON_RC" <<'PY'
import json, os, sys
import xml.etree.ElementTree as ET

build, meson_rc = sys.argv[1], int(sys.argv[2])
logs = os.path.join(build, "meson-logs")
tests = []
try:
    with open(os.path.join(logs, "testlog.json")) as f:
        tests = [json.loads(line) for line in f if line.strip()]
except OSError:
    pass
project = "gvc"
try:
    with open(os.path.join(build, "meson-info", "intro-projectinfo.json")) as f:
        project = json.load(f)["descriptive_name"]
except (OSError, KeyError, ValueError):
    pass

cases = {}  # test name -> [passed, failed, skipped]
try:
    root = ET.parse(os.path.join(logs, "testlog.junit.xml")).getroot()
    for suite in root.iter("testsuite"):
        name = suite.get("name", "")
        if not name.startswith(project + "."):
            continue
        for t in tests:  # suite names are <project>.<test>.<gtest suite>
            if name.startswith(f"{project}.{t['name']}.") and t.get("protocol", "gtest") != "exitcode":
                c = cases.setdefault(t["name"], [0, 0, 0])
                for case in suite.iter("testcase"):
                    if case.find("failure") is not None or case.find("error") is not None:
                        c[1] += 1
                    elif (case.find("skipped") is not None or case.get("result") == "skipped"
                          or case.get("status") == "notrun"):
                        c[2] += 1
                    else:
                        c[0] += 1
                break
except (OSError, ET.ParseError):
    pass

passed = failed = skipped = 0
bad = []
for t in tests:
    result = t.get("result", "ERROR")
    c = cases.get(t["name"])
    if c and sum(c):
        p, f, s = c
        if result in ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS") and f == 0:
            f += 1  # the program failed outside its cases (crash at exit, leak check, timeout)
    elif result in ("OK", "EXPECTEDFAIL"):
        p, f, s = 1, 0, 0
    elif result == "SKIP":
        p, f, s = 0, 0, 1
    else:
        p, f, s = 0, 1, 0
    if f:
        bad.append(f"{t['name']} ({result})")
    passed, failed, skipped = passed + p, failed + f, skipped + s

if not tests:
    print("test.sh: meson ran no test")
    failed = max(failed, 1)
elif meson_rc != 0 and failed == 0:
    print(f"test.sh: meson test exited with status {meson_rc}")
    failed = 1
if bad:
    print("failing: " + ", ".join(bad))
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
