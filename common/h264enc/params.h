// params.h: parameters of the H.264 encoder engine, grouped as x264 groups them
#pragma once

#include <cstdint>
#include <string>

#include "common/dsp/intra_prune.h"

namespace gvc::h264 {

struct EncoderParams {
  int width = 0;   // luma samples, even, 16..4096 (cropped from whole macroblocks in the SPS)
  int height = 0;  // luma samples, even, 16..4096

  struct {
    int qp = 26;                    // constant QP of every slice (0..51)
    int chroma_qp_index_offset = 0; // -12..12
  } rc;

  struct {
    bool intra4x4 = true;   // try Intra_4x4 besides Intra_16x16
    bool inter = true;      // P frames; false: every frame is an IDR
    int search_range = 16;  // ME core full search, positions -range..range-1 (8..64)
    bool subpel = true;     // the ME core's quarter-pel refinement of the partitions tried
    bool part16x8 = true;   // try P_L0_L0_16x8 and P_L0_L0_8x16 besides P_L0_16x16
    bool part8x8 = true;    // try P_8x8 (sub_mb_type 8x8)
    bool sub8x8 = true;     // with part8x8: also sub_mb_type 8x4, 4x8 and 4x4
    bool refine = true;     // re-refine 16x16..8x8 vectors in quarter-pel steps (at most 2), true mvp
    bool preselect = true;  // seed 002: re-cost only the shape the ME core's costs prefer (analyse_inter.h)
    // intra modes tried: None every mode; Kirsch (seed 003) or Sobel (Pan) edge candidates only
    IntraPruneMethod intra_prune = IntraPruneMethod::None;
  } analyse;

  int ref_frames = 1;    // reference frames (1..4): max_num_ref_frames, sliding window

  struct {
    bool enabled = true;  // in-loop deblocking filter (disable_deblocking_filter_idc 0 or 1)
    int alpha_c0_offset_div2 = 0;  // slice_alpha_c0_offset_div2, -6..6
    int beta_offset_div2 = 0;      // slice_beta_offset_div2, -6..6
  } deblock;

  int slices = 1;        // slices per picture (1..number of macroblocks), equal macroblock counts
  int keyint_max = 250;  // an IDR at least every keyint_max frames
  int level_idc = 0;     // 0: the smallest level whose frame size and MB rate fit at fps
  double fps = 30.0;     // frame rate, for the level only (the stream carries no timing)
  bool constrained = true;  // constraint_set1_flag: Constrained Baseline, else Baseline
  bool aud = false;      // an access unit delimiter NAL unit opens every access unit
};

// cudah264enc's speed-preset: the analysis of each (apply_speed_preset).
enum class SpeedPreset { Fast, Medium, Slow };

// The preset called `name` ("fast", "medium" or "slow", as the property's nicks) into *out;
// false for any other name.
inline bool parse_speed_preset(const char* name, SpeedPreset* out) {
  const std::string n = name ? name : "";
  if (n != "fast" && n != "medium" && n != "slow") return false;
  *out = n == "fast" ? SpeedPreset::Fast : n == "medium" ? SpeedPreset::Medium : SpeedPreset::Slow;
  return true;
}

// Sets p.analyse's search range, shapes and refinement for `preset`.
inline void apply_speed_preset(SpeedPreset preset, EncoderParams& p) {
  switch (preset) {
    case SpeedPreset::Fast:
      // 16x16, 16x8 and 8x16: without the two rectangles, BD-rate was 5 points worse
      // (docs/quality.md); P_8x8 and the re-refinement cost the decision's wavefront most.
      p.analyse.search_range = 8;
      p.analyse.part8x8 = false;
      p.analyse.sub8x8 = false;
      p.analyse.refine = false;
      break;
    case SpeedPreset::Medium:
      // Every partition down to 4x4, the one shape the ME core's costs prefer re-costed.
      // Leaving out the sub-macroblock shapes made P frames 0.4 ms slower on the GPU (the
      // 8x8 quadrants are then all refined) and cost BD-rate (docs/quality.md).
      p.analyse.search_range = 16;
      break;
    case SpeedPreset::Slow:
      p.analyse.search_range = 32;
      // Every macroblock shape re-costed, not only the one the ME core's costs prefer.
      p.analyse.preselect = false;
      break;
  }
}

}  // namespace gvc::h264
