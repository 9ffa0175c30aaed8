// predict.h: intra prediction of 16x16 luma, 4x4 luma and 8x8 chroma blocks (8.3)
#pragma once

#include <cstdint>

#include "common/h264enc/pixel.h"
#include "common/util/hd.h"

namespace gvc::h264 {

// Intra_16x16 prediction modes (Table 8-4).
enum I16Mode { kI16V = 0, kI16H = 1, kI16Dc = 2, kI16Plane = 3 };
// Intra_4x4 prediction modes (Table 8-2).
enum I4Mode {
  kI4V = 0, kI4H = 1, kI4Dc = 2, kI4DiagDownLeft = 3, kI4DiagDownRight = 4,
  kI4VertRight = 5, kI4HorDown = 6, kI4VertLeft = 7, kI4HorUp = 8,
};
// Intra chroma prediction modes (Table 7-16).
enum ChromaMode { kChromaDc = 0, kChromaH = 1, kChromaV = 2, kChromaPlane = 3 };

// Neighbouring samples of a block, taken from the reconstructed picture before deblocking.
// top[-1] is the top-left corner sample p[-1, -1]; top[0..n-1] the row above, top[n..2n-1]
// the row above-right (Intra_4x4 only); left[0..n-1] the column to the left.
struct IntraEdge {
  uint8_t top_buf[1 + 16];
  uint8_t left[16];
  bool has_top = false, has_left = false, has_top_left = false, has_top_right = false;
  GVC_HD uint8_t* top() { return top_buf + 1; }
  GVC_HD const uint8_t* top() const { return top_buf + 1; }
};

// Gathers the edge of the n x n block at (x, y) of `plane`; availability as given. For
// Intra_4x4 (n == 4) the above-right samples are p[3, -1] repeated when not available (8.3.1.2).
GVC_HD void load_edge(const uint8_t* plane, int stride, int x, int y, int n, bool has_top,
               bool has_left, bool has_top_left, bool has_top_right, IntraEdge& e) {
  e.has_top = has_top;
  e.has_left = has_left;
  e.has_top_left = has_top_left;
  e.has_top_right = has_top_right;
  for (int i = 0; i < 17; i++) e.top_buf[i] = 128;
  for (int i = 0; i < 16; i++) e.left[i] = 128;
  uint8_t* top = e.top();
  if (has_top) {
    const uint8_t* row = plane + (y - 1) * stride + x;
    for (int i = 0; i < n; i++) top[i] = row[i];
    if (n == 4) {
      for (int i = 4; i < 8; i++) top[i] = has_top_right ? row[i] : row[3];
    }
  }
  if (has_left)
    for (int i = 0; i < n; i++) e.left[i] = plane[(y + i) * stride + x - 1];
  if (has_top_left) top[-1] = plane[(y - 1) * stride + x - 1];
}

// Whether a mode may be used with the available neighbours.
GVC_HD bool i16_mode_available(int mode, const IntraEdge& e) {
  switch (mode) {
    case kI16V: return e.has_top;
    case kI16H: return e.has_left;
    case kI16Dc: return true;
    default: return e.has_top && e.has_left && e.has_top_left;
  }
}
GVC_HD bool i4_mode_available(int mode, const IntraEdge& e) {
  switch (mode) {
    case kI4V: case kI4DiagDownLeft: case kI4VertLeft: return e.has_top;
    case kI4H: case kI4HorUp: return e.has_left;
    case kI4Dc: return true;
    default: return e.has_top && e.has_left && e.has_top_left;
  }
}
GVC_HD bool chroma_mode_available(int mode, const IntraEdge& e) {
  switch (mode) {
    case kChromaDc: return true;
    case kChromaH: return e.has_left;
    case kChromaV: return e.has_top;
    default: return e.has_top && e.has_left && e.has_top_left;
  }
}

// Predictions into `dst` (stride 16, 4 or 8 as the block width). The 16x16 and chroma ones
// write the samples first, first + step, ... (raster order), so that several GPU threads can
// share a block; the CPU writes them all.
GVC_HD void predict_16x16(int mode, const IntraEdge& e, uint8_t* dst, int first = 0, int step = 1) {
  const uint8_t* top = e.top();
  const uint8_t* left = e.left;
  switch (mode) {
    case kI16V:  // 8.3.3.1
      for (int i = first; i < 256; i += step) dst[i] = top[i & 15];
      break;
    case kI16H:  // 8.3.3.2
      for (int i = first; i < 256; i += step) dst[i] = left[i >> 4];
      break;
    case kI16Dc: {  // 8.3.3.3
      int s = 0, dc = 128;
      if (e.has_top && e.has_left) {
        for (int i = 0; i < 16; i++) s += top[i] + left[i];
        dc = (s + 16) >> 5;
      } else if (e.has_left) {
        for (int i = 0; i < 16; i++) s += left[i];
        dc = (s + 8) >> 4;
      } else if (e.has_top) {
        for (int i = 0; i < 16; i++) s += top[i];
        dc = (s + 8) >> 4;
      }
      for (int i = first; i < 256; i += step) dst[i] = uint8_t(dc);
      break;
    }
    default: {  // 8.3.3.4 Intra_16x16_Plane; p[-1, -1] is top[-1] == left[-1]
      auto pt = [&](int i) { return i < 0 ? int(top[-1]) : int(top[i]); };
      auto pl = [&](int i) { return i < 0 ? int(top[-1]) : int(left[i]); };
      int H = 0, V = 0;
      for (int i = 0; i < 8; i++) {
        H += (i + 1) * (pt(8 + i) - pt(6 - i));
        V += (i + 1) * (pl(8 + i) - pl(6 - i));
      }
      int a = 16 * (left[15] + top[15]);
      int b = (5 * H + 32) >> 6, c = (5 * V + 32) >> 6;
      for (int i = first; i < 256; i += step) dst[i] = clip1((a + b * ((i & 15) - 7) + c * ((i >> 4) - 7) + 16) >> 5);
    }
  }
}
// Sample (x, y) of the Intra_4x4 prediction (one GPU thread's share of a block).
GVC_HD int predict_4x4_at(int mode, const IntraEdge& e, int x, int y) {
  // P(x, y) is p[x, y] of 8.3.1.2 for x == -1 or y == -1.
  const uint8_t* top = e.top();
  auto P = [&](int x, int y) -> int { return y < 0 ? top[x] : (x < 0 ? e.left[y] : 0); };
  int v = 128;
  switch (mode) {
    case kI4V: v = P(x, -1); break;
    case kI4H: v = P(-1, y); break;
    case kI4Dc: {
      int st = P(0, -1) + P(1, -1) + P(2, -1) + P(3, -1);
      int sl = P(-1, 0) + P(-1, 1) + P(-1, 2) + P(-1, 3);
      if (e.has_top && e.has_left) v = (st + sl + 4) >> 3;
      else if (e.has_left) v = (sl + 2) >> 2;
      else if (e.has_top) v = (st + 2) >> 2;
      break;
    }
    case kI4DiagDownLeft:
      if (x == 3 && y == 3) v = (P(6, -1) + 3 * P(7, -1) + 2) >> 2;
      else v = (P(x + y, -1) + 2 * P(x + y + 1, -1) + P(x + y + 2, -1) + 2) >> 2;
      break;
    case kI4DiagDownRight:
      if (x > y) v = (P(x - y - 2, -1) + 2 * P(x - y - 1, -1) + P(x - y, -1) + 2) >> 2;
      else if (x < y) v = (P(-1, y - x - 2) + 2 * P(-1, y - x - 1) + P(-1, y - x) + 2) >> 2;
      else v = (P(0, -1) + 2 * P(-1, -1) + P(-1, 0) + 2) >> 2;
      break;
    case kI4VertRight: {
      int z = 2 * x - y;
      if (z >= 0 && (z & 1) == 0) v = (P(x - (y >> 1) - 1, -1) + P(x - (y >> 1), -1) + 1) >> 1;
      else if (z >= 0) v = (P(x - (y >> 1) - 2, -1) + 2 * P(x - (y >> 1) - 1, -1) + P(x - (y >> 1), -1) + 2) >> 2;
      else if (z == -1) v = (P(-1, 0) + 2 * P(-1, -1) + P(0, -1) + 2) >> 2;
      else v = (P(-1, y - 1) + 2 * P(-1, y - 2) + P(-1, y - 3) + 2) >> 2;
      break;
    }
    case kI4HorDown: {
      int z = 2 * y - x;
      if (z >= 0 && (z & 1) == 0) v = (P(-1, y - (x >> 1) - 1) + P(-1, y - (x >> 1)) + 1) >> 1;
      else if (z >= 0) v = (P(-1, y - (x >> 1) - 2) + 2 * P(-1, y - (x >> 1) - 1) + P(-1, y - (x >> 1)) + 2) >> 2;
      else if (z == -1) v = (P(-1, 0) + 2 * P(-1, -1) + P(0, -1) + 2) >> 2;
      else v = (P(x - 1, -1) + 2 * P(x - 2, -1) + P(x - 3, -1) + 2) >> 2;
      break;
    }
    case kI4VertLeft:
      if ((y & 1) == 0) v = (P(x + (y >> 1), -1) + P(x + (y >> 1) + 1, -1) + 1) >> 1;
      else v = (P(x + (y >> 1), -1) + 2 * P(x + (y >> 1) + 1, -1) + P(x + (y >> 1) + 2, -1) + 2) >> 2;
      break;
    default: {  // kI4HorUp
      int z = x + 2 * y;
      if (z > 5) v = P(-1, 3);
      else if (z == 5) v = (P(-1, 2) + 3 * P(-1, 3) + 2) >> 2;
      else if ((z & 1) == 0) v = (P(-1, y + (x >> 1)) + P(-1, y + (x >> 1) + 1) + 1) >> 1;
      else v = (P(-1, y + (x >> 1)) + 2 * P(-1, y + (x >> 1) + 1) + P(-1, y + (x >> 1) + 2) + 2) >> 2;
    }
  }
  return v;
}
GVC_HD void predict_4x4(int mode, const IntraEdge& e, uint8_t* dst) {
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++) dst[4 * y + x] = uint8_t(predict_4x4_at(mode, e, x, y));
}
GVC_HD void predict_chroma8x8(int mode, const IntraEdge& e, uint8_t* dst, int first = 0, int step = 1) {
  const uint8_t* top = e.top();
  const uint8_t* left = e.left;
  switch (mode) {
    case kChromaDc: {  // 8.3.4.1-3, one DC per 4x4 chroma block
      int dcs[4];  // raster order of the blocks
      for (int by = 0; by < 2; by++) {
        for (int bx = 0; bx < 2; bx++) {
          int st = 0, sl = 0;
          for (int i = 0; i < 4; i++) {
            st += top[4 * bx + i];
            sl += left[4 * by + i];
          }
          int dc = 128;
          if ((bx == 0 && by == 0) || (bx > 0 && by > 0)) {
            if (e.has_top && e.has_left) dc = (st + sl + 4) >> 3;
            else if (e.has_left) dc = (sl + 2) >> 2;
            else if (e.has_top) dc = (st + 2) >> 2;
          } else if (bx > 0) {  // top-right block prefers the row above
            if (e.has_top) dc = (st + 2) >> 2;
            else if (e.has_left) dc = (sl + 2) >> 2;
          } else {  // bottom-left block prefers the column to the left
            if (e.has_left) dc = (sl + 2) >> 2;
            else if (e.has_top) dc = (st + 2) >> 2;
          }
          dcs[2 * by + bx] = dc;
        }
      }
      for (int i = first; i < 64; i += step) dst[i] = uint8_t(dcs[2 * (i >> 5) + ((i & 7) >> 2)]);
      break;
    }
    case kChromaH:
      for (int i = first; i < 64; i += step) dst[i] = left[i >> 3];
      break;
    case kChromaV:
      for (int i = first; i < 64; i += step) dst[i] = top[i & 7];
      break;
    default: {  // 8.3.4.4 with xCF = yCF = 0 (4:2:0)
      auto pt = [&](int i) { return i < 0 ? int(top[-1]) : int(top[i]); };
      auto pl = [&](int i) { return i < 0 ? int(top[-1]) : int(left[i]); };
      int H = 0, V = 0;
      for (int i = 0; i < 4; i++) {
        H += (i + 1) * (pt(4 + i) - pt(2 - i));
        V += (i + 1) * (pl(4 + i) - pl(2 - i));
      }
      int a = 16 * (left[7] + top[7]);
      int b = (34 * H + 32) >> 6, c = (34 * V + 32) >> 6;
      for (int i = first; i < 64; i += step) dst[i] = clip1((a + b * ((i & 7) - 3) + c * ((i >> 3) - 3) + 16) >> 5);
    }
  }
}

}  // namespace gvc::h264
