// synth_stream.h: a test-only HEVC writer for syntax x265 cannot produce: tiles, dependent slice segments, PCM
#pragma once

#include <cstdint>
#include <vector>

namespace gvc::test {

// One frame of the source clip, 8-bit 4:2:0 at the picture size.
struct SynthSource {
  int width = 0, height = 0;
  std::vector<uint8_t> plane[3];  // Y, Cb, Cr, tightly packed
};

// What to write. Pictures are intra (IDR, then TRAIL_R I pictures) or P pictures referring to
// the previous picture; every coding unit is PCM (the source samples), intra prediction with no
// residual or a DC one, or in P pictures skipped or AMVP-coded without residual. Choices are
// pseudo-random from `seed`, so a stream is the same on every run.
struct SynthParams {
  int width = 176, height = 144;  // multiples of 8 (MinCbSizeY)
  int bit_depth = 8;              // of the pictures (luma and chroma); 8 or 10
  int log2_ctb_size = 4;          // 4, 5 or 6
  int init_qp = 32;

  struct Tiles {
    bool enabled = false;
    int columns = 1, rows = 1;
    bool uniform = true;
    std::vector<int> column_widths, row_heights;  // explicit spacing, in CTBs, all but the last
    bool loop_filter_across = true;               // loop_filter_across_tiles_enabled_flag
  } tiles;
  bool wpp = false;  // entropy_coding_sync_enabled_flag

  // Slice segments of every picture, by the tile scan address of their first CTB (6.5.1); the
  // first starts at 0 and is independent. qp_delta is slice_qp_delta of independent segments.
  struct Segment {
    int first_ctb_ts = 0;
    bool dependent = false;
    int qp_delta = 0;
  };
  std::vector<Segment> segments = {{0, false, 0}};
  bool dependent_slices_enabled = false;  // dependent_slice_segments_enabled_flag
  // pps_loop_filter_across_slices_enabled_flag, and slice_loop_filter_across_slices_enabled_flag
  // of every slice (one value: FFmpeg 5.1 decides SAO across a slice boundary with the flag of
  // the CTB being filtered, where 8.7.3 takes the later slice's)
  bool loop_filter_across_slices = true;

  struct Pcm {
    bool enabled = false;
    int bit_depth_luma = 8, bit_depth_chroma = 8;
    int log2_min_size = 3, log2_max_size = 5;  // Log2MinIpcmCbSizeY, Log2MaxIpcmCbSizeY
    bool loop_filter_disabled = false;         // pcm_loop_filter_disabled_flag
    int percent = 40;                          // coding units of a PCM size coded as PCM
  } pcm;

  // Intra 2Nx2N coding units of at most 32x32 with a luma residual: one DC coefficient.
  int residual_percent = 30;
  struct CuQpDelta {
    bool enabled = false;  // cu_qp_delta_enabled_flag; the first residual of a group codes one
    int diff_depth = 1;    // diff_cu_qp_delta_depth
  } cu_qp_delta;

  bool sao = true;            // sample_adaptive_offset_enabled_flag (slices switch it randomly)
  int beta_offset_div2 = 0, tc_offset_div2 = 0;  // PPS; pictures override them at random
  int p_pictures = 0;         // the last p_pictures pictures are P pictures
  uint32_t seed = 1;
};

// What the writer produced, so a test can check the stream exercises its feature.
struct SynthStats {
  int pcm_cus[6] = {0, 0, 0, 0, 0, 0};  // by log2 size
  int intra_cus[7] = {0, 0, 0, 0, 0, 0, 0};  // by log2 size, PCM not counted
  int intra_nxn_cus = 0;
  int skip_cus = 0, amvp_cus = 0;
  int residual_tus = 0, qp_deltas = 0;  // qp_deltas: cu_qp_delta_abs other than 0
  int sao_ctbs = 0, sao_merges = 0;
  int slice_segments = 0, dependent_segments = 0;
  int entry_points = 0;               // entry_point_offset_minus1 elements written
  int wpp_syncs = 0;                  // substreams started from TableStateIdxWpp
  int dependent_carries = 0;          // segments started from TableStateIdxDs
};

// Annex B stream of `frames.size()` pictures (VPS, SPS, PPS once, then the slices).
std::vector<uint8_t> synth_write_stream(const SynthParams& p, const std::vector<SynthSource>& frames,
                                        SynthStats* stats);

}  // namespace gvc::test
