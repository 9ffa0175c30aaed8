// loop_filter.cpp: derive edges -> boundary strength -> filter (8.7.2), then SAO per CTB (8.7.3)
#include "common/hevcdec/loop_filter.h"

#include <cstdlib>

#include "common/dsp/hevc_deblock.h"
#include "common/dsp/hevc_sao.h"

namespace gvc::hevc {
namespace {

// The reference picture of list X of a unit's motion (null when the list is not used).
const Picture* ref_pic(const FrameState& fs, const Picture& pic, const PicParams& pp, size_t u,
                       const MvField& f, int X) {
  if (!((f.pred_flag >> X) & 1)) return nullptr;
  const int x = int(u % fs.w4) * 4, y = int(u / fs.w4) * 4;
  const int s = fs.ctb_slice[(y >> pp.log2_ctb_size) * pp.pic_width_in_ctbs + (x >> pp.log2_ctb_size)];
  if (s < 0 || s >= int(pic.slice_refs.size())) return nullptr;
  return pic.slice_refs[s].pic[X][f.ref_idx[X]];
}

bool mv_differ(const int16_t* a, const int16_t* b) {
  return std::abs(a[0] - b[0]) >= 4 || std::abs(a[1] - b[1]) >= 4;
}

// 8.7.2.4 boundary filtering strength of the edge between units p and q; `edge` holds the
// transform (1) and prediction (2) edge bits set while parsing (0: no edge, or filterEdgeFlag 0).
int boundary_strength(const PicParams& pp, const FrameState& fs, const Picture& pic, size_t p,
                      size_t q, uint8_t edge) {
  if (!edge) return 0;
  if (fs.pred_mode[p] == MODE_INTRA || fs.pred_mode[q] == MODE_INTRA) return 2;
  if ((edge & 1) && (fs.nz_luma[p] || fs.nz_luma[q])) return 1;
  // Motion comparison: which pictures are referenced matters, not through which list.
  const MvField& fp = pic.mvf[p];
  const MvField& fq = pic.mvf[q];
  const Picture* rp[2] = {ref_pic(fs, pic, pp, p, fp, 0), ref_pic(fs, pic, pp, p, fp, 1)};
  const Picture* rq[2] = {ref_pic(fs, pic, pp, q, fq, 0), ref_pic(fs, pic, pp, q, fq, 1)};
  const int np = (fp.pred_flag & 1) + (fp.pred_flag >> 1), nq = (fq.pred_flag & 1) + (fq.pred_flag >> 1);
  if (np != nq) return 1;
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

}  // namespace

void plan_loop_filters(const PicParams& pp, const FrameState& fs, const Picture& pic, LoopFilterPlan& lf) {
  // 8.7.2: boundary strengths and the slice offsets of every 4x4 unit
  const size_t n = fs.pred_mode.size();
  lf.bs_v.assign(n, 0);
  lf.bs_h.assign(n, 0);
  lf.beta.assign(n, 0);
  lf.tc.assign(n, 0);
  lf.deblock = false;
  for (int y = 0; y < pp.height; y += 4)
    for (int x = 0; x < pp.width; x += 4) {
      const size_t u = fs.idx(x, y);
      const int ctb = (y >> pp.log2_ctb_size) * pp.pic_width_in_ctbs + (x >> pp.log2_ctb_size);
      const int s = fs.ctb_slice[ctb];
      if (s < 0) continue;
      lf.beta[u] = static_cast<int8_t>(fs.slices[s].beta_offset_div2);
      lf.tc[u] = static_cast<int8_t>(fs.slices[s].tc_offset_div2);
      if (x > 0 && (x & 7) == 0)
        lf.bs_v[u] = static_cast<uint8_t>(boundary_strength(pp, fs, pic, u - 1, u, fs.edge_v[u]));
      if (y > 0 && (y & 7) == 0)
        lf.bs_h[u] = static_cast<uint8_t>(boundary_strength(pp, fs, pic, u - fs.w4, u, fs.edge_h[u]));
      lf.deblock |= lf.bs_v[u] || lf.bs_h[u];
    }
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
