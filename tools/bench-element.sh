#!/bin/sh
# tools/bench-element.sh: the cudamv element benchmark (CUDA-memory pipeline vs CPU backend)
# Usage: tools/bench-element.sh BUILDDIR [bench-element options]; called by `tools/bench BUILDDIR element`.
set -eu
build=${1:?usage: tools/bench-element.sh BUILDDIR}
shift
export GST_PLUGIN_PATH="$build/gst${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}"
exec "$build/tools/bench-element" "$@"
