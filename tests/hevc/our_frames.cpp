// our_frames.cpp: test helpers: the HEVC decoder's frames in the oracles' rawvideo layout
#include "tests/hevc/our_frames.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "tests/hevc/stream_oracle.h"

namespace gvc::test {

size_t frame_bytes(int w, int h, int bytes) {
  return (size_t(w) * h + 2 * size_t((w + 1) / 2) * ((h + 1) / 2)) * bytes;
}

std::vector<uint8_t> to_raw(const gvc::hevc::DecodedFrame& f) {
  std::vector<uint8_t> out;
  for (int c = 0; c < 3; ++c)
    for (uint16_t v : f.planes[c]) {
      if (f.bit_depth == 8) {
        out.push_back(static_cast<uint8_t>(v));
      } else {
        out.push_back(static_cast<uint8_t>(v & 0xff));
        out.push_back(static_cast<uint8_t>(v >> 8));
      }
    }
  return out;
}

std::string first_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int w, int h, int bytes) {
  const size_t ysz = size_t(w) * h * bytes;
  const size_t csz = size_t((w + 1) / 2) * ((h + 1) / 2) * bytes;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] != b[i]) {
      const int plane = i < ysz ? 0 : (i < ysz + csz ? 1 : 2);
      const size_t o = plane == 0 ? i : (plane == 1 ? i - ysz : i - ysz - csz);
      const int pw = plane ? (w + 1) / 2 : w;
      char buf[128];
      snprintf(buf, sizeof(buf), "plane %d x %zu y %zu: ours %d theirs %d", plane, (o / bytes) % pw,
               (o / bytes) / pw, a[i], b[i]);
      return buf;
    }
  return a.size() == b.size() ? "equal" : "sizes differ";
}

Frames decode_ours(const std::vector<uint8_t>& stream, bool by_access_unit) {
  gvc::hevc::Decoder dec;
  dec.set_threads(by_access_unit ? 1 : 8);
  if (by_access_unit) {
    for (const auto& au : split_access_units(stream)) {
      EXPECT_TRUE(dec.decode(au.data(), au.size())) << dec.error();
      dec.end_access_unit();
    }
  } else {
    EXPECT_TRUE(dec.decode(stream.data(), stream.size())) << dec.error();
  }
  dec.flush();
  Frames out;
  gvc::hevc::DecodedFrame f;
  while (dec.take_frame(f)) out.push_back(to_raw(f));
  return out;
}

}  // namespace gvc::test
