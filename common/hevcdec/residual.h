// residual.h: residual_coding() syntax (7.3.8.11) into a raster block of TransCoeffLevel values
#pragma once

#include <cstdint>

#include "common/hevcdec/syntax.h"

namespace gvc::hevc {

struct ResidualParams {
  int log2_trafo_size = 2;
  int c_idx = 0;
  int scan_idx = 0;  // 7.4.9.11: 0 diagonal, 1 horizontal, 2 vertical
  bool transquant_bypass = false;
  bool transform_skip_enabled = false;  // pps transform_skip_enabled_flag
  bool sign_data_hiding = false;        // pps sign_data_hiding_enabled_flag
};

// Parses one residual_coding() into the (1 << log2)^2 levels at `coeffs` (x fastest), which
// must be zero on entry: only the nonzero levels are written. Returns which 4x4 sub-blocks hold
// them: bit (yS << (log2 - 2)) + xS for the sub-block at (xS, yS) in units of 4 samples; the
// others are still all zero.
uint64_t residual_coding(SyntaxReader& rd, const ResidualParams& p, int16_t* coeffs,
                         bool* transform_skip_flag);

}  // namespace gvc::hevc
