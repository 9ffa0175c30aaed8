// me.cpp: CPU reference of full-search motion estimation over the 41 H.264 partitions
//
// This is the oracle for the CUDA implementation (gpu/me.cu): it follows me.h's contract
// literally and is never trimmed for speed at the cost of clarity.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/dsp/me.h"
#include "common/util/parallel.h"

namespace gvc {
namespace {

constexpr int kMb = 16;

uint8_t clip_pixel(int v) { return uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v)); }

// 6-tap filter (1, -5, 20, 20, -5, 1) of H.264 8.4.2.2.1.
int tap6(int e, int f, int g, int h, int i, int j) {
  return e - 5 * f + 20 * g + 20 * h - 5 * i + j;
}

// Order of candidates: lowest cost, then shortest vector, then raster (vy, then vx).
bool better(uint32_t cost, int vx, int vy, const MvCost& best) {
  if (cost != best.cost) return cost < best.cost;
  int len = vx * vx + vy * vy, best_len = best.mvx * best.mvx + best.mvy * best.mvy;
  if (len != best_len) return len < best_len;
  if (vy != best.mvy) return vy < best.mvy;
  return vx < best.mvx;
}

// The edge-extended reference with its half-pel planes (b, h, j of 8.4.2.2.1), over a border
// of kPad samples. Beyond 3 samples outside the picture every plane is constant along the
// extension, so clamping a coordinate into the padded area gives the exact sample of the
// infinitely extended picture.
class QpelPlanes {
 public:
  static constexpr int kPad = 4;

  explicit QpelPlanes(const PlaneView& ref)
      : w_(ref.width + 2 * kPad), h_(ref.height + 2 * kPad) {
    full_.resize(size_t(w_) * h_);
    half_h_.resize(full_.size());
    half_v_.resize(full_.size());
    half_hv_.resize(full_.size());
    std::vector<int> b1(full_.size());  // horizontal intermediate, before rounding
    for (int y = 0; y < h_; y++) {
      for (int x = 0; x < w_; x++) {
        int sx = x - kPad, sy = y - kPad;
        auto s = [&](int dx, int dy) { return sample_clamped(ref, sx + dx, sy + dy); };
        size_t i = size_t(y) * w_ + x;
        full_[i] = s(0, 0);
        b1[i] = tap6(s(-2, 0), s(-1, 0), s(0, 0), s(1, 0), s(2, 0), s(3, 0));
        half_h_[i] = clip_pixel((b1[i] + 16) >> 5);
        int h1 = tap6(s(0, -2), s(0, -1), s(0, 0), s(0, 1), s(0, 2), s(0, 3));
        half_v_[i] = clip_pixel((h1 + 16) >> 5);
      }
    }
    // j from the vertical 6-tap over b1; rows outside the padded area repeat the edge row,
    // which is what the extended picture holds there.
    for (int y = 0; y < h_; y++) {
      auto row = [&](int dy) { return clamp_coord(y + dy, h_); };
      for (int x = 0; x < w_; x++) {
        auto b = [&](int dy) { return b1[size_t(row(dy)) * w_ + x]; };
        int j1 = tap6(b(-2), b(-1), b(0), b(1), b(2), b(3));
        half_hv_[size_t(y) * w_ + x] = clip_pixel((j1 + 512) >> 10);
      }
    }
  }

  // Sample at quarter-pel position (4*x + fx, 4*y + fy); Table 8-12.
  int qpel(int x, int y, int fx, int fy) const {
    auto G = [&](int dx, int dy) { return at(full_, x + dx, y + dy); };
    auto b = [&](int dx, int dy) { return at(half_h_, x + dx, y + dy); };
    auto h = [&](int dx, int dy) { return at(half_v_, x + dx, y + dy); };
    int j = at(half_hv_, x, y);
    auto avg = [](int p, int q) { return (p + q + 1) >> 1; };
    switch (fy * 4 + fx) {
      case 0: return G(0, 0);
      case 1: return avg(G(0, 0), b(0, 0));   // a
      case 2: return b(0, 0);                 // b
      case 3: return avg(G(1, 0), b(0, 0));   // c
      case 4: return avg(G(0, 0), h(0, 0));   // d
      case 5: return avg(b(0, 0), h(0, 0));   // e
      case 6: return avg(b(0, 0), j);         // f
      case 7: return avg(b(0, 0), h(1, 0));   // g (m = h at x+1)
      case 8: return h(0, 0);                 // h
      case 9: return avg(h(0, 0), j);         // i
      case 10: return j;                      // j
      case 11: return avg(j, h(1, 0));        // k
      case 12: return avg(G(0, 1), h(0, 0));  // n
      case 13: return avg(h(0, 0), b(0, 1));  // p (s = b at y+1)
      case 14: return avg(j, b(0, 1));        // q
      default: return avg(h(1, 0), b(0, 1));  // r
    }
  }

 private:
  uint8_t at(const std::vector<uint8_t>& p, int x, int y) const {
    return p[size_t(clamp_coord(y + kPad, h_)) * w_ + clamp_coord(x + kPad, w_)];
  }

  int w_, h_;
  std::vector<uint8_t> full_, half_h_, half_v_, half_hv_;
};

// Integer search of one macroblock: every position, all 41 partitions at once from the
// sixteen 4x4 SADs.
void search_mb_integer(const PlaneView& cur, const PlaneView& ref, const MeParams& p,
                       int mbx, int mby, const MvCost& pred, MbPartitions& out) {
  const int R = p.range;
  const int win = kMb + 2 * R;
  const int x0 = mbx * kMb, y0 = mby * kMb;

  uint8_t blk[kMb * kMb];
  for (int y = 0; y < kMb; y++)
    for (int x = 0; x < kMb; x++) blk[y * kMb + x] = sample_clamped(cur, x0 + x, y0 + y);

  // The search window (positions -R..R-1 need samples -R..R+14 around the MB), edge-extended.
  std::vector<uint8_t> window(size_t(win) * win);
  for (int y = 0; y < win; y++)
    for (int x = 0; x < win; x++)
      window[size_t(y) * win + x] = sample_clamped(ref, x0 - R + x, y0 - R + y);

  for (auto& part : out.part) part = {0, 0, UINT32_MAX};
  bool first = true;

  for (int dy = -R; dy < R; dy++) {
    for (int dx = -R; dx < R; dx++) {
      const uint8_t* w = &window[size_t(dy + R) * win + (dx + R)];
      uint32_t s4[16] = {};  // 4x4 SADs, raster order of 4x4 blocks
      for (int y = 0; y < kMb; y++) {
        const uint8_t* c = blk + y * kMb;
        const uint8_t* r = w + size_t(y) * win;
        for (int bx = 0; bx < 4; bx++) {
          uint32_t s = 0;
          for (int x = 0; x < 4; x++) s += uint32_t(std::abs(int(c[bx * 4 + x]) - r[bx * 4 + x]));
          s4[(y >> 2) * 4 + bx] += s;
        }
      }
      uint32_t sad[kNumPartitions];
      for (int k = 0; k < 4; k++) {
        int bx = (k & 1) * 2, by = (k >> 1) * 2;
        uint32_t a = s4[by * 4 + bx], b = s4[by * 4 + bx + 1];
        uint32_t c = s4[(by + 1) * 4 + bx], d = s4[(by + 1) * 4 + bx + 1];
        sad[kPart4x4 + 4 * k + 0] = a;
        sad[kPart4x4 + 4 * k + 1] = b;
        sad[kPart4x4 + 4 * k + 2] = c;
        sad[kPart4x4 + 4 * k + 3] = d;
        sad[kPart8x4 + 2 * k + 0] = a + b;
        sad[kPart8x4 + 2 * k + 1] = c + d;
        sad[kPart4x8 + 2 * k + 0] = a + c;
        sad[kPart4x8 + 2 * k + 1] = b + d;
        sad[kPart8x8 + k] = a + b + c + d;
      }
      sad[kPart16x8 + 0] = sad[kPart8x8 + 0] + sad[kPart8x8 + 1];
      sad[kPart16x8 + 1] = sad[kPart8x8 + 2] + sad[kPart8x8 + 3];
      sad[kPart8x16 + 0] = sad[kPart8x8 + 0] + sad[kPart8x8 + 2];
      sad[kPart8x16 + 1] = sad[kPart8x8 + 1] + sad[kPart8x8 + 3];
      sad[kPart16x16] = sad[kPart16x8 + 0] + sad[kPart16x8 + 1];

      const int vx = 4 * dx, vy = 4 * dy;
      const uint32_t mvc = p.lambda * mv_cost_bits(vx, vy, pred.mvx, pred.mvy);
      for (int i = 0; i < kNumPartitions; i++) {
        uint32_t cost = sad[i] + mvc;
        if (first || better(cost, vx, vy, out.part[i]))
          out.part[i] = {int16_t(vx), int16_t(vy), cost};
      }
      first = false;
    }
  }
}

// SAD of partition `g` of the MB at (x0, y0) against the reference displaced by (vx, vy).
uint32_t partition_sad_qpel(const PlaneView& cur, const QpelPlanes& ref, int x0, int y0,
                            const PartitionGeometry& g, int vx, int vy) {
  uint32_t sad = 0;
  for (int y = 0; y < g.h; y++) {
    for (int x = 0; x < g.w; x++) {
      int px = x0 + g.x + x, py = y0 + g.y + y;
      int r = ref.qpel(px + (vx >> 2), py + (vy >> 2), vx & 3, vy & 3);
      sad += uint32_t(std::abs(int(sample_clamped(cur, px, py)) - r));
    }
  }
  return sad;
}

// One refinement step: the 8 neighbours at distance `step` (quarter-pel) of best.
void refine_step(const PlaneView& cur, const QpelPlanes& ref, const MeParams& p, int x0, int y0,
                 const PartitionGeometry& g, const MvCost& pred, int step, MvCost& best) {
  const MvCost centre = best;
  for (int oy = -step; oy <= step; oy += step) {
    for (int ox = -step; ox <= step; ox += step) {
      if (ox == 0 && oy == 0) continue;
      int vx = centre.mvx + ox, vy = centre.mvy + oy;
      uint32_t cost = partition_sad_qpel(cur, ref, x0, y0, g, vx, vy) +
                      p.lambda * mv_cost_bits(vx, vy, pred.mvx, pred.mvy);
      if (better(cost, vx, vy, best)) best = {int16_t(vx), int16_t(vy), cost};
    }
  }
}

class CpuMotionSearch final : public MotionSearch {
 public:
  Status run(const PlaneView& cur, const PlaneView& ref, const MeParams& p,
             MbPartitionField& out) override {
    if (cur.loc != MemoryLocation::Host || ref.loc != MemoryLocation::Host ||
        out.loc != MemoryLocation::Host || (p.predictors && p.predictors_loc != MemoryLocation::Host))
      return Status::error("the CPU motion search needs frames, predictors and results in host memory");
    if (cur.width != ref.width || cur.height != ref.height || cur.width <= 0 || cur.height <= 0)
      return Status::error("current and reference frames must have the same, non-empty size");
    if (p.range < kMinSearchRange || p.range > kMaxSearchRange)
      return Status::error("search range must be between 8 and 64");
    if (p.lambda > 65535) return Status::error("lambda must be at most 65535");
    if (out.mb_cols != mb_count(cur.width) || out.mb_rows != mb_count(cur.height) || !out.data)
      return Status::error("result field does not match the frame size");

    if (p.refined_partitions < 1 || p.refined_partitions > kNumPartitions)
      return Status::error("refined_partitions must be between 1 and 41");
    const int refined = p.refined_partitions;
    std::unique_ptr<QpelPlanes> planes;
    if (p.subpel != Subpel::None) planes = std::make_unique<QpelPlanes>(ref);

    // Macroblocks are independent: rows are shared out among threads, which changes no result.
    auto search_rows = [&](int first_row, int row_step) {
      for (int mby = first_row; mby < out.mb_rows; mby += row_step) {
        for (int mbx = 0; mbx < out.mb_cols; mbx++) {
          const int mb = mby * out.mb_cols + mbx;
          const MvCost pred = p.predictors ? p.predictors[mb] : MvCost{0, 0, 0};
          MbPartitions& res = out.data[mb];
          search_mb_integer(cur, ref, p, mbx, mby, pred, res);
          if (!planes) continue;
          for (int i = 0; i < refined; i++) {
            const PartitionGeometry g = partition_geometry(i);
            refine_step(cur, *planes, p, mbx * kMb, mby * kMb, g, pred, 2, res.part[i]);
            if (p.subpel == Subpel::Quarter)
              refine_step(cur, *planes, p, mbx * kMb, mby * kMb, g, pred, 1, res.part[i]);
          }
        }
      }
    };
    const int nthreads = std::max(1, std::min<int>(parallel_threads(), out.mb_rows));
    parallel_for(nthreads, [&](int t) { search_rows(t, nthreads); });
    return {};
  }

  Status select_blocks(const MbPartitionField& parts, BlockSize size,
                       MvBlockField& out) override {
    if (parts.loc != MemoryLocation::Host || out.loc != MemoryLocation::Host)
      return Status::error("the CPU block selection needs host memory");
    int bw, bh, cols, rows;
    block_field_dims(size, parts.mb_cols, parts.mb_rows, &bw, &bh, &cols, &rows);
    if (out.cols != cols || out.rows != rows || !out.data)
      return Status::error("block field does not match the partition field");
    out.block_w = bw;
    out.block_h = bh;

    for (int mby = 0; mby < parts.mb_rows; mby++) {
      for (int mbx = 0; mbx < parts.mb_cols; mbx++) {
        const MbPartitions& mb = parts.data[mby * parts.mb_cols + mbx];
        // The partition covering each 4x4 block of this MB (raster of 4x4 blocks).
        int owner[16];
        choose_partitions(mb, size, owner);
        const int per_mb = 16 / bw;  // blocks per MB side
        for (int by = 0; by < per_mb; by++) {
          for (int bx = 0; bx < per_mb; bx++) {
            int b4 = (by * bh / 4) * 4 + (bx * bw / 4);
            out.data[(mby * per_mb + by) * cols + mbx * per_mb + bx] = mb.part[owner[b4]];
          }
        }
      }
    }
    return {};
  }

 private:
  static void assign(int part, int owner[16]) {
    PartitionGeometry g = partition_geometry(part);
    for (int y = g.y / 4; y < (g.y + g.h) / 4; y++)
      for (int x = g.x / 4; x < (g.x + g.w) / 4; x++) owner[y * 4 + x] = part;
  }

  static void choose_partitions(const MbPartitions& mb, BlockSize size, int owner[16]) {
    const MvCost* c = mb.part;
    switch (size) {
      case BlockSize::B16x16: assign(kPart16x16, owner); return;
      case BlockSize::B8x8:
        for (int k = 0; k < 4; k++) assign(kPart8x8 + k, owner);
        return;
      case BlockSize::B4x4:
        for (int k = 0; k < 16; k++) assign(kPart4x4 + k, owner);
        return;
      case BlockSize::Auto: break;
    }
    // Sums are in 64 bits: four 32-bit costs cannot overflow them.
    uint64_t sub_cost[4];
    int sub_mode[4];  // 0: 8x8, 1: 8x4, 2: 4x8, 3: 4x4
    for (int k = 0; k < 4; k++) {
      uint64_t m[4] = {
          c[kPart8x8 + k].cost,
          uint64_t(c[kPart8x4 + 2 * k].cost) + c[kPart8x4 + 2 * k + 1].cost,
          uint64_t(c[kPart4x8 + 2 * k].cost) + c[kPart4x8 + 2 * k + 1].cost,
          uint64_t(c[kPart4x4 + 4 * k].cost) + c[kPart4x4 + 4 * k + 1].cost +
              c[kPart4x4 + 4 * k + 2].cost + c[kPart4x4 + 4 * k + 3].cost,
      };
      sub_mode[k] = int(std::min_element(m, m + 4) - m);
      sub_cost[k] = m[sub_mode[k]];
    }
    uint64_t m[4] = {
        c[kPart16x16].cost,
        uint64_t(c[kPart16x8].cost) + c[kPart16x8 + 1].cost,
        uint64_t(c[kPart8x16].cost) + c[kPart8x16 + 1].cost,
        sub_cost[0] + sub_cost[1] + sub_cost[2] + sub_cost[3],
    };
    switch (std::min_element(m, m + 4) - m) {  // first minimum: larger partitions win ties
      case 0: assign(kPart16x16, owner); break;
      case 1: assign(kPart16x8, owner), assign(kPart16x8 + 1, owner); break;
      case 2: assign(kPart8x16, owner), assign(kPart8x16 + 1, owner); break;
      default:
        for (int k = 0; k < 4; k++) {
          switch (sub_mode[k]) {
            case 0: assign(kPart8x8 + k, owner); break;
            case 1: assign(kPart8x4 + 2 * k, owner), assign(kPart8x4 + 2 * k + 1, owner); break;
            case 2: assign(kPart4x8 + 2 * k, owner), assign(kPart4x8 + 2 * k + 1, owner); break;
            default:
              for (int s = 0; s < 4; s++) assign(kPart4x4 + 4 * k + s, owner);
          }
        }
    }
  }
};

}  // namespace

void block_field_dims(BlockSize size, int mb_cols, int mb_rows, int* block_w, int* block_h,
                      int* cols, int* rows) {
  int b = size == BlockSize::B16x16 ? 16 : (size == BlockSize::B8x8 ? 8 : 4);
  *block_w = *block_h = b;
  *cols = mb_cols * (16 / b);
  *rows = mb_rows * (16 / b);
}

uint8_t luma_qpel_sample(const PlaneView& ref, int x, int y, int fx, int fy) {
  // Straight from 8.4.2.2.1 on the edge-extended picture, with no precomputed planes.
  auto G = [&](int dx, int dy) { return int(sample_clamped(ref, x + dx, y + dy)); };
  auto b1 = [&](int dy) { return tap6(G(-2, dy), G(-1, dy), G(0, dy), G(1, dy), G(2, dy), G(3, dy)); };
  auto h1 = [&](int dx) { return tap6(G(dx, -2), G(dx, -1), G(dx, 0), G(dx, 1), G(dx, 2), G(dx, 3)); };
  auto b = [&](int dy) { return int(clip_pixel((b1(dy) + 16) >> 5)); };
  auto h = [&](int dx) { return int(clip_pixel((h1(dx) + 16) >> 5)); };
  auto j = [&]() {
    return int(clip_pixel((tap6(b1(-2), b1(-1), b1(0), b1(1), b1(2), b1(3)) + 512) >> 10));
  };
  auto avg = [](int p, int q) { return uint8_t((p + q + 1) >> 1); };
  switch (fy * 4 + fx) {
    case 0: return uint8_t(G(0, 0));
    case 1: return avg(G(0, 0), b(0));
    case 2: return uint8_t(b(0));
    case 3: return avg(G(1, 0), b(0));
    case 4: return avg(G(0, 0), h(0));
    case 5: return avg(b(0), h(0));
    case 6: return avg(b(0), j());
    case 7: return avg(b(0), h(1));
    case 8: return uint8_t(h(0));
    case 9: return avg(h(0), j());
    case 10: return uint8_t(j());
    case 11: return avg(j(), h(1));
    case 12: return avg(G(0, 1), h(0));
    case 13: return avg(h(0), b(1));
    case 14: return avg(j(), b(1));
    default: return avg(h(1), b(1));
  }
}

std::unique_ptr<MotionSearch> make_cpu_motion_search() {
  return std::make_unique<CpuMotionSearch>();
}

}  // namespace gvc
