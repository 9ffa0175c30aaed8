// me_oracle.h: test-side oracles for motion search: test planes, a naive per-partition brute force
// written from the words of common/dsp/me.h, and a direct reading of H.264 8.4.2.2.1
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/dsp/me.h"
#include "common/dsp/plane.h"
#include "common/mv/mv_field.h"

namespace gvc_test {

// An owned 8-bit plane. The stride is padded past the width so that a reader which ignores
// the stride reads the wrong samples and shows.
struct Plane {
  std::vector<uint8_t> buf;
  int width = 0;
  int height = 0;
  ptrdiff_t stride = 0;

  Plane() = default;
  Plane(int w, int h, int pad = 7) : width(w), height(h), stride(w + pad) {
    buf.assign(size_t(stride) * h, 0xA5);
  }
  uint8_t& at(int x, int y) { return buf[size_t(y) * stride + x]; }
  uint8_t at(int x, int y) const { return buf[size_t(y) * stride + x]; }
  gvc::PlaneView view() const {
    return {buf.data(), stride, width, height, gvc::MemoryLocation::Host};
  }
};

// Seeds: GVC_TEST_SEED in the environment replaces the built-in list with that one seed.
std::vector<uint32_t> test_seeds(std::vector<uint32_t> defaults);

// Uniform samples in 0..levels-1 scaled over 0..255: few levels make many equal costs.
Plane random_plane(std::mt19937& rng, int w, int h, int levels = 256);

// A smooth random texture (sum of a few random cosines plus noise): searches on it have a
// clear best vector, unlike on white noise where every sub-pel neighbour looks alike.
Plane textured_plane(std::mt19937& rng, int w, int h);

// `src` moved so that out(x, y) = src(x - dx, y - dy), edge-clamped, plus noise of +-noise.
Plane shifted_plane(const Plane& src, int dx, int dy, std::mt19937& rng, int noise);

// The 8.4.2.2.1 luma sample at quarter-pel position (4x + fx, 4y + fy), spelled out with the
// standard's sample names (G, b, h, j, a..s) over an edge-clamped reference.
uint8_t spec_luma_sample(const gvc::PlaneView& ref, int x, int y, int fx, int fy);

// Sample of `ref` at quarter-pel vector (vx, vy) from integer position (x, y), via
// gvc::luma_qpel_sample (integer vectors via sample_clamped).
int ref_sample_qpel(const gvc::PlaneView& ref, int x, int y, int vx, int vy);

// SAD of partition `part` of macroblock (mbx, mby) for quarter-pel vector (vx, vy); the current
// frame is read edge-extended, as me.h specifies for sizes that are not multiples of 16.
uint32_t partition_sad(const gvc::PlaneView& cur, const gvc::PlaneView& ref, int mbx, int mby,
                       int part, int vx, int vy);

// Cost per me.h: SAD + lambda * bits(v - p).
uint32_t partition_cost(const gvc::PlaneView& cur, const gvc::PlaneView& ref, int mbx, int mby,
                        int part, int vx, int vy, uint32_t lambda, int px, int py);

// True when (a) beats (b) under the tie-break of me.h: lowest cost, then smallest
// vx^2 + vy^2, then smallest vy, then smallest vx.
bool better(const gvc::MvCost& a, const gvc::MvCost& b);

// The naive search for one partition: every integer position -R..R-1 in x and y with
// plain loops over sample_clamped, then the 8 half-pel and 8 quarter-pel neighbours.
gvc::MvCost naive_partition_search(const gvc::PlaneView& cur, const gvc::PlaneView& ref, int mbx,
                                   int mby, int part, const gvc::MeParams& params);

// Runs the CPU reference over a whole frame.
std::vector<gvc::MbPartitions> cpu_search(const gvc::PlaneView& cur, const gvc::PlaneView& ref,
                                          const gvc::MeParams& params);

std::string describe(const gvc::MvCost& m);

// The mate-backgrounds painting decoded to 8-bit gray (5640x3172), or an empty plane with
// `why` set when it cannot be had. Decoded once per process.
const Plane& elephants_gray(std::string* why);

}  // namespace gvc_test
