// synth_test.cpp: tiles, dependent slice segments and PCM (streams from synth_stream.h) decode as FFmpeg and libde265 decode them
#include <gtest/gtest.h>

#include <gst/codecparsers/gsth265parser.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common/hevcdec/decoder.h"
#include "tests/hevc/our_frames.h"
#include "tests/hevc/stream_oracle.h"
#include "tests/hevc/synth_stream.h"

namespace {

using gvc::test::SynthParams;
using gvc::test::decode_ours;
using gvc::test::first_diff;
using gvc::test::frame_bytes;
using gvc::test::Frames;

// The clip's first frames scaled to kSourceWidth x kSourceHeight, 8-bit 4:2:0, read once from
// ffmpeg's rawvideo output; every case codes the upper left part it needs.
constexpr int kSourceWidth = 832, kSourceHeight = 256, kSourceFrames = 3;

const std::vector<gvc::test::SynthSource>& clip_frames(std::string& err) {
  static std::vector<gvc::test::SynthSource> frames;
  static std::string read_err;
  if (frames.empty() && read_err.empty()) {
    std::ostringstream cmd;
    cmd << "'" << gvc::test::hevc_find_ffmpeg() << "' -nostdin -loglevel error -i '" << gvc::test::hevc_find_clip()
        << "' -frames:v " << kSourceFrames << " -vf scale=" << kSourceWidth << ":" << kSourceHeight
        << ":flags=bicubic,format=yuv420p -f rawvideo -";
    if (FILE* f = popen(cmd.str().c_str(), "r")) {
      for (int i = 0; i < kSourceFrames; ++i) {
        gvc::test::SynthSource s;
        s.width = kSourceWidth;
        s.height = kSourceHeight;
        bool ok = true;
        for (int c = 0; c < 3 && ok; ++c) {
          const size_t n = c ? size_t(kSourceWidth / 2) * (kSourceHeight / 2) : size_t(kSourceWidth) * kSourceHeight;
          s.plane[c].resize(n);
          ok = fread(s.plane[c].data(), 1, n, f) == n;
        }
        if (!ok) break;
        frames.push_back(std::move(s));
      }
      pclose(f);
    }
    if (int(frames.size()) != kSourceFrames) {
      read_err = "ffmpeg gave " + std::to_string(frames.size()) + " frames of the clip";
      frames.clear();
    }
  }
  err = read_err;
  return frames;
}

// The upper left w x h of a source frame.
gvc::test::SynthSource crop(const gvc::test::SynthSource& s, int w, int h) {
  gvc::test::SynthSource out;
  out.width = w;
  out.height = h;
  for (int c = 0; c < 3; ++c) {
    const int pw = c ? w / 2 : w, ph = c ? h / 2 : h, stride = c ? s.width / 2 : s.width;
    for (int y = 0; y < ph; ++y)
      out.plane[c].insert(out.plane[c].end(), s.plane[c].begin() + long(y) * stride,
                          s.plane[c].begin() + long(y) * stride + pw);
  }
  return out;
}

// What the parameter sets and slice headers of a stream say (GstH265Parser), to prove that a
// stream has the feature its case is named after.
struct Parsed {
  int tiles_pps = 0, columns = 0, rows = 0, uniform = -1, lf_across_tiles = -1;
  int wpp_pps = 0, dependent_enabled_pps = 0, cu_qp_delta_pps = 0;
  int pcm_sps = 0, pcm_bd_y = 0, pcm_bd_c = 0, pcm_lf_disabled = -1, pcm_log2_min = 0, pcm_log2_max = 0;
  int bit_depth = 0;
  int segments = 0, dependent_segments = 0, entry_points = 0, p_slices = 0;
  bool ok = true;
};

Parsed parse(const std::vector<uint8_t>& stream) {
  Parsed r;
  GstH265Parser* parser = gst_h265_parser_new();
  GstH265NalUnit nalu;
  guint offset = 0;
  while (offset < stream.size()) {
    const GstH265ParserResult res = gst_h265_parser_identify_nalu(parser, stream.data(), offset, stream.size(), &nalu);
    if (res != GST_H265_PARSER_OK && res != GST_H265_PARSER_NO_NAL_END) break;
    offset = nalu.offset + nalu.size;
    if (nalu.type == GST_H265_NAL_VPS) {
      GstH265VPS vps;
      r.ok &= gst_h265_parser_parse_vps(parser, &nalu, &vps) == GST_H265_PARSER_OK;
    } else if (nalu.type == GST_H265_NAL_SPS) {
      GstH265SPS sps;
      r.ok &= gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE) == GST_H265_PARSER_OK;
      r.bit_depth = sps.bit_depth_luma_minus8 + 8;
      if (sps.pcm_enabled_flag) {
        ++r.pcm_sps;
        r.pcm_bd_y = sps.pcm_sample_bit_depth_luma_minus1 + 1;
        r.pcm_bd_c = sps.pcm_sample_bit_depth_chroma_minus1 + 1;
        r.pcm_lf_disabled = sps.pcm_loop_filter_disabled_flag;
        r.pcm_log2_min = sps.log2_min_pcm_luma_coding_block_size_minus3 + 3;
        r.pcm_log2_max = r.pcm_log2_min + sps.log2_diff_max_min_pcm_luma_coding_block_size;
      }
    } else if (nalu.type == GST_H265_NAL_PPS) {
      GstH265PPS pps;
      r.ok &= gst_h265_parser_parse_pps(parser, &nalu, &pps) == GST_H265_PARSER_OK;
      if (pps.tiles_enabled_flag) {
        ++r.tiles_pps;
        r.columns = pps.num_tile_columns_minus1 + 1;
        r.rows = pps.num_tile_rows_minus1 + 1;
        r.uniform = pps.uniform_spacing_flag;
        r.lf_across_tiles = pps.loop_filter_across_tiles_enabled_flag;
      }
      r.wpp_pps += pps.entropy_coding_sync_enabled_flag;
      r.dependent_enabled_pps += pps.dependent_slice_segments_enabled_flag;
      r.cu_qp_delta_pps += pps.cu_qp_delta_enabled_flag;
    } else if (nalu.type <= GST_H265_NAL_SLICE_CRA_NUT) {
      GstH265SliceHdr sh;
      if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) {
        r.ok = false;
        continue;
      }
      ++r.segments;
      r.dependent_segments += sh.dependent_slice_segment_flag;
      r.entry_points += int(sh.num_entry_point_offsets);
      r.p_slices += !sh.dependent_slice_segment_flag && sh.type == GST_H265_P_SLICE;
      gst_h265_slice_hdr_free(&sh);
    }
  }
  gst_h265_parser_free(parser);
  return r;
}

struct SynthCase {
  const char* name;
  int frames;
  SynthParams (*params)();
  // What the stream must contain, comma separated: TILES<c>x<r>, UNIFORM, EXPLICIT, NOLFT (no
  // loop filter across tiles), WPP, DEP (dependent slice segments, one at least continuing the
  // previous segment's contexts), DEPROW (dependent segments), PCM<y>/<c> (PCM sample bit
  // depths), PCMNOLF (pcm_loop_filter_disabled_flag 1), P (P slices), SLICES<n> (n slice
  // segments per picture), QPD (cu_qp_delta_abs coded, not all 0).
  const char* expect;
  int ffmpeg_planes = 3, dec265_planes = 3;  // planes compared with each oracle (kCases)
};

void PrintTo(const SynthCase& c, std::ostream* os) { *os << c.name; }

// Uniform 2x2 tiles over 16x5 CTBs of 32 (rows of 2 and 3 CTBs, the last one partial);
// columns of 256 luma samples and rows of at least 64, the Main profile's smallest tiles.
SynthParams tiles_uniform_2x2() {
  SynthParams p;
  p.width = 512;
  p.height = 144;
  p.log2_ctb_size = 5;
  p.tiles.enabled = true;
  p.tiles.columns = p.tiles.rows = 2;
  p.pcm.enabled = true;
  p.seed = 11;
  return p;
}

// Explicit spacing: 3 columns of 8, 10 and 8 CTBs, 2 rows of 2 and 4 CTBs; no loop filtering
// across tile boundaries; P pictures after the first.
SynthParams tiles_explicit_3x2_no_lf() {
  SynthParams p;
  p.width = 832;
  p.height = 192;
  p.log2_ctb_size = 5;
  p.init_qp = 35;
  p.tiles.enabled = true;
  p.tiles.columns = 3;
  p.tiles.rows = 2;
  p.tiles.uniform = false;
  p.tiles.column_widths = {8, 10};
  p.tiles.row_heights = {2};
  p.tiles.loop_filter_across = false;
  p.pcm.enabled = true;
  p.p_pictures = 2;
  p.seed = 22;
  return p;
}

// 2x2 tiles of 8x3 CTBs and slices: one slice of the two upper tiles (its dependent segment
// starts the second tile: contexts and qPY_PREV start anew), two slices inside the third tile,
// the fourth tile one slice of an independent and a dependent segment.
SynthParams tiles_and_slices() {
  SynthParams p;
  p.width = 512;
  p.height = 192;
  p.log2_ctb_size = 5;
  p.tiles.enabled = true;
  p.tiles.columns = p.tiles.rows = 2;
  p.dependent_slices_enabled = true;
  p.segments = {{0, false, -3}, {24, true, 0}, {48, false, 4}, {58, false, 8}, {72, false, 1}, {78, true, 0}};
  p.cu_qp_delta.enabled = true;
  p.pcm.enabled = true;
  p.p_pictures = 1;
  p.seed = 33;
  return p;
}

// Dependent slice segments without WPP or tiles (13 CTBs a row), starting mid-row and at row
// starts; no loop filtering across slices.
SynthParams dependent_slices() {
  SynthParams p;
  p.width = 416;
  p.height = 240;
  p.log2_ctb_size = 5;
  p.dependent_slices_enabled = true;
  p.segments = {{0, false, 2}, {20, true, 0}, {39, true, 0}, {50, false, 9}, {65, true, 0}, {80, true, 0}};
  p.loop_filter_across_slices = false;
  p.cu_qp_delta.enabled = true;
  p.pcm.enabled = true;
  p.p_pictures = 1;
  p.seed = 44;
  return p;
}

// Dependent slice segments with WPP (13 CTBs a row): a segment or slice starting mid-row ends in
// its row (7.4.7.1); segments starting at a row start synchronise with the CTB above right,
// which is in their slice; one starts at the second CTB of a row, whose contexts it stores for
// the next row.
SynthParams dependent_slices_wpp() {
  SynthParams p;
  p.width = 416;
  p.height = 240;
  p.log2_ctb_size = 5;
  p.wpp = true;
  p.dependent_slices_enabled = true;
  p.segments = {{0, false, 0}, {26, true, 0},  {27, true, 0},   {39, true, 0}, {65, false, 6},
                {70, true, 0}, {78, true, 0}, {91, false, -4}, {96, false, 3}};
  p.cu_qp_delta.enabled = true;
  p.cu_qp_delta.diff_depth = 0;
  p.pcm.enabled = true;
  p.p_pictures = 1;
  p.seed = 55;
  return p;
}

// Dependent slice segments with WPP in CTBs of 16 (26 a row), without SAO (see kCases);
// the rows of one segment and the segment starts at row starts all synchronise.
SynthParams dependent_slices_wpp_ctb16() {
  SynthParams p;
  p.width = 416;
  p.height = 240;
  p.log2_ctb_size = 4;
  p.sao = false;
  p.wpp = true;
  p.dependent_slices_enabled = true;
  p.segments = {{0, false, 0},   {52, true, 0},   {60, true, 0},    {78, true, 0},  {130, false, 6},
                {140, true, 0},  {156, true, 0},  {260, false, -4}, {270, false, 3}, {286, false, 10},
                {312, true, 0}};
  p.cu_qp_delta.enabled = true;
  p.pcm.enabled = true;
  p.pcm.log2_max_size = 4;  // at most the CTB (7.4.3.2.1)
  p.p_pictures = 1;
  p.seed = 56;
  return p;
}

// WPP with independent slices only: the rows of the first and the last slice are parsed on
// threads of their own, the two slices within row 2 on the caller's. A picture's levels then
// come from row records, its own, and row records again (PictureRecon::level_rows and
// flatten_levels keep them in order).
SynthParams wpp_slices() {
  SynthParams p;
  p.width = 416;
  p.height = 240;
  p.log2_ctb_size = 5;
  p.wpp = true;
  p.segments = {{0, false, 0}, {26, false, 4}, {30, false, -3}, {39, false, 2}};
  p.cu_qp_delta.enabled = true;
  p.p_pictures = 1;
  p.seed = 57;
  return p;
}

// CTBs of 64 (64x64 intra coding units split into four transform blocks of 32, MaxTbLog2SizeY
// 5) in 2x2 tiles of 4x2 CTBs, with PCM coding units up to 32x32 inside them.
SynthParams ctb64_tiles() {
  SynthParams p;
  p.width = 512;
  p.height = 256;
  p.log2_ctb_size = 6;
  p.init_qp = 34;
  p.tiles.enabled = true;
  p.tiles.columns = p.tiles.rows = 2;
  p.cu_qp_delta.enabled = true;
  p.cu_qp_delta.diff_depth = 2;
  p.pcm.enabled = true;
  p.pcm.bit_depth_luma = 6;
  p.pcm.bit_depth_chroma = 6;
  p.p_pictures = 1;
  p.seed = 64;
  return p;
}

// A picture one CTB wide with WPP: no CTB above right, so every row starts from initialised
// contexts, dependent segments at row starts too (9.3.1: the WPP rule comes before
// TableStateIdxDs).
SynthParams wpp_one_ctb_wide() {
  SynthParams p;
  p.width = 32;
  p.height = 256;
  p.log2_ctb_size = 5;
  p.wpp = true;
  p.dependent_slices_enabled = true;
  p.cu_qp_delta.enabled = true;
  p.segments = {{0, false, 0}, {2, true, 0}, {3, true, 0}, {5, false, 5}, {6, true, 0}};
  p.pcm.enabled = true;
  p.p_pictures = 1;
  p.seed = 32;
  return p;
}

// PCM coding units of 8x8 to 32x32 with 5-bit luma and 7-bit chroma samples, deblocked and SAO
// filtered like any intra coding unit (pcm_loop_filter_disabled_flag 0).
SynthParams pcm_5_7_loop_filtered() {
  SynthParams p;
  p.width = 176;
  p.height = 144;
  p.log2_ctb_size = 5;
  p.init_qp = 37;
  p.pcm.enabled = true;
  p.pcm.bit_depth_luma = 5;
  p.pcm.bit_depth_chroma = 7;
  p.pcm.log2_min_size = 3;
  p.pcm.log2_max_size = 5;
  p.pcm.percent = 55;
  p.seed = 66;
  return p;
}

// The same with pcm_loop_filter_disabled_flag 1 (PCM samples left as they are by deblocking and
// SAO), 7-bit luma and 5-bit chroma, PCM sizes 16 and 32, one P picture.
SynthParams pcm_7_5_no_loop_filter() {
  SynthParams p = pcm_5_7_loop_filtered();
  p.pcm.bit_depth_luma = 7;
  p.pcm.bit_depth_chroma = 5;
  p.pcm.log2_min_size = 4;
  p.pcm.loop_filter_disabled = true;
  p.p_pictures = 1;
  p.seed = 77;
  return p;
}

// Main 10 pictures with 8-bit PCM samples (shifted up by 2), PCM 8x8 and 16x16.
SynthParams main10_pcm8() {
  SynthParams p;
  p.width = 176;
  p.height = 144;
  p.bit_depth = 10;
  p.log2_ctb_size = 5;
  p.pcm.enabled = true;
  p.pcm.bit_depth_luma = 8;
  p.pcm.bit_depth_chroma = 8;
  p.pcm.log2_min_size = 3;
  p.pcm.log2_max_size = 4;
  p.p_pictures = 1;
  p.seed = 88;
  return p;
}

// Where an oracle is known to be wrong on chroma, only its luma is compared (1 plane); the other
// oracle checks the chroma. Both decode every stream without a complaint.
// - FFmpeg 5.1 with pcm_loop_filter_disabled_flag (or cu_transquant_bypass): restore_tqb_pixels()
//   puts back the unfiltered samples of such chroma blocks only in the upper left quarter of a
//   CTB (it takes the chroma CTB size for a luma extent), so SAO changes the others.
// - libde265 1.0.11 with slice_loop_filter_across_slices_enabled_flag 0: apply_sao() looks up
//   the slice of a chroma sample and of its neighbours at chroma coordinates taken as luma ones,
//   and so leaves edge offsets out inside slices.
// Not worked around by comparing less, but kept out of the streams: FFmpeg 5.1 runs SAO of a
// CTB before the horizontal chroma edges at its right neighbour's bottom are deblocked when
// CTBs are 16x16 (the one case with CTBs of 16 has no SAO), uses the SAO slice flag of the CTB
// being filtered for its neighbours in later slices (one flag per picture here), and filters
// luma edges with the left CTB's deblocking offsets in some rows (one set per picture).
// Tiles and WPP in one picture are left out: FFmpeg 5.1 outputs grey pictures without a word and
// libde265 1.0.11 rejects the slice header (coded parameter out of range), so nothing checks us.
const SynthCase kCases[] = {
    {"tiles_uniform_2x2", 3, tiles_uniform_2x2, "TILES2x2,UNIFORM,PCM8/8,SLICES1"},
    {"tiles_explicit_3x2_no_lf", 3, tiles_explicit_3x2_no_lf, "TILES3x2,EXPLICIT,NOLFT,P"},
    {"tiles_and_slices", 2, tiles_and_slices, "TILES2x2,UNIFORM,DEP,SLICES6,P,QPD"},
    {"ctb64_tiles", 2, ctb64_tiles, "TILES2x2,UNIFORM,PCM6/6,P,QPD"},
    {"dependent_slices", 2, dependent_slices, "DEP,SLICES6,P,QPD", 3, 1},
    {"dependent_slices_wpp", 2, dependent_slices_wpp, "DEP,WPP,SLICES9,P,QPD"},
    {"dependent_slices_wpp_ctb16", 2, dependent_slices_wpp_ctb16, "DEP,WPP,SLICES11,P,QPD"},
    {"wpp_one_ctb_wide", 2, wpp_one_ctb_wide, "DEPROW,WPP,SLICES5,P,QPD"},
    {"wpp_slices", 2, wpp_slices, "WPP,SLICES4,P,QPD"},
    {"pcm_5_7_loop_filtered", 3, pcm_5_7_loop_filtered, "PCM5/7"},
    {"pcm_7_5_no_loop_filter", 3, pcm_7_5_no_loop_filter, "PCM7/5,PCMNOLF,P", 1, 3},
    {"main10_pcm8", 2, main10_pcm8, "PCM8/8,P"},
};

void check_features(const Parsed& f, const gvc::test::SynthStats& st, const SynthCase& c) {
  const SynthParams p = c.params();
  EXPECT_TRUE(f.ok) << "GstH265Parser rejected a NAL unit";
  std::string expect = c.expect, item;
  std::istringstream items(expect);
  while (std::getline(items, item, ',')) {
    int a = 0, b = 0;
    if (sscanf(item.c_str(), "TILES%dx%d", &a, &b) == 2) {
      EXPECT_EQ(f.tiles_pps, 1);
      EXPECT_EQ(f.columns, a);
      EXPECT_EQ(f.rows, b);
      // substreams of segments with several tiles (dec265 warns of incorrect entry points)
      EXPECT_EQ(f.entry_points, st.entry_points);
    } else if (item == "UNIFORM") {
      EXPECT_EQ(f.uniform, 1);
    } else if (item == "EXPLICIT") {
      EXPECT_EQ(f.uniform, 0);
    } else if (item == "NOLFT") {
      EXPECT_EQ(f.lf_across_tiles, 0);
    } else if (item == "WPP") {
      EXPECT_EQ(f.wpp_pps, 1);
      EXPECT_GT(f.entry_points, 0);
      if (p.width > 1 << p.log2_ctb_size) {  // else no CTB has one above right
        EXPECT_GT(st.wpp_syncs, 0);
      }
    } else if (item == "DEP" || item == "DEPROW") {
      EXPECT_EQ(f.dependent_enabled_pps, 1);
      EXPECT_GT(f.dependent_segments, 0);
      if (item == "DEP") {
        EXPECT_GT(st.dependent_carries, 0) << "no dependent segment continues the CABAC state";
      }
    } else if (sscanf(item.c_str(), "PCM%d/%d", &a, &b) == 2) {
      EXPECT_EQ(f.pcm_sps, 1);
      EXPECT_EQ(f.pcm_bd_y, a);
      EXPECT_EQ(f.pcm_bd_c, b);
      for (int s = f.pcm_log2_min; s <= f.pcm_log2_max; ++s) EXPECT_GT(st.pcm_cus[s], 0) << "no PCM CU of log2 size " << s;
      EXPECT_EQ(f.pcm_lf_disabled, expect.find("PCMNOLF") != std::string::npos ? 1 : 0);
    } else if (item == "PCMNOLF") {
      EXPECT_EQ(f.pcm_lf_disabled, 1);
    } else if (item == "P") {
      EXPECT_GT(f.p_slices, 0);
      EXPECT_GT(st.skip_cus, 0);
      EXPECT_GT(st.amvp_cus, 0);
    } else if (item == "QPD") {
      EXPECT_EQ(f.cu_qp_delta_pps, 1);
      EXPECT_GT(st.qp_deltas, 0);
    } else if (sscanf(item.c_str(), "SLICES%d", &a) == 1) {
      EXPECT_EQ(f.segments, a * c.frames);
    }
  }
  EXPECT_EQ(f.bit_depth, p.bit_depth);
  for (int s = 3; s <= p.log2_ctb_size; ++s) EXPECT_GT(st.intra_cus[s], 0) << "no intra CU of log2 size " << s;
  EXPECT_GT(st.intra_nxn_cus, 0);
  EXPECT_GT(st.residual_tus, 0);
  if (p.sao) {
    EXPECT_GT(st.sao_ctbs, 0);
  }
}

// Every frame equal, all planes or (planes 1) luma only.
void expect_same(const Frames& ours, const Frames& theirs, int w, int h, int bit_depth, int planes,
                 const std::string& who) {
  ASSERT_EQ(ours.size(), theirs.size()) << who;
  const size_t luma = size_t(w) * h * (bit_depth > 8 ? 2 : 1);
  for (size_t i = 0; i < theirs.size(); ++i) {
    const bool same = ours[i].size() == theirs[i].size() &&
                      (planes == 3 ? ours[i] == theirs[i]
                                   : std::equal(ours[i].begin(), ours[i].begin() + long(luma), theirs[i].begin()));
    EXPECT_TRUE(same) << who << ", frame " << i << ": " << first_diff(ours[i], theirs[i], w, h, bit_depth > 8 ? 2 : 1);
  }
}

struct Made {
  std::vector<uint8_t> stream;
  gvc::test::SynthStats stats;
  std::string err;
};

const Made& make(const SynthCase& c) {
  static std::map<std::string, Made> cache;
  auto it = cache.find(c.name);
  if (it != cache.end()) return it->second;
  Made m;
  const SynthParams p = c.params();
  const auto& source = clip_frames(m.err);
  if (c.frames > kSourceFrames || p.width > kSourceWidth || p.height > kSourceHeight)
    m.err = "the case needs more of the clip than kSourceFrames x kSourceWidth x kSourceHeight";
  if (m.err.empty()) {
    std::vector<gvc::test::SynthSource> frames;
    for (int i = 0; i < c.frames; ++i) frames.push_back(crop(source[size_t(i)], p.width, p.height));
    m.stream = gvc::test::synth_write_stream(p, frames, &m.stats);
  }
  // $GVC_SYNTH_DUMP: a folder to keep the streams in, for a look with other decoders
  if (const char* dir = getenv("GVC_SYNTH_DUMP")) {
    if (FILE* f = fopen((std::string(dir) + "/" + c.name + ".hevc").c_str(), "wb")) {
      fwrite(m.stream.data(), 1, m.stream.size(), f);
      fclose(f);
    }
  }
  return cache.emplace(c.name, std::move(m)).first->second;
}

class HevcSynthTest : public ::testing::TestWithParam<SynthCase> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(gvc::test::hevc_find_ffmpeg().empty()) << "ffmpeg is required (set $FFMPEG)";
    ASSERT_FALSE(gvc::test::hevc_find_clip().empty()) << "test clip missing (opencv-doc's vtest.avi or $GVC_TEST_CLIP)";
  }
};

TEST_P(HevcSynthTest, MatchesFfmpegFrameByFrame) {
  const SynthCase& c = GetParam();
  const Made& m = make(c);
  ASSERT_TRUE(m.err.empty()) << m.err;
  const SynthParams p = c.params();
  check_features(parse(m.stream), m.stats, c);
  std::string err;
  const Frames ref = gvc::test::ffmpeg_decode(m.stream, p.bit_depth > 8 ? "yuv420p10le" : "yuv420p",
                                              frame_bytes(p.width, p.height, p.bit_depth > 8 ? 2 : 1), err);
  // any complaint from FFmpeg, or a frame missing, means the writer made a bad stream
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(ref.size(), size_t(c.frames));
  expect_same(decode_ours(m.stream, false), ref, p.width, p.height, p.bit_depth, c.ffmpeg_planes, "ffmpeg");
  expect_same(decode_ours(m.stream, true), ref, p.width, p.height, p.bit_depth, c.ffmpeg_planes,
              "ffmpeg, access unit by access unit");
}

TEST_P(HevcSynthTest, MatchesLibde265FrameByFrame) {
  const SynthCase& c = GetParam();
  if (gvc::test::hevc_find_dec265().empty())
    GTEST_SKIP() << "libde265's dec265 not found (Debian package libde265-examples, or set $DEC265)";
  const Made& m = make(c);
  ASSERT_TRUE(m.err.empty()) << m.err;
  const SynthParams p = c.params();
  std::string err;
  const Frames second = gvc::test::dec265_decode(m.stream, frame_bytes(p.width, p.height, p.bit_depth > 8 ? 2 : 1), err);
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(second.size(), size_t(c.frames));
  expect_same(decode_ours(m.stream, false), second, p.width, p.height, p.bit_depth, c.dec265_planes, "libde265");
}

INSTANTIATE_TEST_SUITE_P(Synth, HevcSynthTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
