// loop_filter.cpp: derive edges -> boundary strength -> filter (8.7.2), then SAO per CTB (8.7.3)
#include "common/hevcdec/loop_filter.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/dsp/hevc_deblock.h"
#include "common/dsp/hevc_sao.h"
#include "common/util/parallel.h"

namespace gvc::hevc {
namespace {

constexpr int kMaxPlanBands = 8;  // plan_loop_filters: bands of CTB rows planned in parallel

// The reference picture of list X of a unit's motion in slice segment s (null when the list is
// not used).
inline const Picture* ref_pic(const Picture& pic, int s, const MvField& f, int X) {
  if (!((f.pred_flag >> X) & 1)) return nullptr;
  if (s < 0 || s >= int(pic.slice_refs.size())) return nullptr;
  return pic.slice_refs[s].pic[X][f.ref_idx[X]];
}

inline bool mv_differ(const int16_t* a, const int16_t* b) {
  return std::abs(a[0] - b[0]) >= 4 || std::abs(a[1] - b[1]) >= 4;
}

// 8.7.2.4 boundary filtering strength of the edge between units p and q, of slice segments sp
// and sq; `edge` holds the transform (1) and prediction (2) edge bits set while parsing (0: no
// edge, or filterEdgeFlag 0).
inline int boundary_strength(const FrameState& fs, const Picture& pic, size_t p, size_t q, int sp, int sq,
                             uint8_t edge) {
  if (!edge) return 0;
  if (fs.pred_mode[p] == MODE_INTRA || fs.pred_mode[q] == MODE_INTRA) return 2;
  if ((edge & 1) && (fs.nz_luma[p] || fs.nz_luma[q])) return 1;
  // a transform block edge that is no prediction block edge has one prediction block on both
  // sides: the same slice, pictures and vectors
  if (!(edge & 2)) return 0;
  // Motion comparison: which pictures are referenced matters, not through which list.
  const MvField& fp = pic.mvf[p];
  const MvField& fq = pic.mvf[q];
  if (sp == sq && fp == fq) return 0;  // the same pictures with the same vectors
  const int np = (fp.pred_flag & 1) + (fp.pred_flag >> 1), nq = (fq.pred_flag & 1) + (fq.pred_flag >> 1);
  if (np != nq) return 1;
  const Picture* rp[2] = {ref_pic(pic, sp, fp, 0), ref_pic(pic, sp, fp, 1)};
  const Picture* rq[2] = {ref_pic(pic, sq, fq, 0), ref_pic(pic, sq, fq, 1)};
  if (np == 1) {
    const int lp = fp.pred_flag == 1 ? 0 : 1, lq = fq.pred_flag == 1 ? 0 : 1;
    if (rp[lp] != rq[lq]) return 1;
    return mv_differ(fp.mv[lp], fq.mv[lq]) ? 1 : 0;
  }
  if (!((rp[0] == rq[0] && rp[1] == rq[1]) || (rp[0] == rq[1] && rp[1] == rq[0]))) return 1;
  if (rp[0] != rp[1]) {
    if (rp[0] == rq[0]) return (mv_differ(fp.mv[0], fq.mv[0]) || mv_differ(fp.mv[1], fq.mv[1])) ? 1 : 0;
    return (mv_differ(fp.mv[0], fq.mv[1]) || mv_differ(fp.mv[1], fq.mv[0])) ? 1 : 0;
  }
  // both motion vectors of each side refer to the same picture
  return ((mv_differ(fp.mv[0], fq.mv[0]) || mv_differ(fp.mv[1], fq.mv[1])) &&
          (mv_differ(fp.mv[0], fq.mv[1]) || mv_differ(fp.mv[1], fq.mv[0])))
             ? 1
             : 0;
}

// The n (1..8) edge bytes at `e`, byte i of the word at bit 8 * i (little-endian).
inline uint64_t edge_bytes(const uint8_t* e, int n) {
  uint64_t v = 0;
  if (n == 8) std::memcpy(&v, e, sizeof v);
  else std::memcpy(&v, e, size_t(n));
  return v;
}

// Stores the n (1..8) low bytes of `v` at `out`.
inline void store_bytes(uint8_t* out, uint64_t v, int n) {
  if (n == 8) std::memcpy(out, &v, sizeof v);
  else std::memcpy(out, &v, size_t(n));
}

}  // namespace

void begin_loop_filter_plan(const PicParams& pp, const FrameState& fs, LoopFilterPlan& lf) {
  // 8.7.2: boundary strengths and the slice offsets of every 4x4 unit. Only units inside the
  // picture are written, and of bs_v / bs_h only those on the 8x8 edge grid (the others are
  // always 0), so the arrays are cleared only when the picture's size changes.
  const size_t n = fs.pred_mode.size();
  if (lf.bs_v.size() != n || lf.planned_width != pp.width || lf.planned_height != pp.height) {
    lf.bs_v.assign(n, 0);
    lf.bs_h.assign(n, 0);
    lf.beta.assign(n, 0);
    lf.tc.assign(n, 0);
    lf.planned_width = pp.width;
    lf.planned_height = pp.height;
  }
  lf.row_planned.assign(size_t(pp.pic_height_in_ctbs), 0);
}

namespace {

// Unit rows [y_begin, y_end): they read only the syntax arrays and write only their own rows,
// so CTB rows are planned in parallel; returns the OR of the bS written.
uint8_t plan_unit_rows(const PicParams& pp, const FrameState& fs, const Picture& pic, LoopFilterPlan& lf,
                       int y_begin, int y_end) {
  const int units_w = (pp.width + 3) >> 2;
  const int ctb_shift = pp.log2_ctb_size - 2;  // 4x4 units to CTBs
  const int ctb_units = 1 << ctb_shift;
  const size_t w4 = size_t(fs.w4);
  uint8_t any_bs = 0;
  for (int y4 = y_begin; y4 < y_end; ++y4) {
    const int16_t* slice_row = fs.ctb_slice.data() + size_t(y4 >> ctb_shift) * pp.pic_width_in_ctbs;
    // the CTB row of the unit above (used from y4 = 2 on)
    const int16_t* above_row = (y4 & (ctb_units - 1)) || y4 == 0 ? slice_row : slice_row - pp.pic_width_in_ctbs;
    const bool edge_row = y4 > 0 && (y4 & 1) == 0;
    const size_t row = size_t(y4) * w4;
    for (int x0 = 0, cx = 0; x0 < units_w; x0 += ctb_units, ++cx) {
      const int x1 = std::min(x0 + ctb_units, units_w);
      const int s = slice_row[cx];
      if (s < 0) {
        std::memset(&lf.beta[row + size_t(x0)], 0, size_t(x1 - x0));
        std::memset(&lf.tc[row + size_t(x0)], 0, size_t(x1 - x0));
        for (int x4 = x0; x4 < x1; x4 += 2) lf.bs_v[row + size_t(x4)] = 0;
        if (edge_row) std::memset(&lf.bs_h[row + size_t(x0)], 0, size_t(x1 - x0));
        continue;
      }
      const SliceInfo& si = fs.slices[s];
      std::memset(&lf.beta[row + size_t(x0)], static_cast<uint8_t>(si.beta_offset_div2), size_t(x1 - x0));
      std::memset(&lf.tc[row + size_t(x0)], static_cast<uint8_t>(si.tc_offset_div2), size_t(x1 - x0));
      // Eight units at a time: their edge bytes as a word, boundary_strength only at the set
      // ones (few: most units lie inside prediction and transform blocks), the bS as a word.
      // `keep` masks the edge bytes (`left`: not the picture's left edge); bs_at(unit, column)
      // gives a set unit's bS.
      const auto plan_edges = [&](const std::vector<uint8_t>& edges, std::vector<uint8_t>& out, uint64_t keep,
                                  bool left, const auto& bs_at) {
        for (int x4 = x0; x4 < x1; x4 += 8) {
          const size_t u = row + size_t(x4);
          const int n = std::min(8, x1 - x4);
          uint64_t e = edge_bytes(&edges[u], n) & keep;
          if (x4 == 0 && !left) e &= ~uint64_t(0xff);
          uint64_t bs = 0;
          while (e) {
            const int i = __builtin_ctzll(e) >> 3;
            e &= ~(uint64_t(0xff) << (8 * i));
            bs |= uint64_t(bs_at(u + size_t(i), x4 + i)) << (8 * i);
          }
          store_bytes(&out[u], bs, n);
          any_bs |= uint8_t(bs != 0);
        }
      };
      // Vertical edges: x0 is even (ctb_units >= 4), so the edge columns are the even bytes (the
      // odd columns' bS stay 0), and not the picture's left edge.
      plan_edges(fs.edge_v, lf.bs_v, 0x00ff00ff00ff00ffull, false, [&](size_t ui, int x4) {
        return boundary_strength(fs, pic, ui - 1, ui, x4 == x0 ? slice_row[cx - 1] : s, s, fs.edge_v[ui]);
      });
      if (!edge_row) continue;
      const int s_above = above_row[cx];
      plan_edges(fs.edge_h, lf.bs_h, ~uint64_t(0), true, [&](size_t ui, int) {
        return boundary_strength(fs, pic, ui - w4, ui, s_above, s, fs.edge_h[ui]);
      });
    }
  }
  return any_bs;
}

}  // namespace

void plan_deblocking_rows(const PicParams& pp, const FrameState& fs, const Picture& pic, LoopFilterPlan& lf,
                          int ctb_row_begin, int ctb_row_end) {
  const int units_h = (pp.height + 3) >> 2, ctb_shift = pp.log2_ctb_size - 2;
  for (int r = ctb_row_begin; r < ctb_row_end; ++r) {
    const uint8_t bs = plan_unit_rows(pp, fs, pic, lf, r << ctb_shift, std::min((r + 1) << ctb_shift, units_h));
    lf.row_planned[size_t(r)] = uint8_t(1 | (bs ? 2 : 0));
  }
}

void plan_loop_filters(const PicParams& pp, const FrameState& fs, const Picture& pic, LoopFilterPlan& lf) {
  begin_loop_filter_plan(pp, fs, lf);
  complete_loop_filter_plan(pp, fs, pic, lf);
}

void complete_loop_filter_plan(const PicParams& pp, const FrameState& fs, const Picture& pic, LoopFilterPlan& lf) {
  const int ctb_rows = pp.pic_height_in_ctbs;
  if (std::none_of(lf.row_planned.begin(), lf.row_planned.end(), [](uint8_t r) { return r != 0; })) {
    // Bands of whole CTB rows, for pictures large enough to be worth the threads.
    const int units_w = (pp.width + 3) >> 2, units_h = (pp.height + 3) >> 2;
    const int bands = size_t(units_w) * size_t(units_h) >= (size_t(1) << 16)
                          ? std::max(1, std::min({parallel_threads(), ctb_rows, kMaxPlanBands}))
                          : 1;
    parallel_for(bands, [&](int b) {
      plan_deblocking_rows(pp, fs, pic, lf, ctb_rows * b / bands, ctb_rows * (b + 1) / bands);
    });
  } else {
    for (int r = 0; r < ctb_rows; ++r)
      if (!lf.row_planned[size_t(r)]) plan_deblocking_rows(pp, fs, pic, lf, r, r + 1);
  }
  uint8_t any_bs = 0;
  for (const uint8_t r : lf.row_planned) any_bs |= r >> 1;
  lf.deblock = any_bs != 0;
  HevcDeblockFrame& f = lf.deblock_frame;
  f.width = pp.width;
  f.height = pp.height;
  f.stride = fs.w4;
  f.bs_v = lf.bs_v.data();
  f.bs_h = lf.bs_h.data();
  f.qp_y = fs.qp_y.data();
  f.beta_offset_div2 = lf.beta.data();
  f.tc_offset_div2 = lf.tc.data();
  f.no_filter = fs.no_filter.data();
  f.bit_depth_y = pp.bit_depth_y;
  f.bit_depth_c = pp.bit_depth_c;
  f.cb_qp_offset = pp.pps->cb_qp_offset;
  f.cr_qp_offset = pp.pps->cr_qp_offset;

  // 8.7.3: which CTBs have SAO, and across which of their edges it may read
  const int n_ctbs = pp.pic_size_in_ctbs;
  lf.enabled.assign(size_t(n_ctbs) * 3, 0);
  lf.cross.assign(size_t(n_ctbs) * 9, 0);
  lf.sao = false;
  for (int ctb = 0; ctb < n_ctbs; ++ctb) {
    const int s = fs.ctb_slice[ctb];
    if (s < 0) continue;
    const SliceInfo& si = fs.slices[s];
    lf.enabled[ctb * 3 + 0] = si.sao_luma;
    lf.enabled[ctb * 3 + 1] = lf.enabled[ctb * 3 + 2] = si.sao_chroma;
    lf.sao |= si.sao_luma || si.sao_chroma;
    const int rx = ctb % pp.pic_width_in_ctbs, ry = ctb / pp.pic_width_in_ctbs;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int nx = rx + dx, ny = ry + dy;
        if (nx < 0 || ny < 0 || nx >= pp.pic_width_in_ctbs || ny >= pp.pic_height_in_ctbs) continue;
        const int nb = ny * pp.pic_width_in_ctbs + nx;
        const int ns = fs.ctb_slice[nb];
        if (ns < 0) continue;
        bool ok = true;
        // 8.7.3.2: a neighbour in another slice is used only if the later slice allows it
        if (fs.slices[ns].slice_addr_rs != si.slice_addr_rs) {
          const bool nb_earlier = pp.ctb_addr_rs_to_ts[nb] < pp.ctb_addr_rs_to_ts[ctb];
          ok = nb_earlier ? si.loop_filter_across_slices : fs.slices[ns].loop_filter_across_slices;
        }
        if (!pp.pps->loop_filter_across_tiles_enabled_flag &&
            pp.tile_id[pp.ctb_addr_rs_to_ts[nb]] != pp.tile_id[pp.ctb_addr_rs_to_ts[ctb]])
          ok = false;
        lf.cross[ctb * 9 + (dy + 1) * 3 + (dx + 1)] = ok;
      }
  }
  HevcSaoFrame& g = lf.sao_frame;
  g.log2_ctb_size = pp.log2_ctb_size;
  g.width_ctbs = pp.pic_width_in_ctbs;
  g.height_ctbs = pp.pic_height_in_ctbs;
  g.ctbs = fs.sao.data();
  g.enabled = lf.enabled.data();
  g.no_filter = fs.no_filter.data();
  g.no_filter_stride = fs.w4;
  g.cross_ok = lf.cross.data();
  g.bit_depth[0] = pp.bit_depth_y;
  g.bit_depth[1] = g.bit_depth[2] = pp.bit_depth_c;
}

void apply_loop_filters(const PicParams& pp, const FrameState& fs, Picture& pic, LoopFilterPlan& lf) {
  plan_loop_filters(pp, fs, pic, lf);
  if (lf.deblock) HevcDeblock::run(lf.deblock_frame, pic.plane);
  if (!lf.sao) return;
  // SAO reads the deblocked picture and writes the final one.
  HevcPlane src[3];
  for (int c = 0; c < 3; ++c) {
    lf.sao_src[c] = pic.buf[c];
    src[c] = pic.plane[c];
    src[c].data = lf.sao_src[c].data();
  }
  HevcSao::run(lf.sao_frame, src, pic.plane);
}

}  // namespace gvc::hevc
