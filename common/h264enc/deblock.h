// deblock.h: the in-loop deblocking filter of a reconstructed picture (8.7)
//
// deblock_mb is shared by the CPU (deblock_picture, raster order) and CUDA (every macroblock's
// MbEdges gathered at once, then a wavefront over the picture whose threads filter the lines
// of an edge of a macroblock: every line across an edge reads and writes only its own samples,
// so splitting them changes nothing).
#pragma once

#include "common/h264enc/macroblock.h"
#include "common/h264enc/picture.h"
#include "common/h264enc/pixel.h"
#include "common/h264enc/tables.h"
#include "common/util/hd.h"

#if defined(__CUDA_ARCH__)
#define GVC_LANE_SYNC() __syncwarp()
#else
#define GVC_LANE_SYNC()
#endif

namespace gvc::h264 {

struct DeblockParams {
  int qp = 26;                      // QPY of every macroblock except I_PCM (0)
  int chroma_qp_index_offset = 0;
  int alpha_c0_offset = 0;  // FilterOffsetA = slice_alpha_c0_offset_div2 << 1
  int beta_offset = 0;      // FilterOffsetB = slice_beta_offset_div2 << 1
};

// The planes of a picture being filtered (host or device memory).
struct DeblockPlanes {
  uint8_t* plane[3];
  int stride[3];
};

namespace deblock_detail {

// alpha' and beta' (Table 8-16) by indexA / indexB.
GVC_TABLE(uint8_t, kAlpha, [52], {
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,   0,   0,   0,   0,   4,   4,
    5,  6,  7,  8,  9,  10, 12, 13, 15, 17, 20, 22,  25,  28,  32,  36,  40,  45,
    50, 56, 63, 71, 80, 90, 101, 113, 127, 144, 162, 182, 203, 226, 255, 255})
GVC_TABLE(uint8_t, kBeta, [52], {
    0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,  0,  0,  0,  2,  2,  2,  3,  3,  3,  3,  4,  4,  4,
    6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18})
// tC0 (Table 8-17) by indexA, for bS = 1, 2, 3.
GVC_TABLE(uint8_t, kTc0, [52][3], {
    {0, 0, 0},   {0, 0, 0},   {0, 0, 0},   {0, 0, 0},   {0, 0, 0},   {0, 0, 0},  {0, 0, 0},
    {0, 0, 0},   {0, 0, 0},   {0, 0, 0},   {0, 0, 0},   {0, 0, 0},   {0, 0, 0},  {0, 0, 0},
    {0, 0, 0},   {0, 0, 0},   {0, 0, 0},   {0, 0, 1},   {0, 0, 1},   {0, 0, 1},  {0, 0, 1},
    {0, 1, 1},   {0, 1, 1},   {1, 1, 1},   {1, 1, 1},   {1, 1, 1},   {1, 1, 1},  {1, 1, 2},
    {1, 1, 2},   {1, 1, 2},   {1, 1, 2},   {1, 2, 3},   {1, 2, 3},   {2, 2, 3},  {2, 2, 4},
    {2, 3, 4},   {2, 3, 4},   {3, 3, 5},   {3, 4, 6},   {3, 4, 6},   {4, 5, 7},  {4, 5, 8},
    {4, 6, 9},   {5, 7, 10},  {6, 8, 11},  {6, 8, 13},  {7, 10, 14}, {8, 11, 16}, {9, 12, 18},
    {10, 13, 20}, {11, 15, 23}, {13, 17, 25}})

struct EdgeFilter {
  int alpha, beta, index_a;
};

GVC_HD EdgeFilter edge_params(int qp_p, int qp_q, const DeblockParams& p) {
  int qpav = (qp_p + qp_q + 1) >> 1;
  int index_a = clip3(0, 51, qpav + p.alpha_c0_offset);
  int index_b = clip3(0, 51, qpav + p.beta_offset);
  return {GVC_T(kAlpha)[index_a], GVC_T(kBeta)[index_b], index_a};
}

// Filters one line of samples across an edge: q0 at pix[0], p0 at pix[-step] (8.7.2.3/4).
GVC_HD void filter_line(uint8_t* pix, int step, int bs, const EdgeFilter& f, bool chroma) {
  int p0 = pix[-step], p1 = pix[-2 * step], q0 = pix[0], q1 = pix[step];
  if (!(iabs(p0 - q0) < f.alpha && iabs(p1 - p0) < f.beta && iabs(q1 - q0) < f.beta)) return;
  if (chroma) {
    if (bs < 4) {
      int tc = GVC_T(kTc0)[f.index_a][bs - 1] + 1;
      int delta = clip3(-tc, tc, (((q0 - p0) << 2) + (p1 - q1) + 4) >> 3);
      pix[-step] = clip1(p0 + delta);
      pix[0] = clip1(q0 - delta);
    } else {
      pix[-step] = uint8_t((2 * p1 + p0 + q1 + 2) >> 2);
      pix[0] = uint8_t((2 * q1 + q0 + p1 + 2) >> 2);
    }
    return;
  }
  int p2 = pix[-3 * step], q2 = pix[2 * step];
  int ap = iabs(p2 - p0), aq = iabs(q2 - q0);
  if (bs < 4) {
    int tc0 = GVC_T(kTc0)[f.index_a][bs - 1];
    int tc = tc0 + (ap < f.beta) + (aq < f.beta);
    int delta = clip3(-tc, tc, (((q0 - p0) << 2) + (p1 - q1) + 4) >> 3);
    pix[-step] = clip1(p0 + delta);
    pix[0] = clip1(q0 - delta);
    if (ap < f.beta) pix[-2 * step] = uint8_t(p1 + clip3(-tc0, tc0, (p2 + ((p0 + q0 + 1) >> 1) - (p1 << 1)) >> 1));
    if (aq < f.beta) pix[step] = uint8_t(q1 + clip3(-tc0, tc0, (q2 + ((p0 + q0 + 1) >> 1) - (q1 << 1)) >> 1));
    return;
  }
  int p3 = pix[-4 * step], q3 = pix[3 * step];
  bool strong = iabs(p0 - q0) < ((f.alpha >> 2) + 2);
  if (ap < f.beta && strong) {
    pix[-step] = uint8_t((p2 + 2 * p1 + 2 * p0 + 2 * q0 + q1 + 4) >> 3);
    pix[-2 * step] = uint8_t((p2 + p1 + p0 + q0 + 2) >> 2);
    pix[-3 * step] = uint8_t((2 * p3 + 3 * p2 + p1 + p0 + q0 + 4) >> 3);
  } else {
    pix[-step] = uint8_t((2 * p1 + p0 + q1 + 2) >> 2);
  }
  if (aq < f.beta && strong) {
    pix[0] = uint8_t((p1 + 2 * p0 + 2 * q0 + 2 * q1 + q2 + 4) >> 3);
    pix[step] = uint8_t((p0 + q0 + q1 + q2 + 2) >> 2);
    pix[2 * step] = uint8_t((2 * q3 + 3 * q2 + q1 + q0 + p0 + 4) >> 3);
  } else {
    pix[0] = uint8_t((2 * q1 + q0 + p1 + 2) >> 2);
  }
}

GVC_HD int mb_qp(const Macroblock& m, const DeblockParams& p) { return m.type == MbType::IPcm ? 0 : p.qp; }

// bS (8.7.2.1) between the 4x4 luma block (pbx, pby) of macroblock P and (qbx, qby) of Q
// (frame macroblocks, P slices: one vector each). Every slice of a picture has the same
// reference list, so equal refIdxL0 means the same reference picture.
GVC_HD int boundary_strength(const Macroblock& P, int pbx, int pby, const Macroblock& Q, int qbx, int qby,
                      bool mb_edge) {
  if (is_intra(P.type) || is_intra(Q.type)) return mb_edge ? 4 : 3;
  if (P.total_coeff_luma[GVC_T(kBlkIdx)[pby][pbx]] || Q.total_coeff_luma[GVC_T(kBlkIdx)[qby][qbx]]) return 2;
  if (P.ref_idx[(pby >> 1) * 2 + (pbx >> 1)] != Q.ref_idx[(qby >> 1) * 2 + (qbx >> 1)]) return 1;
  const int16_t* mp = P.mv[4 * pby + pbx];
  const int16_t* mq = Q.mv[4 * qby + qbx];
  if (iabs(mp[0] - mq[0]) >= 4 || iabs(mp[1] - mq[1]) >= 4) return 1;
  return 0;
}

}  // namespace deblock_detail

// What the filter of macroblock (mx, my) reads of the coded macroblocks: the bS of every line
// group of every edge (8.7.2.1; 0 where the edge is not filtered, at the picture's edge) and the
// QPs either side. Gathered apart from the samples, so that a GPU can gather every
// macroblock's at once before its wavefront.
struct MbEdges {
  uint8_t bs[2][4][4];  // [0 vertical, 1 horizontal][edge][4-line group]
  uint8_t qp_q;         // the macroblock's QP (mb_qp)
  uint8_t qp_p[2];      // its left (vertical edge 0) and upper (horizontal edge 0) neighbour's
};

// MbEdges of macroblock (mx, my) in `map` (slice = -1: slice edges are filtered, as with
// disable_deblocking_filter_idc 0).
GVC_HD void mb_edges(const MbMap& map, int mx, int my, const DeblockParams& p, MbEdges& out) {
  using namespace deblock_detail;
  const Macroblock& Q = *map.at(mx, my);
  out.qp_q = uint8_t(mb_qp(Q, p));
  for (int dir = 0; dir < 2; dir++) {  // 0: vertical edges, 1: horizontal edges
    const Macroblock* nb = dir == 0 ? map.at(mx - 1, my) : map.at(mx, my - 1);
    out.qp_p[dir] = uint8_t(nb ? mb_qp(*nb, p) : 0);
    for (int edge = 0; edge < 4; edge++) {
      const Macroblock* P = edge == 0 ? nb : &Q;
      for (int i = 0; i < 4; i++) {
        int bx = dir == 0 ? edge : i, by = dir == 0 ? i : edge;
        int pbx = dir == 0 ? (bx + 3) & 3 : bx, pby = dir == 0 ? by : (by + 3) & 3;
        // picture edge: filterLeftMbEdgeFlag / filterTopMbEdgeFlag 0
        out.bs[dir][edge][i] = uint8_t(P ? boundary_strength(*P, pbx, pby, Q, bx, by, edge == 0) : 0);
      }
    }
  }
}

// The filter parameters of the edges of direction `dir` of plane `c` (0 luma, 1-2 chroma) of a
// macroblock: f[edge] for its luma edges 0-3 (chroma (4:2:0): luma edges 0 and 2 are chroma
// edges 0 and 1, f[0] and f[2]).
GVC_HD void edge_filters(const MbEdges& e, const DeblockParams& p, int dir, int c, deblock_detail::EdgeFilter f[4]) {
  using namespace deblock_detail;
  for (int edge = 0; edge < 4; edge += c ? 2 : 1) {
    const int qp_p = edge == 0 ? e.qp_p[dir] : e.qp_q;
    f[edge] = c ? edge_params(chroma_qp(qp_p, p.chroma_qp_index_offset), chroma_qp(e.qp_q, p.chroma_qp_index_offset), p)
                : edge_params(qp_p, e.qp_q, p);
  }
}

// The plane of line `line` of deblock_mb_line (0-15: luma, 16-23: Cb, 24-31: Cr).
GVC_HD int deblock_line_plane(int line) { return line < 16 ? 0 : 1 + ((line - 16) >> 3); }

// Filters line `line` of a macroblock (0-15: luma, 16-23: Cb, 24-31: Cr, 8 each) across its
// edges of direction `dir` (0: vertical edges, the line a row; 1: horizontal, a column), edge
// after edge as `e` says, with `f` from edge_filters for the line's plane. The lines of one
// direction are independent of each other.
GVC_HD void deblock_mb_line(const DeblockPlanes& mb, const MbEdges& e, int dir, int line,
                            const deblock_detail::EdgeFilter f[4]) {
  using namespace deblock_detail;
  const int c = deblock_line_plane(line);
  const int k = c ? (line - 16) & 7 : line;
  const int step = dir == 0 ? 1 : mb.stride[c];
  uint8_t* const base = mb.plane[c] + k * (dir == 0 ? mb.stride[c] : 1);
  for (int edge = 0; edge < 4; edge += c ? 2 : 1) {
    const int bs = e.bs[dir][edge][c ? k >> 1 : k >> 2];
    if (bs) filter_line(base + (c ? 2 : 4) * edge * step, step, bs, f[edge], c != 0);
  }
}

// One direction of deblock_mb_edges below (0: the vertical edges, 1: the horizontal ones),
// lines shared out over the lanes as there; the caller synchronises the lanes after it.
GVC_HD void deblock_mb_dir(const DeblockPlanes& mb, const MbEdges& e, const DeblockParams& p, int dir, int lane = 0,
                           int lanes = 1) {
  using namespace deblock_detail;
  EdgeFilter f[4];
  for (int line = lane, fc = -1; line < 32; line += lanes) {
    const int c = deblock_line_plane(line);
    if (c != fc) edge_filters(e, p, dir, fc = c, f);  // once per plane a lane visits
    deblock_mb_line(mb, e, dir, line, f);
  }
}

// Filters the edges of a macroblock (luma and chroma: vertical edges left to right, then
// horizontal edges top to bottom) as `e` says; `mb` points at its top-left samples (luma and
// both chroma planes, with their strides), the samples up to 4 (luma) or 2 (chroma) before it
// in the left and upper neighbours. Its left and upper neighbours must be filtered already.
// Lane `lane` of `lanes` filters lines lane, lane + lanes, ... of deblock_mb_line's 32.
GVC_HD void deblock_mb_edges(const DeblockPlanes& mb, const MbEdges& e, const DeblockParams& p, int lane = 0,
                             int lanes = 1) {
  for (int dir = 0; dir < 2; dir++) {
    deblock_mb_dir(mb, e, p, dir, lane, lanes);
    // A lane filters the same rows across every vertical edge, but the horizontal edges'
    // columns cross every lane's rows.
    GVC_LANE_SYNC();
  }
}

// Filters the edges of macroblock (mx, my) of `pic` with the boundary strengths of 8.7.2.1 from
// the coded macroblocks in `map` (mb_edges, then deblock_mb_edges).
GVC_HD void deblock_mb(const DeblockPlanes& pic, const MbMap& map, int mx, int my, const DeblockParams& p,
                       int lane = 0, int lanes = 1) {
  MbEdges e;
  mb_edges(map, mx, my, p, e);
  DeblockPlanes at = pic;
  at.plane[0] += size_t(16 * my) * size_t(pic.stride[0]) + size_t(16 * mx);
  for (int c = 1; c <= 2; c++) at.plane[c] += size_t(8 * my) * size_t(pic.stride[c]) + size_t(8 * mx);
  deblock_mb_edges(at, e, p, lane, lanes);
}

// Filters `pic` in place, macroblock by macroblock in raster order, with deblock_mb.
void deblock_picture(Picture& pic, const MbMap& map, const DeblockParams& p);

}  // namespace gvc::h264
