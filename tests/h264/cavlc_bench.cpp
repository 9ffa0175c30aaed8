// cavlc_bench.cpp: speed of the CAVLC slice_data() writer on coded 1080p frames, and hashes of whole encodes to check its bits
//
// Usage: h264-cavlc-bench [--check] [--frames N] [--reps N] [--qp QP] [--cache FILE] [--only-p]
// Without --check: encodes N frames of a pan over $GVC_ELEPHANTS (raw 4096x2304 luma; a
// synthetic picture without it) at 1080p on the CPU backend, then writes each frame's
// slice_data() again `reps` times on one thread and on all cores, and prints the median and
// fastest time per frame and per macroblock, with a hash of the bits. --cache keeps the coded
// macroblocks in FILE (read instead of encoding when it exists, so that two builds time the
// same input); --only-p leaves the IDR out. --check: encodes clips of several sizes, QPs (0
// with noise for I_PCM, 51), slice counts and reference counts and prints a hash of each
// access-unit stream, so that a change to the writer can be compared with the bits it wrote
// before.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/h264enc/encoder.h"
#include "common/h264enc/slice_data.h"
#include "tools/pan_frame.h"

namespace {

using namespace gvc::h264;

// Source frames: a pan of (2, 1) pixels per frame over the painting, chroma from elsewhere in
// it, `noise` added to every sample (QP 0 then gives I_PCM macroblocks).
struct Clip {
  std::vector<uint8_t> pic;
  bool load() {
    const char* path = std::getenv("GVC_ELEPHANTS");
    pic.resize(size_t(4096) * 2304);
    std::ifstream f(path ? path : "", std::ios::binary);
    if (f && f.read(reinterpret_cast<char*>(pic.data()), std::streamsize(pic.size()))) return true;
    for (size_t y = 0; y < 2304; y++)  // a stand-in: smooth waves with some texture
      for (size_t x = 0; x < 4096; x++)
        pic[y * 4096 + x] = uint8_t(128 + 60 * ((x * 7 + y * 3) % 97 < 48 ? 1 : -1) * int((x ^ y) & 3) / 3);
    return false;
  }
  std::vector<uint8_t> frame(int w, int h, int i, int noise, std::mt19937& rng) const {
    auto px = [&](int x, int y) {
      int v = pic[size_t(y) * 4096 + size_t(x)] + (noise ? int(rng() % unsigned(noise)) - noise / 2 : 0);
      return uint8_t(std::clamp(v, 0, 255));
    };
    return gvc::bench::pan_frame(px, w, h, i);
  }
};

uint64_t fnv1a(uint64_t h, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

int check(const Clip& clip) {
  struct Case {
    int w, h, qp, slices, refs, frames, noise;
  };
  const Case cases[] = {
      {1920, 1080, 26, 1, 1, 3, 0}, {1920, 1080, 26, 4, 2, 2, 0}, {352, 288, 0, 1, 1, 3, 40},
      {352, 288, 0, 7, 3, 3, 40},   {352, 288, 51, 1, 1, 3, 0},   {352, 288, 51, 3, 1, 3, 8},
      {352, 288, 12, 5, 4, 4, 6},   {176, 144, 35, 1, 2, 4, 0},   {208, 120, 20, 11, 1, 3, 20},
  };
  uint64_t all = 0xcbf29ce484222325ull;
  for (const Case& c : cases) {
    EncoderParams p;
    p.width = c.w;
    p.height = c.h;
    p.rc.qp = c.qp;
    p.slices = c.slices;
    p.ref_frames = c.refs;
    Encoder enc;
    if (!enc.init(p).ok()) {
      std::fprintf(stderr, "cavlc-bench: cannot init %dx%d\n", c.w, c.h);
      return 1;
    }
    std::mt19937 rng(uint32_t(c.w + c.qp));
    uint64_t hash = 0xcbf29ce484222325ull;
    size_t bytes = 0;
    int count[8] = {};
    for (int i = 0; i < c.frames; i++) {
      const std::vector<uint8_t> fr = clip.frame(c.w, c.h, i, c.noise, rng);
      EncodedFrame out;
      if (!enc.encode(gvc::bench::i420_frame_in(fr.data(), c.w, c.h), false, out).ok()) return 1;
      hash = fnv1a(hash, out.annexb.data(), out.annexb.size());
      bytes += out.annexb.size();
      for (int t = 0; t < 8; t++) count[t] += out.stats.count(MbType(t));
    }
    all = fnv1a(all, reinterpret_cast<const uint8_t*>(&hash), sizeof hash);
    std::printf("%4dx%-4d qp %2d slices %2d refs %d: %016llx %8zu bytes (I4 %d I16 %d PCM %d P16 %d skip %d "
                "16x8 %d 8x16 %d 8x8 %d)\n",
                c.w, c.h, c.qp, c.slices, c.refs, (unsigned long long)hash, bytes, count[0], count[1], count[2],
                count[3], count[4], count[5], count[6], count[7]);
  }
  std::printf("all: %016llx\n", (unsigned long long)all);
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int bench(const Clip& clip, int frames, int reps, int qp, const std::string& cache, bool only_p) {
  const int w = 1920, h = 1080, mb_w = w / 16, mb_h = (h + 15) / 16;
  EncoderParams p;
  p.width = w;
  p.height = h;
  p.rc.qp = qp;
  Encoder enc;
  if (!enc.init(p).ok()) return 1;
  struct Coded {
    std::vector<Macroblock> mbs;
    bool idr;
    int num_refs;
    size_t bytes;
  };
  std::vector<Coded> coded;
  // The cache: sizeof(Macroblock), then per frame idr, num_refs, bytes and the macroblocks as
  // they are in memory (Macroblock is trivially copyable).
  const uint32_t mb_size = sizeof(Macroblock);
  std::ifstream in(cache, std::ios::binary);
  uint32_t cached_size = 0;
  if (!cache.empty() && in && in.read(reinterpret_cast<char*>(&cached_size), sizeof cached_size) &&
      cached_size == mb_size) {
    Coded c;
    c.mbs.resize(size_t(mb_w) * mb_h);
    while (in.read(reinterpret_cast<char*>(&c.idr), sizeof c.idr) &&
           in.read(reinterpret_cast<char*>(&c.num_refs), sizeof c.num_refs) &&
           in.read(reinterpret_cast<char*>(&c.bytes), sizeof c.bytes) &&
           in.read(reinterpret_cast<char*>(c.mbs.data()), std::streamsize(c.mbs.size() * sizeof(Macroblock))))
      coded.push_back(c);
  }
  if (coded.empty()) {
    std::mt19937 rng(1);
    for (int i = 0; i < frames; i++) {
      const std::vector<uint8_t> fr = clip.frame(w, h, i, 0, rng);
      EncodedFrame out;
      if (!enc.encode(gvc::bench::i420_frame_in(fr.data(), w, h), false, out).ok()) return 1;
      coded.push_back({enc.macroblocks(), out.idr, out.stats.num_ref_idx_active, out.annexb.size()});
    }
    if (!cache.empty()) {
      std::ofstream o(cache, std::ios::binary);
      o.write(reinterpret_cast<const char*>(&mb_size), sizeof mb_size);
      for (const Coded& c : coded) {
        o.write(reinterpret_cast<const char*>(&c.idr), sizeof c.idr);
        o.write(reinterpret_cast<const char*>(&c.num_refs), sizeof c.num_refs);
        o.write(reinterpret_cast<const char*>(&c.bytes), sizeof c.bytes);
        o.write(reinterpret_cast<const char*>(c.mbs.data()), std::streamsize(c.mbs.size() * sizeof(Macroblock)));
      }
    }
  }
  for (const Coded& c : coded) {
    if (only_p && c.idr) continue;
    for (const int threads : {1, 0}) {
      std::vector<double> ms;
      uint64_t hash = 0;
      size_t bits = 0;
      for (int r = 0; r < reps; r++) {
        gvc::BitWriter bw;
        bw.put_bits(5, 0x15);  // a stand-in for the slice header: the data starts mid-byte
        const SliceOut slice{0, mb_w * mb_h, &bw};
        const auto t0 = std::chrono::steady_clock::now();
        write_slices_data(c.mbs.data(), mb_w, mb_h, &slice, 1, !c.idr, c.num_refs, threads);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        bw.rbsp_trailing_bits();
        bits = bw.bit_count();
        hash = fnv1a(0xcbf29ce484222325ull, bw.bytes().data(), bw.bytes().size());
      }
      const double m = median(ms), fastest = *std::min_element(ms.begin(), ms.end());
      std::printf("%s frame (%zu bytes), %s: median %.3f ms (%.0f ns/MB), fastest %.3f ms, %zu bits, hash %016llx\n",
                  c.idr ? "IDR" : "P", c.bytes, threads == 1 ? "1 thread" : "all cores", m, m * 1e6 / (mb_w * mb_h),
                  fastest, bits, (unsigned long long)hash);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool do_check = false, only_p = false;
  int frames = 3, reps = 50, qp = 26;
  std::string cache;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--check") do_check = true;
    else if (a == "--only-p") only_p = true;
    else if (a == "--frames" && i + 1 < argc) frames = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--qp" && i + 1 < argc) qp = std::atoi(argv[++i]);
    else if (a == "--cache" && i + 1 < argc) cache = argv[++i];
    else {
      std::fprintf(stderr, "usage: h264-cavlc-bench [--check] [--frames N] [--reps N] [--qp QP] [--cache FILE] "
                           "[--only-p]\n");
      return 2;
    }
  }
  Clip clip;
  if (!clip.load()) std::fprintf(stderr, "cavlc-bench: no $GVC_ELEPHANTS, a synthetic picture instead\n");
  return do_check ? check(clip) : bench(clip, frames, reps, qp, cache, only_p);
}
