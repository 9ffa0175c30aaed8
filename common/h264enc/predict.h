// predict.h: intra prediction of 16x16 luma, 4x4 luma and 8x8 chroma blocks (8.3)
#pragma once

#include <cstdint>

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
  uint8_t* top() { return top_buf + 1; }
  const uint8_t* top() const { return top_buf + 1; }
};

// Gathers the edge of the n x n block at (x, y) of `plane`; availability as given. For
// Intra_4x4 (n == 4) the above-right samples are p[3, -1] repeated when not available (8.3.1.2).
void load_edge(const uint8_t* plane, int stride, int x, int y, int n, bool has_top,
               bool has_left, bool has_top_left, bool has_top_right, IntraEdge& e);

// Whether a mode may be used with the available neighbours.
bool i16_mode_available(int mode, const IntraEdge& e);
bool i4_mode_available(int mode, const IntraEdge& e);
bool chroma_mode_available(int mode, const IntraEdge& e);

// Predictions into `dst` (stride 16, 4 or 8 as the block width).
void predict_16x16(int mode, const IntraEdge& e, uint8_t dst[256]);
void predict_4x4(int mode, const IntraEdge& e, uint8_t dst[16]);
void predict_chroma8x8(int mode, const IntraEdge& e, uint8_t dst[64]);

}  // namespace gvc::h264
