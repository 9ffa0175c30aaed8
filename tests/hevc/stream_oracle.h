// stream_oracle.h: test helpers: make HEVC streams with ffmpeg/libx265 and decode them with ffmpeg
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gvc::test {

// $FFMPEG or "ffmpeg" found on $PATH; empty if none.
std::string hevc_find_ffmpeg();
// $GVC_TEST_CLIP or opencv-doc's vtest.avi; empty if missing.
std::string hevc_find_clip();

// Encodes `frames` frames of `clip` scaled to w x h with libx265 and `x265_params`
// ("key=value:..."), pixel format `pix_fmt`, into an Annex B file. `extra_vf` (e.g. a fade)
// is appended to the scaling filter chain. Returns the stream bytes (empty on failure, with
// the reason in `err`).
std::vector<uint8_t> x265_encode(const std::string& clip, int w, int h, int frames,
                                 const std::string& pix_fmt, const std::string& x265_params,
                                 std::string& err, const std::string& extra_vf = "");

// Decodes `stream` with ffmpeg to raw frames in `pix_fmt` (yuv420p or yuv420p10le); one byte
// vector per frame of `frame_bytes` bytes.
std::vector<std::vector<uint8_t>> ffmpeg_decode(const std::vector<uint8_t>& stream,
                                                const std::string& pix_fmt, size_t frame_bytes,
                                                std::string& err);

}  // namespace gvc::test
