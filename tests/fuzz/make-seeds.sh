#!/usr/bin/env bash
# tests/fuzz/make-seeds.sh: the fuzzer's seed corpus: small x265 streams (FFmpeg libx265), one file each
#
# Usage: make-seeds.sh OUT_DIR
# Each file is one mode byte (see hevc_decode_fuzzer.cpp) followed by an Annex B stream of a few
# 64x64 (or so) pictures, so that every seed takes well under a millisecond to decode and the
# fuzzer's default max_len stays small. Without ffmpeg/libx265 it makes nothing and says so.
set -uo pipefail

out=${1:?usage: make-seeds.sh OUT_DIR}
mkdir -p "$out"

if ! command -v ffmpeg >/dev/null 2>&1 ||
   ! ffmpeg -hide_banner -encoders 2>/dev/null | grep libx265 >/dev/null; then
  echo "make-seeds.sh: no ffmpeg with libx265; the corpus starts from the regression inputs only" >&2
  exit 0
fi

VTEST=${GVC_TEST_CLIP:-/usr/share/doc/opencv-doc/examples/data/vtest.avi}
made=0

# seed NAME MODE_BYTE FRAMES PIX_FMT X265_PARAMS [INPUT OPTIONS...]
seed() {
  local name=$1 mode=$2 frames=$3 pix_fmt=$4 params=$5
  shift 5
  local input=(-f lavfi -i testsrc=size=64x64:rate=25)
  [ $# -gt 0 ] && input=("$@")
  local tmp="$out/.$name.hevc"
  if ffmpeg -nostdin -v error -y "${input[@]}" -frames:v "$frames" -an -pix_fmt "$pix_fmt" -c:v libx265 \
       -x265-params "log-level=error:info=0:frame-threads=1:$params" -f hevc "$tmp" </dev/null &&
     [ -s "$tmp" ]; then
    { printf '%b' "\\x$mode"; cat "$tmp"; } >"$out/$name"
    made=$((made + 1))
  else
    echo "make-seeds.sh: could not make $name ($params)" >&2
  fi
  rm -f "$tmp"
}

# Mode 00: the whole stream in one decode() call; 01: one NAL unit per call; 07: one access
# unit per call, then end_access_unit() (as cudahevcdec does); 0f: the same with flushes;
# 0a/81: fixed chunks (cut NAL units), frames taken at the end.
seed intra            00 2 yuv420p     "keyint=1"
seed p-ref3           00 5 yuv420p     "bframes=0:ref=3"
seed b-pyramid        00 6 yuv420p     "bframes=3:b-pyramid=1"
seed b-pyramid-nal    01 6 yuv420p     "bframes=3:b-pyramid=1"
seed b-pyramid-au     07 6 yuv420p     "bframes=3:b-pyramid=1"
seed wpp-slices       00 4 yuv420p     "ctu=16:wpp=1:slices=3"
seed scaling-list     00 4 yuv420p     "scaling-list=default"
seed lossless         00 2 yuv420p     "lossless=1" -f lavfi -i testsrc=size=48x48:rate=25
seed tskip-signhide   00 4 yuv420p     "tskip=1:signhide=1:rdoq-level=2"
seed ctu32-amp        00 4 yuv420p     "ctu=32:min-cu-size=8:rect=1:amp=1"
seed cip              00 4 yuv420p     "constrained-intra=1:strong-intra-smoothing=0"
seed open-gop         0f 8 yuv420p     "open-gop=1:keyint=4:min-keyint=4:bframes=2"
seed aud-sei-hrd      00 3 yuv420p     "aud=1:repeat-headers=1:hrd=1"
seed tu-depth         00 4 yuv420p     "tu-intra-depth=3:tu-inter-depth=3:max-tu-size=16"
seed chroma-qp-aq     00 4 yuv420p     "cbqpoffs=3:crqpoffs=-4:aq-mode=2:qg-size=16"
seed temporal-layers  00 6 yuv420p     "temporal-layers=1:bframes=3"
seed no-sao-dbk-tmvp  0a 4 yuv420p     "sao=0:deblock=-3,2:no-tmvp=1"
seed weighted         00 5 yuv420p     "weightp=1:weightb=1:bframes=2" \
  -f lavfi -i "testsrc=size=64x64:rate=25,fade=in:0:5"
seed odd-size-crop    00 3 yuv420p     "bframes=1" -f lavfi -i testsrc2=size=50x38:rate=25
seed main10           00 4 yuv420p10le "bframes=2" -f lavfi -i testsrc=size=64x64:rate=25
seed main10-intra     81 2 yuv420p10le "keyint=1:ctu=16" -f lavfi -i testsrc2=size=32x32:rate=25
if [ -r "$VTEST" ]; then
  seed vtest-motion   00 5 yuv420p     "bframes=2:ref=2:me=star:subme=3" -i "$VTEST" -vf scale=96x72
fi

# A new SPS mid-stream: another picture size and bit depth after an IDR (DPB flush, reallocation).
if [ -f "$out/odd-size-crop" ] && [ -f "$out/main10-intra" ]; then
  { printf '\x00'; tail -c +2 "$out/odd-size-crop"; tail -c +2 "$out/main10-intra"; } >"$out/size-change"
  made=$((made + 1))
fi

echo "make-seeds.sh: $made seeds in $out"
