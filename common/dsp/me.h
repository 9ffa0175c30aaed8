// me.h: full-search block motion estimation over all 41 H.264 partitions (interface)
//
// Search positions: for a search range R, every integer vector (dx, dy) with
// -R <= dx <= R-1 and -R <= dy <= R-1 relative to the co-located macroblock, i.e. 2R x 2R
// positions (R = 16: 32 x 32 = 1024 positions, a 48 x 48 window, as in seed 000). Reads
// outside the reference are clamped to the nearest edge sample, so no position is skipped
// at frame borders. A current frame whose size is not a multiple of 16 is edge-extended the
// same way to whole macroblocks.
//
// Cost of a vector v (quarter-pel) for a partition: SAD + lambda * bits(v - p), where p is
// the macroblock's predictor and bits() the length of the two se(v) Exp-Golomb codes of the
// difference. Ties break by: lowest cost, then shortest vector (smallest vx^2 + vy^2 in
// quarter-pel), then raster order (smallest vy, then smallest vx).
//
// Sub-pel refinement (subpel = Half or Quarter), for each partition independently: the 8
// half-pel neighbours of the best integer vector are tested, then (Quarter) the 8 quarter-pel
// neighbours of the best half-pel vector, with the same cost and tie-break. Fractional
// samples are H.264 luma samples (8.4.2.2.1: 6-tap half-pel, rounded averages for
// quarter-pel) of the edge-extended reference.
#pragma once

#include <cstdint>
#include <memory>

#include "common/dsp/plane.h"
#include "common/mv/mv_field.h"
#include "common/util/status.h"

namespace gvc {

enum class Subpel { None = 0, Half = 1, Quarter = 2 };

// Which block field `select_blocks` produces.
enum class BlockSize {
  B16x16,  // partition 0 of each macroblock
  B8x8,    // partitions 5..8
  B4x4,    // partitions 25..40
  Auto,    // per macroblock the partitioning of least total cost, written as a 4x4 field
};

constexpr int kMinSearchRange = 8;
constexpr int kMaxSearchRange = 64;

struct MeParams {
  int range = 16;                  // positions -range..range-1 in x and y (8..64)
  uint32_t lambda = 0;             // weight of the vector bits in the cost (0..65535)
  Subpel subpel = Subpel::Quarter;
  // The sub-pel refinement refines partitions [0, refined_partitions) only (mv_field.h's
  // order: 1 is 16x16 alone, 5 adds 16x8 and 8x16, 9 the 8x8s); the others keep the integer
  // search's vector and cost. An encoder whose decision reads only the larger shapes saves
  // the rest (the 8x8 and smaller shapes are 64 of the 112 4x4 blocks refined).
  int refined_partitions = kNumPartitions;
  // One predictor per macroblock (raster, quarter-pel), or nullptr for (0,0); in host memory,
  // or (predictors_loc Device) in the device memory of a backend that takes it there.
  const MvCost* predictors = nullptr;
  MemoryLocation predictors_loc = MemoryLocation::Host;
  // With `out` in device memory: return once the search is queued rather than done. Only
  // what waits for it sees the results: the backend's select_blocks(), copy() and
  // synchronize(), and the decision of its H.264 reconstructor (whose stream it orders behind
  // the search); a failure on the device shows in their status. `predictors` must stay as
  // they are until then. Backends without a stream ignore it.
  bool queue_only = false;
};

// Number of bits of se(v) for value v: the Exp-Golomb length of its code number.
inline int se_bits(int v) {
  unsigned code = v > 0 ? 2u * unsigned(v) - 1u : 2u * unsigned(-v);
  int len = 0;
  for (unsigned c = code + 1; c > 1; c >>= 1) len++;
  return 2 * len + 1;
}

inline uint32_t mv_cost_bits(int mvx, int mvy, int px, int py) {
  return uint32_t(se_bits(mvx - px) + se_bits(mvy - py));
}

// Number of macroblocks needed to cover `size` samples.
inline int mb_count(int size) { return (size + 15) / 16; }

class MotionSearch {
 public:
  virtual ~MotionSearch() = default;

  // Searches `cur` against `ref` (same size) and writes one MbPartitions per macroblock.
  // `out` must be mb_count(width) x mb_count(height). Host views always work; a backend
  // may also accept device views.
  virtual Status run(const PlaneView& cur, const PlaneView& ref, const MeParams& params,
                     MbPartitionField& out) = 0;

  // Turns partition results into a block field: `out` must be sized by block_field_dims().
  // For Auto, each macroblock takes whichever of 16x16, 16x8, 8x16 and 8x8 (each 8x8 taking
  // the cheapest of 8x8, 8x4, 4x8, 4x4) has the least summed cost; on equal cost the larger
  // partitions, in that listed order, win. Each 4x4 block gets its partition's vector and cost.
  virtual Status select_blocks(const MbPartitionField& parts, BlockSize size,
                               MvBlockField& out) = 0;
};

// Block width/height and field columns/rows for a frame of mb_cols x mb_rows macroblocks.
void block_field_dims(BlockSize size, int mb_cols, int mb_rows, int* block_w, int* block_h,
                      int* cols, int* rows);

// The CPU reference (common/dsp/me.cpp): the oracle for every other implementation.
std::unique_ptr<MotionSearch> make_cpu_motion_search();

// The H.264 luma sample at quarter-pel position (4*x + fx, 4*y + fy) of the edge-extended
// plane `ref` (8.4.2.2.1), fx, fy in 0..3.
uint8_t luma_qpel_sample(const PlaneView& ref, int x, int y, int fx, int fy);

}  // namespace gvc
