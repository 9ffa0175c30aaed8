// mv_derive.cpp: merge candidates (spatial, temporal, combined bi-predictive, zero) and AMVP (8.5.3.2.2-8.5.3.2.9)
#include "common/hevcdec/mv_derive.h"

#include <algorithm>
#include <cstdlib>

namespace gvc::hevc {
namespace {

int clip3(int lo, int hi, int v) { return v < lo ? lo : (v > hi ? hi : v); }

// 8-179..8-183 (and 8-201..8-203): scaling of a motion vector component by POC distances.
int scale_mv(int mv, int td, int tb) {
  td = clip3(-128, 127, td);
  tb = clip3(-128, 127, tb);
  const int tx = (16384 + (std::abs(td) >> 1)) / td;
  const int dist_scale_factor = clip3(-4096, 4095, (tb * tx + 32) >> 6);
  const int prod = dist_scale_factor * mv;
  const int sign = prod < 0 ? -1 : 1;
  return clip3(-32768, 32767, sign * ((std::abs(prod) + 127) >> 8));
}

// 6.4.2 prediction block availability; a neighbour coded in intra mode is not available.
bool pb_available(const MvEnv& env, const PbPos& pb, int x_nb, int y_nb) {
  const bool same_cb = pb.x_cb <= x_nb && pb.y_cb <= y_nb && pb.x_cb + pb.n_cb_s > x_nb &&
                       pb.y_cb + pb.n_cb_s > y_nb;
  bool avail;
  if (!same_cb)
    avail = env.zscan_available(env.zscan_self, pb.x_pb, pb.y_pb, x_nb, y_nb);
  else
    avail = !((pb.w << 1) == pb.n_cb_s && (pb.h << 1) == pb.n_cb_s && pb.part_idx == 1 &&
              pb.y_cb + pb.h <= y_nb && pb.x_cb + pb.w > x_nb);
  return avail && env.cur->mv_at(x_nb, y_nb).pred_flag != 0;
}

// 8.5.3.2.9 collocated motion vectors at the (already 16x16-rounded) position in ColPic.
bool collocated_mv(const MvEnv& env, int x_col, int y_col, int X, int ref_idx, int mv_out[2]) {
  const Picture& col = *env.col;
  if (col.mvf.empty() || col.ctb_slice.empty()) return false;
  const MvField& f = col.mv_at(x_col, y_col);
  if (!f.pred_flag) return false;  // intra (or never decoded)
  int list_col;
  if (!(f.pred_flag & 1))
    list_col = 1;
  else if (f.pred_flag == 1)
    list_col = 0;
  else
    list_col = env.no_backward_pred ? X : env.sh->collocated_from_l0_flag;
  const int ref_idx_col = f.ref_idx[list_col];
  const PicParams& pp = *env.pp;
  const int ctb = (y_col >> pp.log2_ctb_size) * pp.pic_width_in_ctbs + (x_col >> pp.log2_ctb_size);
  const int s = col.ctb_slice[ctb];
  if (s < 0 || s >= int(col.slice_refs.size())) return false;
  const RefPicLists& cr = col.slice_refs[s];
  const bool col_lt = cr.long_term[list_col][ref_idx_col];
  const bool cur_lt = env.refs->long_term[X][ref_idx];
  if (col_lt != cur_lt) return false;
  const int col_poc_diff = col.poc - cr.poc[list_col][ref_idx_col];
  const int cur_poc_diff = env.cur->poc - env.refs->poc[X][ref_idx];
  for (int c = 0; c < 2; ++c)
    mv_out[c] = (cur_lt || col_poc_diff == cur_poc_diff || col_poc_diff == 0)
                    ? f.mv[list_col][c]
                    : scale_mv(f.mv[list_col][c], col_poc_diff, cur_poc_diff);
  return true;
}

// 8.5.3.2.8 temporal luma motion vector prediction: bottom-right candidate, then the centre.
bool temporal_mv(const MvEnv& env, int x_pb, int y_pb, int w, int h, int X, int ref_idx,
                 int mv_out[2]) {
  if (!env.col || !env.sh->temporal_mvp_enabled_flag) return false;
  const PicParams& pp = *env.pp;
  const int x_br = x_pb + w, y_br = y_pb + h;
  if ((y_pb >> pp.log2_ctb_size) == (y_br >> pp.log2_ctb_size) && y_br < pp.height && x_br < pp.width &&
      collocated_mv(env, (x_br >> 4) << 4, (y_br >> 4) << 4, X, ref_idx, mv_out))
    return true;
  const int x_ctr = x_pb + (w >> 1), y_ctr = y_pb + (h >> 1);
  return collocated_mv(env, (x_ctr >> 4) << 4, (y_ctr >> 4) << 4, X, ref_idx, mv_out);
}

}  // namespace

MvField derive_merge(const MvEnv& env, const PbPos& pb_in, int merge_idx) {
  const GstH265SliceHdr& sh = *env.sh;
  const bool b_slice = sh.type == GST_H265_B_SLICE;
  PbPos pb = pb_in;
  const int log2_par_mrg_level = env.pp->pps->log2_parallel_merge_level_minus2 + 2;
  // 8.5.3.2.2: singleMCLFlag, all prediction units of an 8x8 coding unit share one list
  if (log2_par_mrg_level > 2 && pb.n_cb_s == 8) {
    pb.x_pb = pb.x_cb;
    pb.y_pb = pb.y_cb;
    pb.w = pb.h = pb.n_cb_s;
    pb.part_idx = 0;
  }
  auto par_same = [&](int xn, int yn) {
    return (pb.x_pb >> log2_par_mrg_level) == (xn >> log2_par_mrg_level) &&
           (pb.y_pb >> log2_par_mrg_level) == (yn >> log2_par_mrg_level);
  };
  MvField list[8];
  int n = 0;
  // 8.5.3.2.3 spatial merging candidates A1, B1, B0, A0, B2. availableN is the block's
  // availability (with the parallel-merge and second-partition exclusions); availableFlagN
  // also drops a candidate whose motion equals the one it is compared with.
  const int xa1 = pb.x_pb - 1, ya1 = pb.y_pb + pb.h - 1;
  const int xb1 = pb.x_pb + pb.w - 1, yb1 = pb.y_pb - 1;
  const int xb0 = pb.x_pb + pb.w, yb0 = pb.y_pb - 1;
  const int xa0 = pb.x_pb - 1, ya0 = pb.y_pb + pb.h;
  const int xb2 = pb.x_pb - 1, yb2 = pb.y_pb - 1;
  const bool avail_a1 = !par_same(xa1, ya1) &&
                        !(pb.part_idx == 1 && (pb.part_mode == PART_Nx2N || pb.part_mode == PART_nLx2N ||
                                               pb.part_mode == PART_nRx2N)) &&
                        pb_available(env, pb, xa1, ya1);
  const bool avail_b1 = !par_same(xb1, yb1) &&
                        !(pb.part_idx == 1 && (pb.part_mode == PART_2NxN || pb.part_mode == PART_2NxnU ||
                                               pb.part_mode == PART_2NxnD)) &&
                        pb_available(env, pb, xb1, yb1);
  const bool avail_b0 = !par_same(xb0, yb0) && pb_available(env, pb, xb0, yb0);
  const bool avail_a0 = !par_same(xa0, ya0) && pb_available(env, pb, xa0, ya0);
  const bool avail_b2 = !par_same(xb2, yb2) && pb_available(env, pb, xb2, yb2);
  const Picture& cur = *env.cur;
  auto same = [&](bool avail_n, int xn, int yn, int xm, int ym) {
    return avail_n && cur.mv_at(xn, yn) == cur.mv_at(xm, ym);
  };
  const bool flag_a1 = avail_a1;
  const bool flag_b1 = avail_b1 && !same(avail_a1, xa1, ya1, xb1, yb1);
  const bool flag_b0 = avail_b0 && !same(avail_b1, xb1, yb1, xb0, yb0);
  const bool flag_a0 = avail_a0 && !same(avail_a1, xa1, ya1, xa0, ya0);
  const bool flag_b2 = avail_b2 && !same(avail_a1, xa1, ya1, xb2, yb2) &&
                       !same(avail_b1, xb1, yb1, xb2, yb2) &&
                       int(flag_a0) + int(flag_a1) + int(flag_b0) + int(flag_b1) != 4;
  if (flag_a1) list[n++] = cur.mv_at(xa1, ya1);
  if (flag_b1) list[n++] = cur.mv_at(xb1, yb1);
  if (flag_b0) list[n++] = cur.mv_at(xb0, yb0);
  if (flag_a0) list[n++] = cur.mv_at(xa0, ya0);
  if (flag_b2) list[n++] = cur.mv_at(xb2, yb2);

  // 8.5.3.2.8 temporal candidate with refIdxLXCol = 0
  {
    MvField col;
    int mv[2];
    if (temporal_mv(env, pb.x_pb, pb.y_pb, pb.w, pb.h, 0, 0, mv)) {
      col.pred_flag |= 1;
      col.ref_idx[0] = 0;
      col.mv[0][0] = int16_t(mv[0]);
      col.mv[0][1] = int16_t(mv[1]);
    }
    if (b_slice && temporal_mv(env, pb.x_pb, pb.y_pb, pb.w, pb.h, 1, 0, mv)) {
      col.pred_flag |= 2;
      col.ref_idx[1] = 0;
      col.mv[1][0] = int16_t(mv[0]);
      col.mv[1][1] = int16_t(mv[1]);
    }
    if (col.pred_flag) list[n++] = col;
  }

  // 8.5.3.2.4 combined bi-predictive merging candidates
  const int num_orig = n;
  if (b_slice && num_orig > 1 && num_orig < env.max_num_merge_cand) {
    static const int kL0[12] = {0, 1, 0, 2, 1, 2, 0, 3, 1, 3, 2, 3};
    static const int kL1[12] = {1, 0, 2, 0, 2, 1, 3, 0, 3, 1, 3, 2};
    for (int comb = 0; comb < num_orig * (num_orig - 1) && n < env.max_num_merge_cand; ++comb) {
      const MvField& l0 = list[kL0[comb]];
      const MvField& l1 = list[kL1[comb]];
      if ((l0.pred_flag & 1) && (l1.pred_flag & 2) &&
          (env.refs->poc[0][l0.ref_idx[0]] != env.refs->poc[1][l1.ref_idx[1]] ||
           l0.mv[0][0] != l1.mv[1][0] || l0.mv[0][1] != l1.mv[1][1])) {
        MvField c;
        c.pred_flag = 3;
        c.ref_idx[0] = l0.ref_idx[0];
        c.ref_idx[1] = l1.ref_idx[1];
        c.mv[0][0] = l0.mv[0][0];
        c.mv[0][1] = l0.mv[0][1];
        c.mv[1][0] = l1.mv[1][0];
        c.mv[1][1] = l1.mv[1][1];
        list[n++] = c;
      }
    }
  }

  // 8.5.3.2.5 zero motion vector merging candidates
  const int num_ref_idx = b_slice ? std::min(env.refs->n[0], env.refs->n[1]) : env.refs->n[0];
  for (int zero_idx = 0; n < env.max_num_merge_cand; ++zero_idx) {
    MvField z;
    const int r = zero_idx < num_ref_idx ? zero_idx : 0;
    z.pred_flag = b_slice ? 3 : 1;
    z.ref_idx[0] = int8_t(r);
    if (b_slice) z.ref_idx[1] = int8_t(r);
    list[n++] = z;
  }

  MvField out = list[merge_idx < n ? merge_idx : 0];
  // 8.5.3.2.2: 8x4 and 4x8 prediction blocks are uni-predicted
  if (out.pred_flag == 3 && pb_in.w + pb_in.h == 12) {
    out.pred_flag = 1;
    out.ref_idx[1] = -1;
    out.mv[1][0] = out.mv[1][1] = 0;
  }
  return out;
}

void derive_amvp(const MvEnv& env, const PbPos& pb, int X, int ref_idx, int mvp_flag, int mvp[2]) {
  const RefPicLists& r = *env.refs;
  const int Y = 1 - X;
  const int target_poc = r.poc[X][ref_idx];
  const bool target_lt = r.long_term[X][ref_idx];
  const int cur_poc = env.cur->poc;

  // without scaling: the neighbour refers to the same picture through list X or list Y
  auto same_ref = [&](const MvField& f, int out[2]) {
    for (int l : {X, Y})
      if ((f.pred_flag >> l) & 1 && r.poc[l][f.ref_idx[l]] == target_poc) {
        out[0] = f.mv[l][0];
        out[1] = f.mv[l][1];
        return true;
      }
    return false;
  };
  // with scaling: any reference of the same kind (long-term or short-term), scaled when both
  // are short-term
  auto scaled_ref = [&](const MvField& f, int out[2]) {
    for (int l : {X, Y})
      if ((f.pred_flag >> l) & 1 && bool(r.long_term[l][f.ref_idx[l]]) == target_lt) {
        out[0] = f.mv[l][0];
        out[1] = f.mv[l][1];
        const int ref_poc = r.poc[l][f.ref_idx[l]];
        if (!target_lt && ref_poc != target_poc)
          for (int c = 0; c < 2; ++c) out[c] = scale_mv(out[c], cur_poc - ref_poc, cur_poc - target_poc);
        return true;
      }
    return false;
  };

  // 8.5.3.2.7 spatial candidates: A from A0, A1; B from B0, B1, B2
  const int xa[2] = {pb.x_pb - 1, pb.x_pb - 1}, ya[2] = {pb.y_pb + pb.h, pb.y_pb + pb.h - 1};
  const bool avail_a[2] = {pb_available(env, pb, xa[0], ya[0]), pb_available(env, pb, xa[1], ya[1])};
  const bool is_scaled = avail_a[0] || avail_a[1];
  int mv_a[2] = {0, 0}, mv_b[2] = {0, 0};
  bool flag_a = false, flag_b = false;
  for (int k = 0; k < 2 && !flag_a; ++k)
    if (avail_a[k]) flag_a = same_ref(env.cur->mv_at(xa[k], ya[k]), mv_a);
  for (int k = 0; k < 2 && !flag_a; ++k)
    if (avail_a[k]) flag_a = scaled_ref(env.cur->mv_at(xa[k], ya[k]), mv_a);

  const int xb[3] = {pb.x_pb + pb.w, pb.x_pb + pb.w - 1, pb.x_pb - 1};
  const int yb[3] = {pb.y_pb - 1, pb.y_pb - 1, pb.y_pb - 1};
  bool avail_b[3];
  for (int k = 0; k < 3; ++k) avail_b[k] = pb_available(env, pb, xb[k], yb[k]);
  for (int k = 0; k < 3 && !flag_b; ++k)
    if (avail_b[k]) flag_b = same_ref(env.cur->mv_at(xb[k], yb[k]), mv_b);
  if (!is_scaled && flag_b) {
    flag_a = true;
    mv_a[0] = mv_b[0];
    mv_a[1] = mv_b[1];
  }
  if (!is_scaled) {
    flag_b = false;
    for (int k = 0; k < 3 && !flag_b; ++k)
      if (avail_b[k]) flag_b = scaled_ref(env.cur->mv_at(xb[k], yb[k]), mv_b);
  }

  // 8.5.3.2.6 candidate list: A, B (if different), Col, zero
  int cand[3][2];
  int n = 0;
  if (flag_a) {
    cand[n][0] = mv_a[0];
    cand[n++][1] = mv_a[1];
  }
  if (flag_b && !(flag_a && mv_a[0] == mv_b[0] && mv_a[1] == mv_b[1])) {
    cand[n][0] = mv_b[0];
    cand[n++][1] = mv_b[1];
  }
  if (n < 2) {
    int mv[2];
    if (temporal_mv(env, pb.x_pb, pb.y_pb, pb.w, pb.h, X, ref_idx, mv)) {
      cand[n][0] = mv[0];
      cand[n++][1] = mv[1];
    }
  }
  while (n < 2) {
    cand[n][0] = 0;
    cand[n++][1] = 0;
  }
  mvp[0] = cand[mvp_flag][0];
  mvp[1] = cand[mvp_flag][1];
}

}  // namespace gvc::hevc
