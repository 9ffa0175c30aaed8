// mv_field.h: motion vectors with their costs, per H.264 partition and per block of a fixed size
#pragma once

#include <cstdint>

#include "common/dsp/plane.h"

namespace gvc {

// One vector and its cost. Vectors are in quarter-pel units and point from the current block
// into the reference picture. The layout (8 bytes) is the one the motion-vector meta stores.
struct MvCost {
  int16_t mvx;
  int16_t mvy;
  uint32_t cost;
};
static_assert(sizeof(MvCost) == 8, "MvCost is a fixed 8-byte record");

// The 41 partitions of an H.264 macroblock, in this order:
//   0        16x16
//   1..2     16x8   (top, bottom)
//   3..4     8x16   (left, right)
//   5..8     8x8    (raster order)
//   9..16    8x4    (two per 8x8, 8x8 index major: 9,10 in 8x8 #0, ...)
//   17..24   4x8    (two per 8x8, left then right)
//   25..40   4x4    (four per 8x8, raster order inside each 8x8)
enum : int {
  kPart16x16 = 0,
  kPart16x8 = 1,
  kPart8x16 = 3,
  kPart8x8 = 5,
  kPart8x4 = 9,
  kPart4x8 = 17,
  kPart4x4 = 25,
  kNumPartitions = 41,
};

struct PartitionGeometry {
  uint8_t x, y, w, h;  // offset and size inside the macroblock, in luma samples
};

// Geometry of partition `i` (0..40) as listed above.
PartitionGeometry partition_geometry(int i);

// The best vector of every partition of one macroblock.
struct MbPartitions {
  MvCost part[kNumPartitions];
};

// Per-macroblock partition results for a whole frame, raster order.
struct MbPartitionField {
  MbPartitions* data = nullptr;
  int mb_cols = 0;
  int mb_rows = 0;
  MemoryLocation loc = MemoryLocation::Host;
};

// A field of one vector per block of a fixed size, row-major (the meta's layout).
struct MvBlockField {
  MvCost* data = nullptr;
  int block_w = 16;
  int block_h = 16;
  int cols = 0;
  int rows = 0;
  MemoryLocation loc = MemoryLocation::Host;
};

}  // namespace gvc
