// hevc_decode_fuzzer.cpp: libFuzzer target: bytes -> gvc::hevc::Decoder (NAL, slice header and slice data parsing)
//
// Input layout: one mode byte, then an Annex B byte stream. A raw .hevc file is a valid input
// too: it starts with 0x00, which is mode 0 (the whole stream in one call).
//   mode bits 0..1, how the stream is handed to decode():
//     0: whole, in one call
//     1: one NAL unit per call, cut at start codes (h265parse alignment=nal)
//     2: fixed chunks of 1 + (mode >> 2 & 31) * 37 bytes, so NAL units are cut anywhere
//     3: one access unit per call (h265parse alignment=au, what cudahevcdec gets)
//   for 1 and 3, mode bit 2: end_access_unit() after each call; bit 3: flush() after every
//     7th call (a mid-stream drain: GAP, STREAM_START)
//   mode bit 7: take the frames only after the last call, not after each one.
// Every output frame is checked: a sane size, planes of that size, samples within 10 bits.
// Inputs with an SPS above level 5.2's picture size are skipped (see too_large()).
// HEVC_FUZZ_VERBOSE=1 prints each decode() error and the frame count (to see what a seed reaches).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <gst/codecparsers/gsth265parser.h>

#include "common/hevcdec/decoder.h"

namespace {

const bool kVerbose = std::getenv("HEVC_FUZZ_VERBOSE") != nullptr;
int frames_out = 0;

void check_frame(const gvc::hevc::DecodedFrame& f) {
  bool ok = f.width > 0 && f.height > 0 && f.bit_depth >= 8 && f.bit_depth <= 10;
  for (int c = 0; ok && c < 3; ++c) {
    ok = f.planes[c].size() == size_t(f.plane_width(c)) * f.plane_height(c);
    // Reconstruction clips every sample to its bit depth (8.6.7, 8.7); chroma may be deeper
    // than luma, and the engine supports at most 10 bits.
    const unsigned max = c ? 1023u : (1u << f.bit_depth) - 1;
    for (size_t i = 0; ok && i < f.planes[c].size(); ++i) ok = f.planes[c][i] <= max;
  }
  if (!ok) {
    std::fprintf(stderr, "hevc_decode_fuzzer: bad frame: %dx%d, %d bit, poc %d\n", f.width, f.height,
                 f.bit_depth, f.poc);
    std::abort();
  }
}

void drain(gvc::hevc::Decoder& dec) {
  gvc::hevc::DecodedFrame f;
  while (dec.take_frame(f)) {
    check_frame(f);
    ++frames_out;
  }
}

void decode(gvc::hevc::Decoder& dec, const uint8_t* data, size_t size) {
  if (!dec.decode(data, size) && kVerbose) std::fprintf(stderr, "decode: %s\n", dec.error().c_str());
}

// Does an SPS of the input declare more luma samples than level 5.2 allows (MaxLumaPs of
// Table A.8, 4096x2176)? GstH265Parser takes up to 16888x16888, and such a picture costs
// gigabytes and tens of seconds under ASan, which libFuzzer would report as an OOM or a
// timeout; like FFmpeg's fuzzers (max_pixels), the target skips those inputs. The parameter
// sets are parsed in the same order as the engine does, with the same parser.
bool too_large(const uint8_t* data, size_t size) {
  constexpr uint64_t kMaxLumaPs = 8912896;
  GstH265Parser* parser = gst_h265_parser_new();
  GstH265NalUnit nalu;
  guint offset = 0;
  bool large = false;
  while (!large && offset < size) {
    const GstH265ParserResult r = gst_h265_parser_identify_nalu(parser, data, offset, size, &nalu);
    if (r != GST_H265_PARSER_OK && r != GST_H265_PARSER_NO_NAL_END) break;
    offset = nalu.offset + nalu.size;
    if (nalu.type == GST_H265_NAL_VPS) {
      GstH265VPS vps;
      gst_h265_parser_parse_vps(parser, &nalu, &vps);
    } else if (nalu.type == GST_H265_NAL_SPS) {
      GstH265SPS sps;
      if (gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE) == GST_H265_PARSER_OK)
        large = uint64_t(sps.pic_width_in_luma_samples) * sps.pic_height_in_luma_samples > kMaxLumaPs;
    }
  }
  gst_h265_parser_free(parser);
  return large;
}

// Offset of the next 00 00 01 at or after `from`, or `size`.
size_t next_start_code(const uint8_t* data, size_t size, size_t from) {
  for (size_t i = from; i + 2 < size; ++i)
    if (data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1) return i;
  return size;
}

// 7.4.2.4.4: does the NAL unit whose start code is at `sc` begin a new access unit, given that
// the current one already holds a VCL NAL unit? (AUD, VPS, SPS, PPS, prefix SEI, reserved
// 41..44 and 48..55, or a slice segment with first_slice_segment_in_pic_flag.)
bool starts_access_unit(const uint8_t* data, size_t size, size_t sc) {
  if (sc + 5 >= size) return false;
  const int type = (data[sc + 3] >> 1) & 63;
  if (type <= 31) return type <= 21 && (type <= 9 || type >= 16) && (data[sc + 5] & 0x80);
  return (type >= 32 && type <= 35) || type == 39 || (type >= 41 && type <= 44) ||
         (type >= 48 && type <= 55);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const unsigned mode = data[0];
  data += 1;
  size -= 1;
  const unsigned split = mode & 3;
  const bool drain_each = !(mode & 0x80);
  if (too_large(data, size)) return 0;

  frames_out = 0;
  gvc::hevc::Decoder dec;
  if (split == 0) {
    decode(dec, data, size);
  } else if (split == 2) {
    const size_t chunk = 1 + ((mode >> 2) & 31) * 37;
    for (size_t pos = 0; pos < size; pos += chunk) {
      decode(dec, data + pos, size - pos < chunk ? size - pos : chunk);
      if (drain_each) drain(dec);
    }
  } else {
    // Units begin at a start code; a leading zero of a 4-byte start code stays with the
    // previous unit, as trailing_zero_8bits.
    const bool end_au = mode & 4, flushes = mode & 8;
    size_t begin = next_start_code(data, size, 0), calls = 0;
    while (begin < size) {
      size_t end = next_start_code(data, size, begin + 3);
      if (split == 3) {
        bool vcl = begin + 3 < size && ((data[begin + 3] >> 1) & 63) <= 31;
        while (end < size && !(vcl && starts_access_unit(data, size, end))) {
          if (end + 3 < size && ((data[end + 3] >> 1) & 63) <= 31) vcl = true;
          end = next_start_code(data, size, end + 3);
        }
      }
      decode(dec, data + begin, end - begin);
      if (end_au) dec.end_access_unit();
      if (flushes && ++calls % 7 == 0) dec.flush();
      if (drain_each) drain(dec);
      begin = end;
    }
  }
  dec.flush();
  drain(dec);
  if (kVerbose) std::fprintf(stderr, "mode %02x: %d frames\n", mode, frames_out);
  return 0;
}
