#!/usr/bin/env bash
# tests/elements/install-test.sh: `meson install` into a DESTDIR gives a loadable plugin and a usable libgvcmv (header, pkg-config file); gst-inspect-1.0 finds cudamv in the build tree
# Usage: install-test.sh MESON BUILDDIR LIBDIR INCLUDEDIR PLUGINDIR (the last three absolute)
set -euo pipefail
MESON=$1 BUILD=$2 LIBDIR=$3 INCLUDEDIR=$4 PLUGINDIR=$5
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
ROOT=$TMP/root
fail() { echo "FAIL: $*" >&2; exit 1; }

# The test depends on every installed target, so nothing needs building here.
"$MESON" install -C "$BUILD" --destdir "$ROOT" --no-rebuild --quiet >"$TMP/install.log" 2>&1 ||
  { cat "$TMP/install.log" >&2; fail "meson install"; }

for f in "$PLUGINDIR/libgstgvc.so" "$LIBDIR/libgvcmv-1.0.so" "$LIBDIR/libgvcmv-1.0.so.0" \
         "$INCLUDEDIR/gvc-1.0/gst/mvmeta/gvcmvmeta.h" "$LIBDIR/pkgconfig/gvcmv-1.0.pc"; do
  [ -e "$ROOT$f" ] || fail "$f not installed (or a dangling link)"
done

# pkg-config, with the DESTDIR as sysroot: our own flags must point into it.
flags=$(PKG_CONFIG_PATH=$ROOT$LIBDIR/pkgconfig PKG_CONFIG_SYSROOT_DIR=$ROOT \
  pkg-config --cflags --libs gvcmv-1.0) || fail "pkg-config --cflags --libs gvcmv-1.0"
echo "pkg-config: $flags"
[[ " $flags " == *" -I$ROOT$INCLUDEDIR/gvc-1.0 "* ]] || fail "no -I$ROOT$INCLUDEDIR/gvc-1.0"
[[ " $flags " == *" -lgvcmv-1.0 "* ]] || fail "no -lgvcmv-1.0"

# An application built with the .pc's flags (with the packages it requires taken from the
# caller's pkg-config set-up) compiles, links and runs. Our own paths come first: the .pc
# names them under the final prefix, not the DESTDIR.
cat >"$TMP/app.c" <<'EOF'
#include <gst/mvmeta/gvcmvmeta.h>
int main (void) {
  gst_init (NULL, NULL);
  return gvc_mv_meta_api_get_type () != 0 && gvc_mv_meta_get_info () ? 0 : 1;
}
EOF
app_flags=$(PKG_CONFIG_PATH=$ROOT$LIBDIR/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
  pkg-config --cflags --libs gvcmv-1.0) || fail "pkg-config cannot resolve what gvcmv-1.0 requires"
# shellcheck disable=SC2086 # the flags are words
"${CC:-cc}" -o "$TMP/app" "$TMP/app.c" -I"$ROOT$INCLUDEDIR/gvc-1.0" -L"$ROOT$LIBDIR" $app_flags ||
  fail "an application cannot be built against the installed gvcmv-1.0"
installed_ld=$ROOT$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LD_LIBRARY_PATH=$installed_ld "$TMP/app" || fail "the application built against gvcmv-1.0 fails"

# The installed plugin loads (its libgvcmv from the DESTDIR) and holds cudamv; a registry of
# its own, so the build tree's plugin of the same name is not mixed up with it.
mkdir "$TMP/no-plugins"
env -u GST_PLUGIN_PATH -u GST_PLUGIN_PATH_1_0 LD_LIBRARY_PATH="$installed_ld" \
  GST_PLUGIN_SYSTEM_PATH_1_0="$TMP/no-plugins" \
  GST_REGISTRY_1_0="$TMP/registry.bin" \
  gst-inspect-1.0 "$ROOT$PLUGINDIR/libgstgvc.so" >"$TMP/plugin.txt" 2>&1 ||
  { cat "$TMP/plugin.txt" >&2; fail "gst-inspect-1.0 of the installed plugin"; }
grep -qw cudamv "$TMP/plugin.txt" || fail "the installed plugin has no cudamv"

# From the build tree, as README.md says.
GST_PLUGIN_PATH=$BUILD gst-inspect-1.0 cudamv >"$TMP/inspect.txt" 2>&1 ||
  { cat "$TMP/inspect.txt" >&2; fail "GST_PLUGIN_PATH=$BUILD gst-inspect-1.0 cudamv"; }
grep -q 'search-range' "$TMP/inspect.txt" || fail "gst-inspect-1.0 cudamv lists no search-range property"
echo "ok"
