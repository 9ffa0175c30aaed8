// deblock.h: the in-loop deblocking filter of a reconstructed picture (8.7)
//
// Shared by the CPU (deblock_picture: deblock_mb in raster order) and CUDA (gpu/h264_deblock.cu:
// every macroblock's MbFilters gathered at once, then a wavefront over the picture whose lanes
// filter a macroblock's lines in registers with filter_edge: every line across an edge reads
// and writes only its own samples, so splitting them changes nothing).
#pragma once

#include "common/h264enc/macroblock.h"
#include "common/h264enc/picture.h"
#include "common/h264enc/pixel.h"
#include "common/h264enc/tables.h"
#include "common/util/hd.h"

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

// Filters one line of samples across an edge (8.7.2.3/4): s(i) is the line's sample i from the
// edge (q0 at 0, p0 at -1: a reference to it); bS 1-4, tc0 = tC0 for bS < 4. It reads p1..q1
// first, the rest only where the edge is filtered, and writes only what changes. S is
// SamplesInMemory on the CPU, registers on the GPU (h264_deblock.cu).
template <typename S>
GVC_HD void filter_edge(S s, int bs, int alpha, int beta, int tc0, bool chroma) {
  using namespace deblock_detail;
  const int p0 = s(-1), p1 = s(-2), q0 = s(0), q1 = s(1);
  if (!(iabs(p0 - q0) < alpha && iabs(p1 - p0) < beta && iabs(q1 - q0) < beta)) return;
  if (chroma) {
    if (bs < 4) {
      const int tc = tc0 + 1;
      const int delta = clip3(-tc, tc, (((q0 - p0) << 2) + (p1 - q1) + 4) >> 3);
      s(-1) = clip1(p0 + delta);
      s(0) = clip1(q0 - delta);
    } else {
      s(-1) = uint8_t((2 * p1 + p0 + q1 + 2) >> 2);
      s(0) = uint8_t((2 * q1 + q0 + p1 + 2) >> 2);
    }
    return;
  }
  const int p2 = s(-3), q2 = s(2);
  const int ap = iabs(p2 - p0), aq = iabs(q2 - q0);
  if (bs < 4) {
    const int tc = tc0 + (ap < beta) + (aq < beta);
    const int delta = clip3(-tc, tc, (((q0 - p0) << 2) + (p1 - q1) + 4) >> 3);
    s(-1) = clip1(p0 + delta);
    s(0) = clip1(q0 - delta);
    if (ap < beta) s(-2) = uint8_t(p1 + clip3(-tc0, tc0, (p2 + ((p0 + q0 + 1) >> 1) - (p1 << 1)) >> 1));
    if (aq < beta) s(1) = uint8_t(q1 + clip3(-tc0, tc0, (q2 + ((p0 + q0 + 1) >> 1) - (q1 << 1)) >> 1));
    return;
  }
  const int p3 = s(-4), q3 = s(3);
  const bool strong = iabs(p0 - q0) < ((alpha >> 2) + 2);
  if (ap < beta && strong) {
    s(-1) = uint8_t((p2 + 2 * p1 + 2 * p0 + 2 * q0 + q1 + 4) >> 3);
    s(-2) = uint8_t((p2 + p1 + p0 + q0 + 2) >> 2);
    s(-3) = uint8_t((2 * p3 + 3 * p2 + p1 + p0 + q0 + 4) >> 3);
  } else {
    s(-1) = uint8_t((2 * p1 + p0 + q1 + 2) >> 2);
  }
  if (aq < beta && strong) {
    s(0) = uint8_t((p1 + 2 * p0 + 2 * q0 + 2 * q1 + q2 + 4) >> 3);
    s(1) = uint8_t((p0 + q0 + q1 + q2 + 2) >> 2);
    s(2) = uint8_t((2 * q3 + 3 * q2 + q1 + q0 + p0 + 4) >> 3);
  } else {
    s(0) = uint8_t((2 * q1 + q0 + p1 + 2) >> 2);
  }
}

// A line's samples in a picture: q0 and the samples `step` apart from it.
struct SamplesInMemory {
  uint8_t* q0;
  int step;
  GVC_HD uint8_t& operator()(int i) const { return q0[i * step]; }
};

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

// What a line of a macroblock needs to filter its edges of one direction: for each of its edge
// slots, bS (0: left alone), tC0 (bS < 4), alpha and beta. Luma edges 0-3 are at samples 0, 4,
// 8 and 12 of the line; chroma (4:2:0) has luma edges 0 and 2 at chroma samples 0 and 4, in
// slots 0 and 1 (2 and 3 unused): in both, slot k's q0 is sample 4k.
struct alignas(16) LineFilter {
  uint8_t bs[4], tc0[4], alpha[4], beta[4];
};

// A macroblock's LineFilters: [0 vertical edges, 1 horizontal][0 luma, 1 chroma][group]; the
// group of luma line k (a row for vertical edges, a column for horizontal ones) is k / 4, that of
// chroma line k (either plane) k / 2, as bS goes.
struct MbFilters {
  LineFilter f[2][2][4];
};

// MbFilters from a macroblock's MbEdges (8.7.2.2: qPav, indexA and indexB of each edge, the
// chroma edges with QPc; tC0 from Table 8-17).
GVC_HD void mb_filters(const MbEdges& e, const DeblockParams& p, MbFilters& out) {
  using namespace deblock_detail;
  for (int dir = 0; dir < 2; dir++)
    for (int c = 0; c < 2; c++)
      for (int slot = 0; slot < 4; slot++) {
        const int edge = c ? 2 * slot : slot;  // luma edge
        EdgeFilter f{0, 0, 0};
        if (edge < 4) {
          const int qp_p = edge == 0 ? e.qp_p[dir] : e.qp_q;
          f = c ? edge_params(chroma_qp(qp_p, p.chroma_qp_index_offset),
                              chroma_qp(e.qp_q, p.chroma_qp_index_offset), p)
                : edge_params(qp_p, e.qp_q, p);
        }
        for (int g = 0; g < 4; g++) {
          LineFilter& l = out.f[dir][c][g];
          const int bs = edge < 4 ? e.bs[dir][edge][g] : 0;
          l.bs[slot] = uint8_t(bs);
          l.tc0[slot] = uint8_t(bs > 0 && bs < 4 ? GVC_T(kTc0)[f.index_a][bs - 1] : 0);
          l.alpha[slot] = uint8_t(f.alpha);
          l.beta[slot] = uint8_t(f.beta);
        }
      }
}

// Filters line `line` of a macroblock (0-15: luma, 16-23: Cb, 24-31: Cr, 8 each) across its
// edges of direction `dir` (0: vertical edges, the line a row; 1: horizontal, a column), edge
// after edge. The lines of one direction are independent of each other.
GVC_HD void deblock_mb_line(const DeblockPlanes& mb, const MbFilters& f, int dir, int line) {
  const int c = line < 16 ? 0 : 1 + ((line - 16) >> 3);
  const int k = c ? (line - 16) & 7 : line;
  const LineFilter& l = f.f[dir][c != 0][c ? k >> 1 : k >> 2];
  const int step = dir == 0 ? 1 : mb.stride[c];
  uint8_t* const base = mb.plane[c] + k * (dir == 0 ? mb.stride[c] : 1);
  for (int slot = 0; slot < 4; slot++)
    if (l.bs[slot])
      filter_edge(SamplesInMemory{base + 4 * slot * step, step}, l.bs[slot], l.alpha[slot], l.beta[slot], l.tc0[slot],
                  c != 0);
}

// Filters the edges of a macroblock (luma and chroma: vertical edges left to right, then
// horizontal edges top to bottom) as `f` says; `mb` points at its top-left samples (luma and
// both chroma planes, with their strides), the samples up to 4 (luma) or 2 (chroma) before it
// in the left and upper neighbours. Its left and upper neighbours must be filtered already.
GVC_HD void deblock_mb_edges(const DeblockPlanes& mb, const MbFilters& f) {
  for (int dir = 0; dir < 2; dir++)
    for (int line = 0; line < 32; line++) deblock_mb_line(mb, f, dir, line);
}

// Filters the edges of macroblock (mx, my) of `pic` with the boundary strengths of 8.7.2.1 from
// the coded macroblocks in `map` (mb_edges, then deblock_mb_edges).
GVC_HD void deblock_mb(const DeblockPlanes& pic, const MbMap& map, int mx, int my, const DeblockParams& p) {
  MbEdges e;
  mb_edges(map, mx, my, p, e);
  MbFilters f;
  mb_filters(e, p, f);
  DeblockPlanes at = pic;
  at.plane[0] += size_t(16 * my) * size_t(pic.stride[0]) + size_t(16 * mx);
  for (int c = 1; c <= 2; c++) at.plane[c] += size_t(8 * my) * size_t(pic.stride[c]) + size_t(8 * mx);
  deblock_mb_edges(at, f);
}

// Filters `pic` in place, macroblock by macroblock in raster order, with deblock_mb.
void deblock_picture(Picture& pic, const MbMap& map, const DeblockParams& p);

}  // namespace gvc::h264
