// our_frames.h: test helpers: the HEVC decoder's frames in the oracles' rawvideo layout, decoded whole and access unit by access unit
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/hevcdec/decoder.h"

namespace gvc::test {

using Frames = std::vector<std::vector<uint8_t>>;

// Bytes of one 4:2:0 frame of w x h with `bytes` (1 or 2) per sample.
size_t frame_bytes(int w, int h, int bytes);

// The decoder's frame as ffmpeg's rawvideo bytes (8 bit, or 16-bit little endian).
std::vector<uint8_t> to_raw(const gvc::hevc::DecodedFrame& f);

// First differing sample of two raw frames as text, for a readable failure.
std::string first_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int w, int h, int bytes);

// Our frames: the whole stream in one decode() with 8 threads (WPP rows in parallel, more
// threads than CI has cores), or access unit by access unit with end_access_unit() after each
// (as cudahevcdec does) and one thread (rows in sequence). Decoding errors fail the test.
Frames decode_ours(const std::vector<uint8_t>& stream, bool by_access_unit);

}  // namespace gvc::test
