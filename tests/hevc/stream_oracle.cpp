// stream_oracle.cpp: running ffmpeg for the HEVC tests (encode with libx265, reference decode)
#include "tests/hevc/stream_oracle.h"

#include <gst/codecparsers/gsth265parser.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <sstream>

namespace gvc::test {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// Runs argv without a shell; stdout to `out_path` (or /dev/null), stderr captured.
int run(const std::vector<std::string>& argv, const std::string& out_path, std::string& err_text) {
  char tmpl[] = "/tmp/gvc_hevc_errXXXXXX";
  const int efd = mkstemp(tmpl);
  if (efd < 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    freopen("/dev/null", "r", stdin);
    freopen(out_path.empty() ? "/dev/null" : out_path.c_str(), "w", stdout);
    dup2(efd, 2);
    execvp(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream f(tmpl);
  err_text.assign(std::istreambuf_iterator<char>(f), {});
  close(efd);
  unlink(tmpl);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string temp_name(const char* suffix) {
  static int n = 0;
  std::ostringstream s;
  const char* dir = getenv("TMPDIR");
  s << (dir ? dir : "/tmp") << "/gvc_hevc_" << getpid() << "_" << n++ << suffix;
  return s.str();
}

std::vector<uint8_t> read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_all(const std::string& p, const std::vector<uint8_t>& data) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
}

std::vector<std::vector<uint8_t>> split_frames(const std::vector<uint8_t>& raw, size_t frame_bytes) {
  std::vector<std::vector<uint8_t>> frames;
  for (size_t o = 0; o + frame_bytes <= raw.size(); o += frame_bytes)
    frames.emplace_back(raw.begin() + long(o), raw.begin() + long(o + frame_bytes));
  return frames;
}

// The first of `names` found in a directory of $PATH; empty if none.
std::string find_on_path(std::initializer_list<const char*> names) {
  const char* path = getenv("PATH");
  for (const char* name : names) {
    std::istringstream ss(path ? path : "/usr/bin:/bin");
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (exists(dir + "/" + name)) return dir + "/" + name;
  }
  return "";
}

}  // namespace

std::string hevc_find_ffmpeg() {
  if (const char* e = getenv("FFMPEG")) return exists(e) ? e : "";
  return find_on_path({"ffmpeg"});
}

std::string hevc_find_dec265() {
  if (const char* e = getenv("DEC265")) return exists(e) ? e : "";
  return find_on_path({"libde265-dec265", "dec265"});
}

std::string hevc_find_clip() {
  if (const char* e = getenv("GVC_TEST_CLIP")) return exists(e) ? e : "";
  const std::string d = "/usr/share/doc/opencv-doc/examples/data/vtest.avi";
  return exists(d) ? d : "";
}

std::vector<uint8_t> x265_encode(const std::string& clip, int w, int h, int frames,
                                 const std::string& pix_fmt, const std::string& x265_params,
                                 std::string& err, const std::string& extra_vf) {
  const std::string out = temp_name(".hevc");
  std::ostringstream vf;
  vf << "scale=" << w << ":" << h << ":flags=bicubic,";
  if (!extra_vf.empty()) vf << extra_vf << ",";
  vf << "format=" << pix_fmt;
  std::string text;
  const int rc = run({hevc_find_ffmpeg(), "-nostdin", "-y", "-loglevel", "error", "-i", clip,
                      "-frames:v", std::to_string(frames), "-vf", vf.str(), "-c:v", "libx265",
                      "-x265-params", "log-level=error:" + x265_params, "-f", "hevc", out},
                     "", text);
  std::vector<uint8_t> data = read_all(out);
  unlink(out.c_str());
  if (rc != 0 || data.empty()) err = "ffmpeg/libx265 encode failed: " + text;
  return data;
}

std::vector<std::vector<uint8_t>> ffmpeg_decode(const std::vector<uint8_t>& stream,
                                                const std::string& pix_fmt, size_t frame_bytes,
                                                std::string& err) {
  const std::string in = temp_name(".hevc"), out = temp_name(".yuv");
  write_all(in, stream);
  std::string text;
  const int rc = run({hevc_find_ffmpeg(), "-nostdin", "-y", "-loglevel", "error", "-f", "hevc",
                      "-i", in, "-vsync", "passthrough", "-f", "rawvideo", "-pix_fmt", pix_fmt, out},
                     "", text);
  std::vector<uint8_t> raw = read_all(out);
  unlink(in.c_str());
  unlink(out.c_str());
  if (rc != 0 || !text.empty()) err = "ffmpeg decode failed or warned: " + text;
  return split_frames(raw, frame_bytes);
}

std::vector<std::vector<uint8_t>> dec265_decode(const std::vector<uint8_t>& stream, size_t frame_bytes,
                                                std::string& err) {
  const std::string in = temp_name(".hevc"), out = temp_name(".yuv");
  write_all(in, stream);
  std::string text;
  const int rc = run({hevc_find_dec265(), "-q", "-t", "0", "-o", out, in}, "", text);
  std::vector<uint8_t> raw = read_all(out);
  unlink(in.c_str());
  unlink(out.c_str());
  // dec265 ends with a "Frames decoded: N (WxH @ fps)" line on stderr; anything else warns
  std::istringstream lines(text);
  std::string line, warnings;
  while (std::getline(lines, line))
    if (!line.empty() && line.find("Frames decoded:") == std::string::npos) warnings += line + "\n";
  if (rc != 0 || !warnings.empty())
    err = "dec265 failed (exit " + std::to_string(rc) + ") or warned: " + warnings;
  return split_frames(raw, frame_bytes);
}

std::vector<std::vector<uint8_t>> split_access_units(const std::vector<uint8_t>& stream) {
  std::vector<std::vector<uint8_t>> aus;
  bool after_slice = true;
  size_t au_begin = 0;
  std::vector<size_t> starts;  // of each NAL unit, at its start code
  for (size_t i = 0; i + 3 < stream.size(); ++i)
    if (!stream[i] && !stream[i + 1] && stream[i + 2] == 1) starts.push_back(i > 0 && !stream[i - 1] ? i - 1 : i);
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t hdr = stream[starts[k] + 2] == 1 ? starts[k] + 3 : starts[k] + 4;
    if (hdr + 2 >= stream.size()) break;
    const int type = (stream[hdr] >> 1) & 0x3f;
    const bool slice = type < 32;
    const bool begins = after_slice && (slice ? (stream[hdr + 2] & 0x80) != 0
                                              : type == 32 || type == 33 || type == 34 || type == 35 ||
                                                    type == 39 || (type >= 41 && type <= 44) ||
                                                    (type >= 48 && type <= 55));
    if (begins && starts[k] > au_begin) {
      aus.emplace_back(stream.begin() + long(au_begin), stream.begin() + long(starts[k]));
      au_begin = starts[k];
    }
    if (slice)
      after_slice = true;
    else if (begins)
      after_slice = false;
  }
  if (au_begin < stream.size()) aus.emplace_back(stream.begin() + long(au_begin), stream.end());
  return aus;
}

StreamFeatures stream_features(const std::vector<uint8_t>& stream) {
  StreamFeatures f;
  bool irap_seen = false;
  GstH265Parser* parser = gst_h265_parser_new();
  GstH265NalUnit nalu;
  guint offset = 0;
  while (offset < stream.size()) {
    const GstH265ParserResult r =
        gst_h265_parser_identify_nalu(parser, stream.data(), offset, stream.size(), &nalu);
    if (r != GST_H265_PARSER_OK && r != GST_H265_PARSER_NO_NAL_END) break;
    offset = nalu.offset + nalu.size;
    if (nalu.type == GST_H265_NAL_VPS) {
      GstH265VPS vps;
      gst_h265_parser_parse_vps(parser, &nalu, &vps);
    } else if (nalu.type == GST_H265_NAL_SPS) {
      GstH265SPS sps;
      if (gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE) == GST_H265_PARSER_OK) {
        f.max_num_reorder = std::max(f.max_num_reorder, int(sps.max_num_reorder_pics[sps.max_sub_layers_minus1]));
        f.max_dec_pic_buffering =
            std::max(f.max_dec_pic_buffering, sps.max_dec_pic_buffering_minus1[sps.max_sub_layers_minus1] + 1);
        f.scaling_list_data += sps.scaling_list_enabled_flag && sps.scaling_list_data_present_flag;
        f.max_tb_log2 = std::max(f.max_tb_log2, sps.log2_min_transform_block_size_minus2 + 2 +
                                                    sps.log2_diff_max_min_transform_block_size);
        for (int i = 0; i < sps.num_short_term_ref_pic_sets; ++i)
          f.sps_st_rps_inter += sps.short_term_ref_pic_set[i].inter_ref_pic_set_prediction_flag;
      }
    } else if (nalu.type == GST_H265_NAL_PPS) {
      GstH265PPS pps;
      if (gst_h265_parser_parse_pps(parser, &nalu, &pps) == GST_H265_PARSER_OK)
        f.pps_scaling_list_data += pps.scaling_list_data_present_flag;
    } else if (nalu.type <= GST_H265_NAL_SLICE_CRA_NUT) {
      GstH265SliceHdr sh;
      if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) continue;
      if (sh.type <= 2) ++f.slices[sh.type];
      const GstH265PPS& pps = *sh.pps;
      if (!sh.dependent_slice_segment_flag) {
        f.slices_sps_rps += sh.short_term_ref_pic_set_sps_flag;
        f.slice_chroma_qp_offsets += pps.slice_chroma_qp_offsets_present_flag && (sh.cb_qp_offset || sh.cr_qp_offset);
        if (sh.type != GST_H265_I_SLICE && sh.temporal_mvp_enabled_flag) {
          f.col_b_from_l0 += sh.type == GST_H265_B_SLICE && sh.collocated_from_l0_flag;
          f.max_col_ref_idx = std::max(f.max_col_ref_idx, int(sh.collocated_ref_idx));
        }
        f.slices_rps_inter +=
            !sh.short_term_ref_pic_set_sps_flag && sh.short_term_ref_pic_sets.inter_ref_pic_set_prediction_flag;
        const bool override = pps.deblocking_filter_override_enabled_flag && sh.deblocking_filter_override_flag;
        f.dbk_override_off += override && sh.deblocking_filter_disabled_flag;
        f.dbk_override_offsets +=
            override && !sh.deblocking_filter_disabled_flag &&
            (sh.beta_offset_div2 != pps.beta_offset_div2 || sh.tc_offset_div2 != pps.tc_offset_div2);
        const bool disabled = override ? sh.deblocking_filter_disabled_flag : pps.deblocking_filter_disabled_flag;
        f.lf_across_slices_off += !sh.first_slice_segment_in_pic_flag && pps.loop_filter_across_slices_enabled_flag &&
                                  (sh.sao_luma_flag || sh.sao_chroma_flag || !disabled) &&
                                  !sh.loop_filter_across_slices_enabled_flag;
      }
      if (sh.first_slice_segment_in_pic_flag) {
        if (nalu.type >= GST_H265_NAL_SLICE_BLA_W_LP && nalu.type <= GST_H265_NAL_SLICE_BLA_N_LP)
          ++f.bla[nalu.type - GST_H265_NAL_SLICE_BLA_W_LP];
        if (nalu.type >= GST_H265_NAL_SLICE_BLA_W_LP && nalu.type <= GST_H265_NAL_SLICE_CRA_NUT)
          f.no_output_of_prior_pics += irap_seen && sh.no_output_of_prior_pics_flag;
        irap_seen |= nalu.type >= GST_H265_NAL_SLICE_BLA_W_LP && nalu.type <= GST_H265_NAL_SLICE_CRA_NUT;
      }
      f.cip += sh.pps->constrained_intra_pred_flag;
      f.wpp += sh.pps->entropy_coding_sync_enabled_flag;
      if (sh.first_slice_segment_in_pic_flag) {
        if (nalu.type == GST_H265_NAL_SLICE_RASL_N || nalu.type == GST_H265_NAL_SLICE_RASL_R) ++f.rasl;
        if (nalu.type == GST_H265_NAL_SLICE_CRA_NUT) ++f.cra;
        f.hidden += sh.pps->output_flag_present_flag && !sh.pic_output_flag;
      }
      if (sh.type != GST_H265_I_SLICE && !sh.dependent_slice_segment_flag) {
        const GstH265PredWeightTable& t = sh.pred_weight_table;
        bool w = false;
        for (int i = 0; i < 15; ++i)
          w |= t.luma_weight_l0_flag[i] || t.chroma_weight_l0_flag[i] || t.luma_weight_l1_flag[i] ||
               t.chroma_weight_l1_flag[i];
        const bool wp = sh.type == GST_H265_P_SLICE ? sh.pps->weighted_pred_flag : sh.pps->weighted_bipred_flag;
        f.weighted += wp && w;
        f.tmvp_off += !sh.temporal_mvp_enabled_flag;
        f.max_refs = std::max(f.max_refs, int(sh.num_ref_idx_l0_active_minus1) + 1);
        f.log2_par_mrg_level = std::max(f.log2_par_mrg_level, sh.pps->log2_parallel_merge_level_minus2 + 2);
      }
      gst_h265_slice_hdr_free(&sh);
    }
  }
  gst_h265_parser_free(parser);
  return f;
}

namespace {

struct BitReader {
  const std::vector<uint8_t>& b;
  size_t pos = 0;
  int u(int n) {
    int v = 0;
    for (int i = 0; i < n; ++i, ++pos) v = (v << 1) | (pos < b.size() * 8 ? (b[pos >> 3] >> (7 - (pos & 7))) & 1 : 0);
    return v;
  }
  int ue() {
    int zeros = 0;
    while (!u(1) && zeros < 32) ++zeros;
    return (1 << zeros) - 1 + u(zeros);
  }
};

// NAL units of an Annex B stream: [begin, end) of each NAL unit (header included), without
// the start codes and trailing zero bytes.
std::vector<std::pair<size_t, size_t>> split_nals(const std::vector<uint8_t>& stream) {
  std::vector<size_t> starts;
  for (size_t i = 0; i + 3 <= stream.size(); ++i)
    if (!stream[i] && !stream[i + 1] && stream[i + 2] == 1) starts.push_back(i + 3);
  std::vector<std::pair<size_t, size_t>> nals;
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t b = starts[k];
    size_t e = k + 1 < starts.size() ? starts[k + 1] - 3 : stream.size();
    while (e > b && !stream[e - 1]) --e;
    nals.push_back({b, e});
  }
  return nals;
}

// The RBSP bits of a NAL unit payload (after the two header bytes).
std::vector<uint8_t> rbsp_of(const std::vector<uint8_t>& stream, size_t b, size_t e) {
  std::vector<uint8_t> rbsp;
  int zeros = 0;
  for (size_t i = b + 2; i < e; ++i) {
    if (zeros >= 2 && stream[i] == 3) {
      zeros = 0;
      continue;
    }
    rbsp.push_back(stream[i]);
    zeros = stream[i] ? 0 : zeros + 1;
  }
  return rbsp;
}

std::vector<int> to_bits(const std::vector<uint8_t>& bytes, size_t n_bits) {
  std::vector<int> bits;
  for (size_t i = 0; i < n_bits; ++i) bits.push_back((bytes[i >> 3] >> (7 - (i & 7))) & 1);
  return bits;
}

void put_ue(std::vector<int>& bits, unsigned value) {
  const unsigned v = value + 1;
  int n = 0;
  while ((v >> n) > 1) ++n;
  for (int i = 0; i < n; ++i) bits.push_back(0);
  for (int i = n; i >= 0; --i) bits.push_back((v >> i) & 1);
}

void put_u(std::vector<int>& bits, unsigned value, int n) {
  for (int i = n - 1; i >= 0; --i) bits.push_back((value >> i) & 1);
}

// Appends NAL header bytes + `bits` (+ `tail` bytes, already byte aligned) with emulation
// prevention to `out`.
void put_nal(std::vector<uint8_t>& out, const uint8_t* header, const std::vector<int>& bits,
             const std::vector<uint8_t>& tail) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < bits.size(); i += 8) {
    uint8_t byte = 0;
    for (int j = 0; j < 8; ++j) byte = uint8_t((byte << 1) | bits[i + j]);
    bytes.push_back(byte);
  }
  bytes.insert(bytes.end(), tail.begin(), tail.end());
  out.insert(out.end(), {0, 0, 0, 1, header[0], header[1]});
  int zeros = 0;
  for (uint8_t byte : bytes) {
    if (zeros >= 2 && byte <= 3) {  // emulation_prevention_three_byte
      out.push_back(3);
      zeros = 0;
    }
    out.push_back(byte);
    zeros = byte ? 0 : zeros + 1;
  }
}

// Drops rbsp_trailing_bits (or byte_alignment()) from the end of `bits`.
void drop_trailing_bits(std::vector<int>& bits) {
  while (!bits.empty() && !bits.back()) bits.pop_back();
  if (!bits.empty()) bits.pop_back();
}

void add_trailing_bits(std::vector<int>& bits) {
  bits.push_back(1);
  while (bits.size() % 8) bits.push_back(0);
}

// 7.3.2.3.1 up to log2_parallel_merge_level_minus2: returns its bit position and length, or
// false when the PPS carries scaling list data.
bool find_par_mrg_field(const std::vector<uint8_t>& rbsp, size_t& pos, size_t& len) {
  BitReader r{rbsp};
  r.ue();        // pps_pic_parameter_set_id
  r.ue();        // pps_seq_parameter_set_id
  r.u(2);        // dependent_slice_segments_enabled_flag, output_flag_present_flag
  r.u(3);        // num_extra_slice_header_bits
  r.u(2);        // sign_data_hiding_enabled_flag, cabac_init_present_flag
  r.ue();        // num_ref_idx_l0_default_active_minus1
  r.ue();        // num_ref_idx_l1_default_active_minus1
  r.ue();        // init_qp_minus26 (se, same length)
  r.u(2);        // constrained_intra_pred_flag, transform_skip_enabled_flag
  if (r.u(1)) r.ue();  // cu_qp_delta_enabled_flag, diff_cu_qp_delta_depth
  r.ue();        // pps_cb_qp_offset
  r.ue();        // pps_cr_qp_offset
  r.u(4);        // slice_chroma_qp_offsets_present, weighted_pred, weighted_bipred, transquant_bypass
  const int tiles = r.u(1);
  r.u(1);        // entropy_coding_sync_enabled_flag
  if (tiles) {
    const int cols = r.ue(), rows = r.ue();
    if (!r.u(1)) {
      for (int i = 0; i < cols; ++i) r.ue();
      for (int i = 0; i < rows; ++i) r.ue();
    }
    r.u(1);      // loop_filter_across_tiles_enabled_flag
  }
  r.u(1);        // pps_loop_filter_across_slices_enabled_flag
  if (r.u(1)) {  // deblocking_filter_control_present_flag
    r.u(1);      // deblocking_filter_override_enabled_flag
    if (!r.u(1)) {  // pps_deblocking_filter_disabled_flag
      r.ue();
      r.ue();
    }
  }
  if (r.u(1)) return false;  // pps_scaling_list_data_present_flag
  r.u(1);        // lists_modification_present_flag
  pos = r.pos;
  r.ue();
  len = r.pos - pos;
  return true;
}

}  // namespace

std::vector<uint8_t> with_parallel_merge_level(const std::vector<uint8_t>& stream, int log2_level) {
  std::vector<uint8_t> out;
  for (const auto& [b, e] : split_nals(stream)) {
    if (((stream[b] >> 1) & 0x3f) != 34) {
      out.insert(out.end(), {0, 0, 0, 1});
      out.insert(out.end(), stream.begin() + long(b), stream.begin() + long(e));
      continue;
    }
    const std::vector<uint8_t> rbsp = rbsp_of(stream, b, e);
    size_t pos, len;
    if (!find_par_mrg_field(rbsp, pos, len)) return {};
    std::vector<int> bits = to_bits(rbsp, rbsp.size() * 8);
    drop_trailing_bits(bits);
    std::vector<int> nb(bits.begin(), bits.begin() + long(pos));
    put_ue(nb, unsigned(log2_level - 2));
    nb.insert(nb.end(), bits.begin() + long(pos + len), bits.end());
    add_trailing_bits(nb);
    put_nal(out, &stream[b], nb, {});
  }
  return out;
}

namespace {

// 7.3.2.2.1 up to long_term_ref_pics_present_flag: its bit position, or false for SPSs this
// rewriter does not handle (sub-layers, scaling list data, short-term RPSs in the SPS).
bool find_lt_present_field(const std::vector<uint8_t>& rbsp, size_t& pos, int& log2_max_poc_lsb) {
  BitReader r{rbsp};
  r.u(4);
  if (r.u(3)) return false;  // sps_max_sub_layers_minus1
  r.u(1);
  r.u(32);
  r.u(32);
  r.u(32);                   // profile_tier_level(1, 0): 96 bits
  r.ue();                    // sps_seq_parameter_set_id
  if (r.ue() == 3) r.u(1);   // chroma_format_idc, separate_colour_plane_flag
  r.ue();
  r.ue();                    // pic_width/height_in_luma_samples
  if (r.u(1))
    for (int i = 0; i < 4; ++i) r.ue();  // conformance window
  r.ue();
  r.ue();                    // bit depths
  log2_max_poc_lsb = r.ue() + 4;
  r.u(1);                    // sps_sub_layer_ordering_info_present_flag (one sub-layer)
  r.ue();
  r.ue();
  r.ue();
  for (int i = 0; i < 6; ++i) r.ue();  // CB/TB sizes, transform hierarchy depths
  if (r.u(1) && r.u(1)) return false;  // scaling_list_enabled_flag, sps_scaling_list_data_present_flag
  r.u(2);                    // amp_enabled_flag, sample_adaptive_offset_enabled_flag
  if (r.u(1)) {              // pcm_enabled_flag
    r.u(8);
    r.ue();
    r.ue();
    r.u(1);
  }
  if (r.ue() != 0) return false;  // num_short_term_ref_pic_sets
  pos = r.pos;
  return r.u(1) == 0;        // long_term_ref_pics_present_flag
}

}  // namespace

std::vector<uint8_t> with_long_term_refs(const std::vector<uint8_t>& stream, int* n_lt) {
  GstH265Parser* parser = gst_h265_parser_new();
  std::vector<uint8_t> out;
  int log2_max_poc_lsb = 0;
  bool ok = true;
  *n_lt = 0;
  for (const auto& [b, e] : split_nals(stream)) {
    const int type = (stream[b] >> 1) & 0x3f;
    GstH265NalUnit nalu;
    if (gst_h265_parser_identify_nalu_unchecked(parser, stream.data(), guint(b - 3), stream.size(), &nalu) !=
        GST_H265_PARSER_OK) {
      ok = false;
      break;
    }
    std::vector<uint8_t> rbsp = rbsp_of(stream, b, e);
    if (type == GST_H265_NAL_VPS) {
      GstH265VPS vps;
      gst_h265_parser_parse_vps(parser, &nalu, &vps);
    } else if (type == GST_H265_NAL_SPS) {
      GstH265SPS sps;
      gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE);
      size_t pos;
      if (!find_lt_present_field(rbsp, pos, log2_max_poc_lsb)) {
        ok = false;
        break;
      }
      std::vector<int> bits = to_bits(rbsp, rbsp.size() * 8);
      drop_trailing_bits(bits);
      std::vector<int> nb(bits.begin(), bits.begin() + long(pos));
      nb.push_back(1);  // long_term_ref_pics_present_flag
      put_ue(nb, 0);    // num_long_term_ref_pics_sps
      nb.insert(nb.end(), bits.begin() + long(pos + 1), bits.end());
      add_trailing_bits(nb);
      put_nal(out, &stream[b], nb, {});
      continue;
    } else if (type == GST_H265_NAL_PPS) {
      GstH265PPS pps;
      gst_h265_parser_parse_pps(parser, &nalu, &pps);
    } else if (type <= GST_H265_NAL_SLICE_CRA_NUT && type != GST_H265_NAL_SLICE_IDR_W_RADL &&
               type != GST_H265_NAL_SLICE_IDR_N_LP) {
      GstH265SliceHdr sh;
      if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) {
        ok = false;
        break;
      }
      const size_t hpos = sh.header_size - 8 * sh.n_emulation_prevention_bytes;
      const size_t data_byte = (hpos % 8) ? (hpos + 8) / 8 : hpos / 8;
      const bool simple = sh.first_slice_segment_in_pic_flag && !sh.pps->output_flag_present_flag &&
                          !sh.pps->num_extra_slice_header_bits;
      gst_h265_slice_hdr_free(&sh);
      if (!simple || data_byte > rbsp.size()) {
        ok = false;
        break;
      }
      // 7.3.6.1 up to the end of st_ref_pic_set(num_short_term_ref_pic_sets) (index 0)
      BitReader r{rbsp};
      r.u(1);  // first_slice_segment_in_pic_flag
      if (type >= 16) r.u(1);  // no_output_of_prior_pics_flag
      r.ue();  // slice_pic_parameter_set_id
      const int slice_type = r.ue();
      const int poc_lsb = r.u(log2_max_poc_lsb);
      const size_t rps_pos = r.pos;
      r.u(1);  // short_term_ref_pic_set_sps_flag (0: no sets in the SPS)
      const int n_neg = r.ue(), n_pos = r.ue();
      int delta[16], used[16];
      for (int i = 0; i < n_neg + n_pos && i < 16; ++i) {
        delta[i] = r.ue();
        used[i] = r.u(1);
      }
      const size_t rest = r.pos;
      std::vector<int> bits = to_bits(rbsp, data_byte * 8);
      drop_trailing_bits(bits);  // byte_alignment()
      std::vector<int> nb(bits.begin(), bits.begin() + long(rps_pos));
      // P pictures referencing the two previous pictures: the older one becomes long-term
      if (slice_type == 1 && n_neg == 2 && n_pos == 0 && !delta[0] && !delta[1] && used[0] && used[1]) {
        nb.push_back(0);  // short_term_ref_pic_set_sps_flag
        put_ue(nb, 1);    // num_negative_pics
        put_ue(nb, 0);    // num_positive_pics
        put_ue(nb, 0);    // delta_poc_s0_minus1
        nb.push_back(1);  // used_by_curr_pic_s0_flag
        put_ue(nb, 1);    // num_long_term_pics
        put_u(nb, unsigned(poc_lsb - 2) & ((1u << log2_max_poc_lsb) - 1), log2_max_poc_lsb);  // poc_lsb_lt
        nb.push_back(1);  // used_by_curr_pic_lt_flag
        nb.push_back(0);  // delta_poc_msb_present_flag
        ++*n_lt;
      } else {
        nb.insert(nb.end(), bits.begin() + long(rps_pos), bits.begin() + long(rest));
        put_ue(nb, 0);  // num_long_term_pics
      }
      nb.insert(nb.end(), bits.begin() + long(rest), bits.end());
      add_trailing_bits(nb);
      put_nal(out, &stream[b], nb, std::vector<uint8_t>(rbsp.begin() + long(data_byte), rbsp.end()));
      continue;
    }
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), stream.begin() + long(b), stream.begin() + long(e));
  }
  gst_h265_parser_free(parser);
  if (!ok) out.clear();
  return out;
}

std::vector<uint8_t> with_list_modification(const std::vector<uint8_t>& stream, int* n_mod) {
  GstH265Parser* parser = gst_h265_parser_new();
  std::vector<uint8_t> out;
  bool ok = true;
  *n_mod = 0;
  for (const auto& [b, e] : split_nals(stream)) {
    const int type = (stream[b] >> 1) & 0x3f;
    GstH265NalUnit nalu;
    if (gst_h265_parser_identify_nalu_unchecked(parser, stream.data(), guint(b - 3), stream.size(), &nalu) !=
        GST_H265_PARSER_OK) {
      ok = false;
      break;
    }
    const std::vector<uint8_t> rbsp = rbsp_of(stream, b, e);
    if (type == GST_H265_NAL_VPS) {
      GstH265VPS vps;
      gst_h265_parser_parse_vps(parser, &nalu, &vps);
    } else if (type == GST_H265_NAL_SPS) {
      GstH265SPS sps;
      gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE);
    } else if (type == GST_H265_NAL_PPS) {
      GstH265PPS pps;
      gst_h265_parser_parse_pps(parser, &nalu, &pps);
      size_t pos, len;
      if (!find_par_mrg_field(rbsp, pos, len)) {
        ok = false;
        break;
      }
      std::vector<int> bits = to_bits(rbsp, rbsp.size() * 8);
      drop_trailing_bits(bits);
      bits[pos - 1] = 1;  // lists_modification_present_flag
      add_trailing_bits(bits);
      put_nal(out, &stream[b], bits, {});
      continue;
    } else if (type <= GST_H265_NAL_SLICE_CRA_NUT && type != GST_H265_NAL_SLICE_IDR_W_RADL &&
               type != GST_H265_NAL_SLICE_IDR_N_LP) {
      GstH265SliceHdr sh;
      if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) {
        ok = false;
        break;
      }
      const GstH265PPS& pps = *sh.pps;
      const GstH265SPS& sps = *pps.sps;
      const size_t hpos = sh.header_size - 8 * sh.n_emulation_prevention_bytes;
      const size_t data_byte = (hpos % 8) ? (hpos + 8) / 8 : hpos / 8;
      const bool simple = sh.first_slice_segment_in_pic_flag && !pps.output_flag_present_flag &&
                          !pps.num_extra_slice_header_bits && !sps.long_term_ref_pics_present_flag &&
                          !sps.num_short_term_ref_pic_sets;
      gst_h265_slice_hdr_free(&sh);
      if (!simple || data_byte > rbsp.size()) {
        ok = false;
        break;
      }
      // 7.3.6.1 up to num_ref_idx_active_override_flag and its values
      BitReader r{rbsp};
      r.u(1);
      if (type >= 16) r.u(1);
      r.ue();
      const int slice_type = r.ue();
      r.u(sps.log2_max_pic_order_cnt_lsb_minus4 + 4);
      r.u(1);
      const int n_neg = r.ue(), n_pos = r.ue();
      int num_pic_total_curr = 0;
      for (int i = 0; i < n_neg + n_pos && i < 32; ++i) {
        r.ue();
        num_pic_total_curr += r.u(1);
      }
      if (sps.temporal_mvp_enabled_flag) r.u(1);
      if (sps.sample_adaptive_offset_enabled_flag) r.u(2);
      int n_active[2] = {pps.num_ref_idx_l0_default_active_minus1 + 1,
                         pps.num_ref_idx_l1_default_active_minus1 + 1};
      if (slice_type != 2 && r.u(1)) {
        n_active[0] = r.ue() + 1;
        if (slice_type == 0) n_active[1] = r.ue() + 1;
      }
      const size_t ins = r.pos;
      std::vector<int> bits = to_bits(rbsp, data_byte * 8);
      drop_trailing_bits(bits);
      std::vector<int> nb(bits.begin(), bits.begin() + long(ins));
      if (slice_type != 2 && num_pic_total_curr > 1) {
        // 7.3.6.2: every entry rotated by one position of RefPicListTemp
        int list_entry_bits = 0;
        while ((1 << list_entry_bits) < num_pic_total_curr) ++list_entry_bits;
        for (int X = 0; X < (slice_type == 0 ? 2 : 1); ++X) {
          nb.push_back(1);  // ref_pic_list_modification_flag_lX
          for (int i = 0; i < n_active[X]; ++i) put_u(nb, unsigned((i + 1 + X) % num_pic_total_curr), list_entry_bits);
        }
        ++*n_mod;
      }
      nb.insert(nb.end(), bits.begin() + long(ins), bits.end());
      add_trailing_bits(nb);
      put_nal(out, &stream[b], nb, std::vector<uint8_t>(rbsp.begin() + long(data_byte), rbsp.end()));
      continue;
    }
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), stream.begin() + long(b), stream.begin() + long(e));
  }
  gst_h265_parser_free(parser);
  if (!ok) out.clear();
  return out;
}

std::vector<uint8_t> with_pic_output_flag(const std::vector<uint8_t>& stream, int* n_hidden) {
  GstH265Parser* parser = gst_h265_parser_new();
  std::vector<uint8_t> out;
  bool ok = true;
  int pictures = 0;   // in decode order
  bool hide = false;  // pic_output_flag of the current picture is 0
  *n_hidden = 0;
  for (const auto& [b, e] : split_nals(stream)) {
    const int type = (stream[b] >> 1) & 0x3f;
    GstH265NalUnit nalu;
    if (gst_h265_parser_identify_nalu_unchecked(parser, stream.data(), guint(b - 3), stream.size(), &nalu) !=
        GST_H265_PARSER_OK) {
      ok = false;
      break;
    }
    const std::vector<uint8_t> rbsp = rbsp_of(stream, b, e);
    if (type == GST_H265_NAL_VPS) {
      GstH265VPS vps;
      gst_h265_parser_parse_vps(parser, &nalu, &vps);
    } else if (type == GST_H265_NAL_SPS) {
      GstH265SPS sps;
      gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE);
    } else if (type == GST_H265_NAL_PPS) {
      GstH265PPS pps;
      gst_h265_parser_parse_pps(parser, &nalu, &pps);
      // 7.3.2.3.1: pps_pic_parameter_set_id, pps_seq_parameter_set_id,
      // dependent_slice_segments_enabled_flag, then output_flag_present_flag
      BitReader r{rbsp};
      r.ue();
      r.ue();
      r.u(1);
      std::vector<int> bits = to_bits(rbsp, rbsp.size() * 8);
      drop_trailing_bits(bits);
      bits[r.pos] = 1;
      add_trailing_bits(bits);
      put_nal(out, &stream[b], bits, {});
      continue;
    } else if (type <= GST_H265_NAL_SLICE_CRA_NUT) {
      GstH265SliceHdr sh;
      if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) {
        ok = false;
        break;
      }
      const GstH265PPS& pps = *sh.pps;
      const GstH265SPS& sps = *pps.sps;
      const size_t hpos = sh.header_size - 8 * sh.n_emulation_prevention_bytes;
      const size_t data_byte = (hpos % 8) ? (hpos + 8) / 8 : hpos / 8;
      const bool first = sh.first_slice_segment_in_pic_flag, dependent = sh.dependent_slice_segment_flag;
      const bool simple = !pps.output_flag_present_flag && !pps.num_extra_slice_header_bits &&
                          !sps.separate_colour_plane_flag;
      gst_h265_slice_hdr_free(&sh);
      if (!simple || data_byte > rbsp.size()) {
        ok = false;
        break;
      }
      if (first) {
        hide = ++pictures % 3 == 0;
        *n_hidden += hide;
      }
      if (!dependent) {  // a dependent slice segment has no pic_output_flag of its own
        // 7.3.6.1 up to slice_type
        const int ctb_log2 = sps.log2_min_luma_coding_block_size_minus3 + 3 +
                             sps.log2_diff_max_min_luma_coding_block_size;
        const int ctbs = ((sps.pic_width_in_luma_samples + (1 << ctb_log2) - 1) >> ctb_log2) *
                         ((sps.pic_height_in_luma_samples + (1 << ctb_log2) - 1) >> ctb_log2);
        int address_bits = 0;
        while ((1 << address_bits) < ctbs) ++address_bits;
        BitReader r{rbsp};
        r.u(1);  // first_slice_segment_in_pic_flag
        if (type >= GST_H265_NAL_SLICE_BLA_W_LP) r.u(1);  // no_output_of_prior_pics_flag
        r.ue();  // slice_pic_parameter_set_id
        if (!first) {
          if (pps.dependent_slice_segments_enabled_flag) r.u(1);  // dependent_slice_segment_flag (0)
          r.u(address_bits);  // slice_segment_address
        }
        r.ue();  // slice_type
        const size_t ins = r.pos;
        std::vector<int> bits = to_bits(rbsp, data_byte * 8);
        drop_trailing_bits(bits);  // byte_alignment()
        std::vector<int> nb(bits.begin(), bits.begin() + long(ins));
        nb.push_back(hide ? 0 : 1);  // pic_output_flag
        nb.insert(nb.end(), bits.begin() + long(ins), bits.end());
        add_trailing_bits(nb);
        put_nal(out, &stream[b], nb, std::vector<uint8_t>(rbsp.begin() + long(data_byte), rbsp.end()));
        continue;
      }
    }
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), stream.begin() + long(b), stream.begin() + long(e));
  }
  gst_h265_parser_free(parser);
  if (!ok) out.clear();
  return out;
}

std::vector<uint8_t> without_repeated_parameter_sets(const std::vector<uint8_t>& stream, int* n_dropped) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> last[3];  // the latest VPS, SPS and PPS NAL unit
  *n_dropped = 0;
  for (const auto& [b, e] : split_nals(stream)) {
    const int type = (stream[b] >> 1) & 0x3f;
    if (type >= GST_H265_NAL_VPS && type <= GST_H265_NAL_PPS) {
      std::vector<uint8_t>& prev = last[type - GST_H265_NAL_VPS];
      if (prev.size() == e - b && std::equal(prev.begin(), prev.end(), stream.begin() + long(b))) {
        ++*n_dropped;
        continue;
      }
      prev.assign(stream.begin() + long(b), stream.begin() + long(e));
    }
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), stream.begin() + long(b), stream.begin() + long(e));
  }
  return out;
}

namespace {

void put_se(std::vector<int>& bits, int v) { put_ue(bits, v > 0 ? unsigned(2 * v - 1) : unsigned(-2 * v)); }

int ceil_log2(int n) {
  int b = 0;
  while ((1 << b) < n) ++b;
  return b;
}

// 7.3.2.3.1: bit positions of the PPS fields the rewriters change; false when the PPS carries
// pps_scaling_list_data() (its length is not worked out here).
struct PpsLayout {
  size_t slice_chroma_qp_offsets;  // pps_slice_chroma_qp_offsets_present_flag
  size_t lf_across_slices;  // pps_loop_filter_across_slices_enabled_flag
  size_t scaling_list;      // pps_scaling_list_data_present_flag
};
bool pps_layout(const std::vector<uint8_t>& rbsp, PpsLayout& l) {
  size_t pos, len;
  if (!find_par_mrg_field(rbsp, pos, len)) return false;
  // walk again for the two positions (find_par_mrg_field checked the syntax)
  BitReader r{rbsp};
  r.ue();
  r.ue();
  r.u(7);
  r.ue();
  r.ue();
  r.ue();
  r.u(2);
  if (r.u(1)) r.ue();
  r.ue();
  r.ue();
  l.slice_chroma_qp_offsets = r.pos;
  r.u(4);
  const int tiles = r.u(1);
  r.u(1);
  if (tiles) {
    const int cols = r.ue(), rows = r.ue();
    if (!r.u(1))
      for (int i = 0; i < cols + rows; ++i) r.ue();
    r.u(1);
  }
  l.lf_across_slices = r.pos;
  r.u(1);
  if (r.u(1)) {
    r.u(1);
    if (!r.u(1)) {
      r.ue();
      r.ue();
    }
  }
  l.scaling_list = r.pos;
  return true;
}

// 7.3.2.2.1 up to num_short_term_ref_pic_sets: its bit position, or false for SPSs this does
// not handle (sub-layers, scaling list data, short-term RPSs already in the SPS).
bool sps_num_st_rps_field(const std::vector<uint8_t>& rbsp, size_t& pos) {
  int log2_max_poc_lsb;
  size_t lt_pos;
  if (!find_lt_present_field(rbsp, lt_pos, log2_max_poc_lsb)) return false;
  pos = lt_pos - 1;  // num_short_term_ref_pic_sets = 0 is the one bit "1"
  return true;
}

// A short-term RPS by its derived values (7.4.8): DeltaPocS0 (descending), DeltaPocS1
// (ascending) and their used_by_curr_pic flags.
struct Rps {
  std::vector<int> s0, s1, u0, u1;
  bool operator==(const Rps& o) const { return s0 == o.s0 && s1 == o.s1 && u0 == o.u0 && u1 == o.u1; }
  int num_delta_pocs() const { return int(s0.size() + s1.size()); }
};

Rps rps_of(const GstH265ShortTermRefPicSet& st) {
  Rps r;
  for (int i = 0; i < std::min<int>(st.NumNegativePics, 16); ++i)
    r.s0.push_back(st.DeltaPocS0[i]), r.u0.push_back(st.UsedByCurrPicS0[i]);
  for (int i = 0; i < std::min<int>(st.NumPositivePics, 16); ++i)
    r.s1.push_back(st.DeltaPocS1[i]), r.u1.push_back(st.UsedByCurrPicS1[i]);
  return r;
}

void put_rps_explicit(std::vector<int>& bits, const Rps& r) {
  put_ue(bits, unsigned(r.s0.size()));  // num_negative_pics
  put_ue(bits, unsigned(r.s1.size()));  // num_positive_pics
  for (size_t i = 0; i < r.s0.size(); ++i) {
    put_ue(bits, unsigned((i ? r.s0[i - 1] : 0) - r.s0[i] - 1));  // delta_poc_s0_minus1
    bits.push_back(r.u0[i]);
  }
  for (size_t i = 0; i < r.s1.size(); ++i) {
    put_ue(bits, unsigned(r.s1[i] - (i ? r.s1[i - 1] : 0) - 1));  // delta_poc_s1_minus1
    bits.push_back(r.u1[i]);
  }
}

// 7.4.8 (7-61, 7-62): the RPS that inter RPS prediction from `ref` with deltaRps and the flags
// used_by_curr_pic_flag / use_delta_flag (indexed j = 0..NumDeltaPocs[RefRpsIdx]) derives.
Rps predicted_rps(const Rps& ref, int delta_rps, const std::vector<int>& used, const std::vector<int>& use_delta) {
  Rps r;
  const int nn = int(ref.s0.size()), nd = ref.num_delta_pocs();
  for (int j = int(ref.s1.size()) - 1; j >= 0; --j) {
    const int d = ref.s1[j] + delta_rps;
    if (d < 0 && use_delta[nn + j]) r.s0.push_back(d), r.u0.push_back(used[nn + j]);
  }
  if (delta_rps < 0 && use_delta[nd]) r.s0.push_back(delta_rps), r.u0.push_back(used[nd]);
  for (int j = 0; j < nn; ++j) {
    const int d = ref.s0[j] + delta_rps;
    if (d < 0 && use_delta[j]) r.s0.push_back(d), r.u0.push_back(used[j]);
  }
  for (int j = nn - 1; j >= 0; --j) {
    const int d = ref.s0[j] + delta_rps;
    if (d > 0 && use_delta[j]) r.s1.push_back(d), r.u1.push_back(used[j]);
  }
  if (delta_rps > 0 && use_delta[nd]) r.s1.push_back(delta_rps), r.u1.push_back(used[nd]);
  for (int j = 0; j < int(ref.s1.size()); ++j) {
    const int d = ref.s1[j] + delta_rps;
    if (d > 0 && use_delta[nn + j]) r.s1.push_back(d), r.u1.push_back(used[nn + j]);
  }
  return r;
}

// Codes `target` by inter RPS prediction from `ref` (7.3.7: delta_rps_sign, abs_delta_rps_minus1,
// used_by_curr_pic_flag, use_delta_flag) if some deltaRps in -8..8 derives it exactly.
bool put_rps_predicted(std::vector<int>& bits, const Rps& ref, const Rps& target) {
  for (int mag = 1; mag <= 8; ++mag)
    for (int delta_rps : {-mag, mag}) {
      const int nd = ref.num_delta_pocs();
      std::vector<int> used(nd + 1, 0), use_delta(nd + 1, 0);
      for (int j = 0; j <= nd; ++j) {
        const int d = (j < int(ref.s0.size()) ? ref.s0[j] : j < nd ? ref.s1[j - ref.s0.size()] : 0) + delta_rps;
        for (size_t i = 0; i < target.s0.size(); ++i)
          if (target.s0[i] == d) used[j] = target.u0[i], use_delta[j] = 1;
        for (size_t i = 0; i < target.s1.size(); ++i)
          if (target.s1[i] == d) used[j] = target.u1[i], use_delta[j] = 1;
      }
      if (!(predicted_rps(ref, delta_rps, used, use_delta) == target)) continue;
      bits.push_back(delta_rps < 0);             // delta_rps_sign
      put_ue(bits, unsigned(std::abs(delta_rps) - 1));  // abs_delta_rps_minus1
      for (int j = 0; j <= nd; ++j) {
        bits.push_back(used[j]);                 // used_by_curr_pic_flag
        if (!used[j]) bits.push_back(use_delta[j]);  // use_delta_flag
      }
      return true;
    }
  return false;
}

// What the slice segment header syntax (7.3.6.1) depends on, from the SPS and PPS that the
// rewritten stream carries.
struct HeaderSyntax {
  int log2_max_poc_lsb = 4, num_st_rps = 0, num_lt_sps = 0, address_bits = 0, extra_bits = 0;
  bool lt_present = false, sps_tmvp = false, sao = false, chroma = true, separate_planes = false;
  bool dependent_slices = false, output_flag_present = false, lists_mod = false, cabac_init_present = false;
  bool weighted_pred = false, weighted_bipred = false, chroma_qp_offsets = false;
  bool dbk_override_enabled = false, pps_dbk_disabled = false, lf_across_slices = false;
  bool entry_points = false, header_extension = false;
};

HeaderSyntax header_syntax(const GstH265SPS& sps, const GstH265PPS& pps) {
  HeaderSyntax s;
  s.log2_max_poc_lsb = sps.log2_max_pic_order_cnt_lsb_minus4 + 4;
  s.num_st_rps = sps.num_short_term_ref_pic_sets;
  s.num_lt_sps = sps.num_long_term_ref_pics_sps;
  const int ctb_log2 = sps.log2_min_luma_coding_block_size_minus3 + 3 + sps.log2_diff_max_min_luma_coding_block_size;
  const int ctbs = ((sps.pic_width_in_luma_samples + (1 << ctb_log2) - 1) >> ctb_log2) *
                   ((sps.pic_height_in_luma_samples + (1 << ctb_log2) - 1) >> ctb_log2);
  s.address_bits = ceil_log2(ctbs);
  s.extra_bits = pps.num_extra_slice_header_bits;
  s.lt_present = sps.long_term_ref_pics_present_flag;
  s.sps_tmvp = sps.temporal_mvp_enabled_flag;
  s.sao = sps.sample_adaptive_offset_enabled_flag;
  s.chroma = sps.chroma_format_idc != 0 && !sps.separate_colour_plane_flag;
  s.separate_planes = sps.separate_colour_plane_flag;
  s.dependent_slices = pps.dependent_slice_segments_enabled_flag;
  s.output_flag_present = pps.output_flag_present_flag;
  s.lists_mod = pps.lists_modification_present_flag;
  s.cabac_init_present = pps.cabac_init_present_flag;
  s.weighted_pred = pps.weighted_pred_flag;
  s.weighted_bipred = pps.weighted_bipred_flag;
  s.chroma_qp_offsets = pps.slice_chroma_qp_offsets_present_flag;
  s.dbk_override_enabled = pps.deblocking_filter_override_enabled_flag;
  s.pps_dbk_disabled = pps.deblocking_filter_disabled_flag;
  s.lf_across_slices = pps.loop_filter_across_slices_enabled_flag;
  s.entry_points = pps.tiles_enabled_flag || pps.entropy_coding_sync_enabled_flag;
  s.header_extension = pps.slice_segment_header_extension_present_flag;
  return s;
}

// A slice segment header to write: GstH265Parser's values, edited by a rewriter.
struct SliceEdit {
  int nal_type = 0;
  GstH265SliceHdr sh{};
  HeaderSyntax syn;
  Rps rps;                    // the slice's RPS (written explicitly when short_term_ref_pic_set_sps_flag is 0)
  std::vector<int> rps_bits;  // or, when not empty, st_ref_pic_set(num_short_term_ref_pic_sets) as coded
  bool drop = false;          // leave the NAL unit out
};

// 7.3.6.3 pred_weight_table() from GstH265Parser's values.
void put_pred_weight_table(std::vector<int>& b, const GstH265SliceHdr& sh, bool chroma) {
  const GstH265PredWeightTable& t = sh.pred_weight_table;
  put_ue(b, t.luma_log2_weight_denom);
  if (chroma) put_se(b, t.delta_chroma_log2_weight_denom);
  for (int X = 0; X < (sh.type == GST_H265_B_SLICE ? 2 : 1); ++X) {
    const int n = (X ? sh.num_ref_idx_l1_active_minus1 : sh.num_ref_idx_l0_active_minus1) + 1;
    const guint8* lf = X ? t.luma_weight_l1_flag : t.luma_weight_l0_flag;
    const guint8* cf = X ? t.chroma_weight_l1_flag : t.chroma_weight_l0_flag;
    for (int i = 0; i < n; ++i) b.push_back(lf[i]);
    if (chroma)
      for (int i = 0; i < n; ++i) b.push_back(cf[i]);
    for (int i = 0; i < n; ++i) {
      if (lf[i]) {
        put_se(b, X ? t.delta_luma_weight_l1[i] : t.delta_luma_weight_l0[i]);
        put_se(b, X ? t.luma_offset_l1[i] : t.luma_offset_l0[i]);
      }
      if (chroma && cf[i])
        for (int j = 0; j < 2; ++j) {
          put_se(b, X ? t.delta_chroma_weight_l1[i][j] : t.delta_chroma_weight_l0[i][j]);
          put_se(b, X ? t.delta_chroma_offset_l1[i][j] : t.delta_chroma_offset_l0[i][j]);
        }
    }
  }
}

// 7.3.6.1 slice_segment_header() up to byte_alignment(), from `e`.
std::vector<int> slice_header_bits(const SliceEdit& e, const GstH265SPS& sps) {
  const GstH265SliceHdr& sh = e.sh;
  const HeaderSyntax& s = e.syn;
  std::vector<int> b;
  b.push_back(sh.first_slice_segment_in_pic_flag);
  if (e.nal_type >= GST_H265_NAL_SLICE_BLA_W_LP && e.nal_type <= 23) b.push_back(sh.no_output_of_prior_pics_flag);
  put_ue(b, sh.pps->id);
  if (!sh.first_slice_segment_in_pic_flag) {
    if (s.dependent_slices) b.push_back(sh.dependent_slice_segment_flag);
    put_u(b, sh.segment_address, s.address_bits);
  }
  if (!sh.dependent_slice_segment_flag) {
    for (int i = 0; i < s.extra_bits; ++i) b.push_back(0);  // slice_reserved_flag
    put_ue(b, sh.type);
    if (s.output_flag_present) b.push_back(sh.pic_output_flag);
    if (s.separate_planes) put_u(b, sh.colour_plane_id, 2);
    int num_pic_total_curr = 0;
    if (e.nal_type != GST_H265_NAL_SLICE_IDR_W_RADL && e.nal_type != GST_H265_NAL_SLICE_IDR_N_LP) {
      put_u(b, sh.pic_order_cnt_lsb, s.log2_max_poc_lsb);
      b.push_back(sh.short_term_ref_pic_set_sps_flag);
      if (!sh.short_term_ref_pic_set_sps_flag) {
        if (!e.rps_bits.empty()) {
          b.insert(b.end(), e.rps_bits.begin(), e.rps_bits.end());
        } else {
          if (s.num_st_rps) b.push_back(0);  // inter_ref_pic_set_prediction_flag
          put_rps_explicit(b, e.rps);
        }
      } else {
        if (s.num_st_rps > 1) put_u(b, sh.short_term_ref_pic_set_idx, ceil_log2(s.num_st_rps));
      }
      for (int u : e.rps.u0) num_pic_total_curr += u;
      for (int u : e.rps.u1) num_pic_total_curr += u;
      if (s.lt_present) {
        if (s.num_lt_sps > 0) put_ue(b, sh.num_long_term_sps);
        put_ue(b, sh.num_long_term_pics);
        for (int i = 0; i < sh.num_long_term_sps + sh.num_long_term_pics; ++i) {
          if (i < sh.num_long_term_sps) {
            if (s.num_lt_sps > 1) put_u(b, sh.lt_idx_sps[i], ceil_log2(s.num_lt_sps));
            num_pic_total_curr += sps.used_by_curr_pic_lt_sps_flag[sh.lt_idx_sps[i]];
          } else {
            put_u(b, sh.poc_lsb_lt[i], s.log2_max_poc_lsb);
            b.push_back(sh.used_by_curr_pic_lt_flag[i]);
            num_pic_total_curr += sh.used_by_curr_pic_lt_flag[i];
          }
          b.push_back(sh.delta_poc_msb_present_flag[i]);
          if (sh.delta_poc_msb_present_flag[i]) put_ue(b, sh.delta_poc_msb_cycle_lt[i]);
        }
      }
      if (s.sps_tmvp) b.push_back(sh.temporal_mvp_enabled_flag);
    }
    if (s.sao) {
      b.push_back(sh.sao_luma_flag);
      if (s.chroma) b.push_back(sh.sao_chroma_flag);
    }
    if (sh.type != GST_H265_I_SLICE) {
      const bool B = sh.type == GST_H265_B_SLICE;
      b.push_back(sh.num_ref_idx_active_override_flag);
      if (sh.num_ref_idx_active_override_flag) {
        put_ue(b, sh.num_ref_idx_l0_active_minus1);
        if (B) put_ue(b, sh.num_ref_idx_l1_active_minus1);
      }
      if (s.lists_mod && num_pic_total_curr > 1) {  // 7.3.6.2
        const GstH265RefPicListModification& m = sh.ref_pic_list_modification;
        b.push_back(m.ref_pic_list_modification_flag_l0);
        if (m.ref_pic_list_modification_flag_l0)
          for (int i = 0; i <= sh.num_ref_idx_l0_active_minus1; ++i)
            put_u(b, m.list_entry_l0[i], ceil_log2(num_pic_total_curr));
        if (B) {
          b.push_back(m.ref_pic_list_modification_flag_l1);
          if (m.ref_pic_list_modification_flag_l1)
            for (int i = 0; i <= sh.num_ref_idx_l1_active_minus1; ++i)
              put_u(b, m.list_entry_l1[i], ceil_log2(num_pic_total_curr));
        }
      }
      if (B) b.push_back(sh.mvd_l1_zero_flag);
      if (s.cabac_init_present) b.push_back(sh.cabac_init_flag);
      if (sh.temporal_mvp_enabled_flag) {
        if (B) b.push_back(sh.collocated_from_l0_flag);
        if ((sh.collocated_from_l0_flag && sh.num_ref_idx_l0_active_minus1 > 0) ||
            (!sh.collocated_from_l0_flag && sh.num_ref_idx_l1_active_minus1 > 0))
          put_ue(b, sh.collocated_ref_idx);
      }
      if ((s.weighted_pred && sh.type == GST_H265_P_SLICE) || (s.weighted_bipred && B))
        put_pred_weight_table(b, sh, s.chroma);
      put_ue(b, sh.five_minus_max_num_merge_cand);
    }
    put_se(b, sh.qp_delta);
    if (s.chroma_qp_offsets) {
      put_se(b, sh.cb_qp_offset);
      put_se(b, sh.cr_qp_offset);
    }
    if (s.dbk_override_enabled) b.push_back(sh.deblocking_filter_override_flag);
    const bool override = s.dbk_override_enabled && sh.deblocking_filter_override_flag;
    if (override) {
      b.push_back(sh.deblocking_filter_disabled_flag);
      if (!sh.deblocking_filter_disabled_flag) {
        put_se(b, sh.beta_offset_div2);
        put_se(b, sh.tc_offset_div2);
      }
    }
    const bool disabled = override ? sh.deblocking_filter_disabled_flag : s.pps_dbk_disabled;
    if (s.lf_across_slices && (sh.sao_luma_flag || sh.sao_chroma_flag || !disabled))
      b.push_back(sh.loop_filter_across_slices_enabled_flag);
  }
  if (s.entry_points) {
    put_ue(b, sh.num_entry_point_offsets);
    if (sh.num_entry_point_offsets) {
      put_ue(b, sh.offset_len_minus1);
      for (guint32 i = 0; i < sh.num_entry_point_offsets; ++i)
        put_u(b, sh.entry_point_offset_minus1[i], sh.offset_len_minus1 + 1);
    }
  }
  if (s.header_extension) put_ue(b, 0);  // slice_segment_header_extension_length
  return b;
}

// Runs `stream` through GstH265Parser and writes it again: each parameter set through
// `on_ps` (RBSP bits in, false: cannot rewrite), each slice segment header through `on_slice`
// (false: cannot rewrite), everything else as it was. Slice data is copied unchanged.
// Returns an empty vector on failure.
using PsEdit = std::function<bool(int type, const std::vector<uint8_t>& rbsp, std::vector<int>& bits)>;
using SliceEditFn = std::function<bool(SliceEdit& e)>;
std::vector<uint8_t> rewrite_headers(const std::vector<uint8_t>& stream, const PsEdit& on_ps,
                                     const SliceEditFn& on_slice) {
  GstH265Parser* parser = gst_h265_parser_new();
  std::vector<uint8_t> out;
  bool ok = true;
  for (const auto& [b, e] : split_nals(stream)) {
    const int type = (stream[b] >> 1) & 0x3f;
    GstH265NalUnit nalu;
    if (gst_h265_parser_identify_nalu_unchecked(parser, stream.data(), guint(b - 3), stream.size(), &nalu) !=
        GST_H265_PARSER_OK) {
      ok = false;
      break;
    }
    const std::vector<uint8_t> rbsp = rbsp_of(stream, b, e);
    if (type >= GST_H265_NAL_VPS && type <= GST_H265_NAL_PPS) {
      GstH265VPS vps;
      GstH265SPS sps;
      GstH265PPS pps;
      if (type == GST_H265_NAL_VPS) gst_h265_parser_parse_vps(parser, &nalu, &vps);
      if (type == GST_H265_NAL_SPS) gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE);
      if (type == GST_H265_NAL_PPS) gst_h265_parser_parse_pps(parser, &nalu, &pps);
      std::vector<int> bits = to_bits(rbsp, rbsp.size() * 8);
      drop_trailing_bits(bits);
      if (!on_ps(type, rbsp, bits)) {
        ok = false;
        break;
      }
      add_trailing_bits(bits);
      put_nal(out, &stream[b], bits, {});
      continue;
    }
    if (type <= GST_H265_NAL_SLICE_CRA_NUT) {
      SliceEdit ed;
      if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &ed.sh) != GST_H265_PARSER_OK) {
        ok = false;
        break;
      }
      const GstH265SPS& sps = *ed.sh.pps->sps;
      const size_t hpos = ed.sh.header_size - 8 * ed.sh.n_emulation_prevention_bytes;
      const size_t data_byte = (hpos % 8) ? (hpos + 8) / 8 : hpos / 8;
      ed.nal_type = type;
      ed.syn = header_syntax(sps, *ed.sh.pps);
      ed.rps = rps_of(ed.sh.short_term_ref_pic_set_sps_flag
                          ? sps.short_term_ref_pic_set[ed.sh.short_term_ref_pic_set_idx]
                          : ed.sh.short_term_ref_pic_sets);
      GstH265SliceHdr original = ed.sh;
      const bool written = data_byte <= rbsp.size() && on_slice(ed);
      if (written && !ed.drop) {
        std::vector<int> bits = slice_header_bits(ed, sps);
        add_trailing_bits(bits);  // byte_alignment()
        const uint8_t header[2] = {uint8_t((stream[b] & 0x81) | (ed.nal_type << 1)), stream[b + 1]};
        put_nal(out, header, bits, std::vector<uint8_t>(rbsp.begin() + long(data_byte), rbsp.end()));
      }
      gst_h265_slice_hdr_free(&original);
      if (!written) {
        ok = false;
        break;
      }
      continue;
    }
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), stream.begin() + long(b), stream.begin() + long(e));
  }
  gst_h265_parser_free(parser);
  if (!ok) out.clear();
  return out;
}

bool keep_ps(int, const std::vector<uint8_t>&, std::vector<int>&) { return true; }

}  // namespace

int slice_header_writer_mismatches(const std::vector<uint8_t>& stream) {
  int n = 0;
  const std::vector<uint8_t> again = rewrite_headers(stream, keep_ps, [](SliceEdit&) { return true; });
  if (again.empty()) return -1;
  const auto a = split_nals(stream), b = split_nals(again);
  if (a.size() != b.size()) return -1;
  for (size_t i = 0; i < a.size(); ++i)
    n += !std::equal(stream.begin() + long(a[i].first), stream.begin() + long(a[i].second),
                     again.begin() + long(b[i].first), again.begin() + long(b[i].second));
  return n;
}

std::vector<uint8_t> with_bla(const std::vector<uint8_t>& stream, int bla_type, int* n_skipped) {
  *n_skipped = 0;
  bool seen_irap = false, after_bla = false;
  const bool drop_rasl = bla_type != GST_H265_NAL_SLICE_BLA_W_LP;
  return rewrite_headers(stream, keep_ps, [&](SliceEdit& e) {
    const bool rasl = e.nal_type == GST_H265_NAL_SLICE_RASL_N || e.nal_type == GST_H265_NAL_SLICE_RASL_R;
    const bool radl = e.nal_type == GST_H265_NAL_SLICE_RADL_N || e.nal_type == GST_H265_NAL_SLICE_RADL_R;
    if (e.nal_type >= GST_H265_NAL_SLICE_BLA_W_LP && e.nal_type <= 23) {
      after_bla = seen_irap && e.nal_type == GST_H265_NAL_SLICE_CRA_NUT;
      if (after_bla) e.nal_type = bla_type;
      seen_irap = true;
    } else if (after_bla && rasl) {
      // not output after a BLA_W_LP (NoRaslOutputFlag 1); not allowed after the other types
      // (7.4.2.2), so left out
      *n_skipped += e.sh.first_slice_segment_in_pic_flag;
      e.drop = drop_rasl;
    } else if (after_bla && radl && bla_type == GST_H265_NAL_SLICE_BLA_N_LP) {
      return false;  // BLA_N_LP has no leading pictures
    }
    return true;
  });
}

std::vector<uint8_t> with_no_output_of_prior_pics(const std::vector<uint8_t>& stream, bool flag, int* n_changed) {
  *n_changed = 0;
  int pictures = 0;
  return rewrite_headers(stream, keep_ps, [&](SliceEdit& e) {
    pictures += e.sh.first_slice_segment_in_pic_flag;
    if (e.nal_type >= GST_H265_NAL_SLICE_BLA_W_LP && e.nal_type <= GST_H265_NAL_SLICE_IDR_N_LP && pictures > 1) {
      *n_changed += e.sh.first_slice_segment_in_pic_flag && e.sh.no_output_of_prior_pics_flag != flag;
      e.sh.no_output_of_prior_pics_flag = flag;
    }
    return true;
  });
}

std::vector<uint8_t> with_sps_rps(const std::vector<uint8_t>& stream, bool one_in_slices, int* n_from_sps) {
  *n_from_sps = 0;
  // the distinct slice RPSs in order of appearance
  std::vector<Rps> sets;
  bool plain = true;
  rewrite_headers(stream, keep_ps, [&](SliceEdit& e) {
    plain &= !e.sh.short_term_ref_pic_set_sps_flag;
    if (e.nal_type != GST_H265_NAL_SLICE_IDR_W_RADL && e.nal_type != GST_H265_NAL_SLICE_IDR_N_LP &&
        !e.sh.dependent_slice_segment_flag && std::find(sets.begin(), sets.end(), e.rps) == sets.end())
      sets.push_back(e.rps);
    return true;
  });
  if (!plain || sets.size() < (one_in_slices ? 3u : 1u)) return {};
  // with one_in_slices, the last of them stays in the slice headers
  const Rps kept = sets.back();
  if (one_in_slices) sets.pop_back();
  const int num = int(sets.size());
  return rewrite_headers(
      stream,
      [&](int type, const std::vector<uint8_t>& rbsp, std::vector<int>& bits) {
        if (type != GST_H265_NAL_SPS) return true;
        size_t pos;
        if (!sps_num_st_rps_field(rbsp, pos)) return false;
        std::vector<int> nb(bits.begin(), bits.begin() + long(pos));
        put_ue(nb, unsigned(num));  // num_short_term_ref_pic_sets
        for (int i = 0; i < num; ++i) {  // st_ref_pic_set(i): predicted from set i - 1 where it can be
          std::vector<int> pred;
          const bool inter = i && put_rps_predicted(pred, sets[i - 1], sets[i]);
          if (i) nb.push_back(inter);  // inter_ref_pic_set_prediction_flag
          if (inter)
            nb.insert(nb.end(), pred.begin(), pred.end());
          else
            put_rps_explicit(nb, sets[i]);
        }
        nb.insert(nb.end(), bits.begin() + long(pos + 1), bits.end());
        bits = nb;
        return true;
      },
      [&](SliceEdit& e) {
        e.syn.num_st_rps = num;
        if (e.nal_type == GST_H265_NAL_SLICE_IDR_W_RADL || e.nal_type == GST_H265_NAL_SLICE_IDR_N_LP ||
            e.sh.dependent_slice_segment_flag)
          return true;
        const auto it = std::find(sets.begin(), sets.end(), e.rps);
        if (it != sets.end()) {
          e.sh.short_term_ref_pic_set_sps_flag = 1;
          e.sh.short_term_ref_pic_set_idx = guint8(it - sets.begin());
          *n_from_sps += e.sh.first_slice_segment_in_pic_flag;
          return true;
        }
        if (!(e.rps == kept)) return false;
        // st_ref_pic_set(num_short_term_ref_pic_sets): predicted from the earliest SPS set that
        // allows it (delta_idx_minus1 = num - 1 - RefRpsIdx), else explicit
        e.rps_bits.push_back(1);  // inter_ref_pic_set_prediction_flag
        for (int ref = 0; ref < num; ++ref) {
          std::vector<int> pred;
          if (!put_rps_predicted(pred, sets[ref], kept)) continue;
          put_ue(e.rps_bits, unsigned(num - 1 - ref));  // delta_idx_minus1
          e.rps_bits.insert(e.rps_bits.end(), pred.begin(), pred.end());
          return true;
        }
        e.rps_bits = {0};
        put_rps_explicit(e.rps_bits, kept);
        return true;
      });
}

namespace {

// 7.3.4 scaling_list_data() of lists 16 + slope * (x + y) (ScalingFactor in raster order, so
// coded in up-right diagonal order): `pred[sizeId][matrixId]` > 0 codes the list as a copy,
// scaling_list_pred_matrix_id_delta = pred (the slope then must be the reference list's), -1
// as the default list (delta 0); `dc` is scaling_list_dc_coef_minus8 + 8 of 16x16 and 32x32.
void put_scaling_list_data(std::vector<int>& b, const int slope[4][6], const int pred[4][6], const int dc[4][6]) {
  for (int size_id = 0; size_id < 4; ++size_id)
    for (int m = 0; m < 6; m += size_id == 3 ? 3 : 1) {
      b.push_back(pred[size_id][m] == 0);  // scaling_list_pred_mode_flag
      if (pred[size_id][m]) {
        put_ue(b, unsigned(pred[size_id][m] < 0 ? 0 : pred[size_id][m]));
        continue;
      }
      const int n = size_id ? 8 : 4;
      int next = 8;
      if (size_id > 1) {
        put_se(b, dc[size_id][m] - 8);  // scaling_list_dc_coef_minus8
        next = dc[size_id][m];
      }
      // 6.5.3 up-right diagonal scan of an n x n block
      for (int d = 0; d < 2 * n - 1; ++d)
        for (int y = std::min(d, n - 1); y >= 0 && d - y < n; --y) {
          const int v = 16 + slope[size_id][m] * d;  // x + y = d
          int delta = v - next;
          if (delta > 127) delta -= 256;
          if (delta < -128) delta += 256;
          put_se(b, delta);  // scaling_list_delta_coef
          next = v;
        }
    }
}

}  // namespace

std::vector<uint8_t> with_pps_scaling_lists(const std::vector<uint8_t>& stream, int* n_pps) {
  *n_pps = 0;
  // slope per sizeId and matrixId; copies (pred > 0) repeat the slope of the list they copy.
  // 32x32: matrixId 0 coded, matrixId 3 its copy (delta 1, refMatrixId = 3 - 1 * 3). libde265
  // 1.0.11 scales inter 32x32 luma with a list made from the 8x8 intra Cb list (DC = its first
  // coefficient): both 32x32 lists equal that list (slope 5, DC 16) so dec265 stays valid.
  static const int slope[4][6] = {{1, 1, 0, 3, 1, 3}, {2, 5, 5, 1, 4, 4}, {1, 4, 2, 1, 2, 2}, {5, 0, 0, 5, 0, 0}};
  static const int pred[4][6] = {{0, 1, -1, 0, 3, 2}, {0, 0, 1, 0, 0, 1}, {0, 0, 0, 3, 0, 1}, {0, 0, 0, 1, 0, 0}};
  static const int dc[4][6] = {{}, {}, {20, 12, 24, 0, 30, 0}, {16, 0, 0, 0, 0, 0}};
  return rewrite_headers(
      stream,
      [&](int type, const std::vector<uint8_t>& rbsp, std::vector<int>& bits) {
        if (type != GST_H265_NAL_PPS) return true;
        PpsLayout l;
        if (!pps_layout(rbsp, l)) return false;
        std::vector<int> nb(bits.begin(), bits.begin() + long(l.scaling_list));
        nb.push_back(1);  // pps_scaling_list_data_present_flag
        put_scaling_list_data(nb, slope, pred, dc);
        nb.insert(nb.end(), bits.begin() + long(l.scaling_list + 1), bits.end());
        bits = nb;
        ++*n_pps;
        return true;
      },
      [](SliceEdit& e) { return e.sh.pps->sps->scaling_list_enabled_flag != 0; });
}

std::vector<uint8_t> with_slice_chroma_qp_offsets(const std::vector<uint8_t>& stream, int* n_slices) {
  *n_slices = 0;
  static const int kOffsets[][2] = {{3, -2}, {-4, 5}, {0, 0}, {7, -6}, {-12, 12}};
  int picture = -1, slice = 0;
  return rewrite_headers(
      stream,
      [](int type, const std::vector<uint8_t>& rbsp, std::vector<int>& bits) {
        PpsLayout l;
        if (type != GST_H265_NAL_PPS) return true;
        if (!pps_layout(rbsp, l)) return false;
        bits[l.slice_chroma_qp_offsets] = 1;
        return true;
      },
      [&](SliceEdit& e) {
        e.syn.chroma_qp_offsets = true;
        if (e.sh.dependent_slice_segment_flag) return true;
        if (e.sh.first_slice_segment_in_pic_flag) ++picture, slice = 0;
        const int* o = kOffsets[size_t(picture + slice++) % (sizeof(kOffsets) / sizeof(kOffsets[0]))];
        // 7.4.7.1: pps_cb_qp_offset + slice_cb_qp_offset in -12..12 (the same for Cr)
        e.sh.cb_qp_offset = gint8(std::clamp(o[0] + e.sh.pps->cb_qp_offset, -12, 12) - e.sh.pps->cb_qp_offset);
        e.sh.cr_qp_offset = gint8(std::clamp(o[1] + e.sh.pps->cr_qp_offset, -12, 12) - e.sh.pps->cr_qp_offset);
        *n_slices += e.sh.cb_qp_offset || e.sh.cr_qp_offset;
        return true;
      });
}

std::vector<uint8_t> with_other_collocated_picture(const std::vector<uint8_t>& stream, int* n_slices) {
  *n_slices = 0;
  return rewrite_headers(stream, keep_ps, [&](SliceEdit& e) {
    GstH265SliceHdr& sh = e.sh;
    if (sh.dependent_slice_segment_flag || sh.type == GST_H265_I_SLICE || !sh.temporal_mvp_enabled_flag) return true;
    const int from_l0 = sh.type == GST_H265_B_SLICE ? !sh.collocated_from_l0_flag : 1;
    const int last = from_l0 ? sh.num_ref_idx_l0_active_minus1 : sh.num_ref_idx_l1_active_minus1;
    *n_slices += from_l0 != sh.collocated_from_l0_flag || last != sh.collocated_ref_idx;
    sh.collocated_from_l0_flag = guint8(from_l0);
    sh.collocated_ref_idx = guint8(last);
    return true;
  });
}

std::vector<uint8_t> with_slice_deblocking(const std::vector<uint8_t>& stream, const SliceDeblocking& d,
                                           int* n_overridden) {
  *n_overridden = 0;
  int picture = -1, slice = 0;
  return rewrite_headers(
      stream,
      [&](int type, const std::vector<uint8_t>& rbsp, std::vector<int>& bits) {
        if (type != GST_H265_NAL_PPS) return true;
        PpsLayout l;
        if (!pps_layout(rbsp, l)) return false;
        std::vector<int> nb(bits.begin(), bits.begin() + long(l.lf_across_slices));
        nb.push_back(d.pps_loop_filter_across_slices);
        nb.push_back(1);  // deblocking_filter_control_present_flag
        nb.push_back(1);  // deblocking_filter_override_enabled_flag
        nb.push_back(d.pps_disabled);
        if (!d.pps_disabled) {
          put_se(nb, d.pps_beta_offset_div2);
          put_se(nb, d.pps_tc_offset_div2);
        }
        nb.insert(nb.end(), bits.begin() + long(l.scaling_list), bits.end());
        bits = nb;
        return true;
      },
      [&](SliceEdit& e) {
        e.syn.lf_across_slices = d.pps_loop_filter_across_slices;
        e.syn.dbk_override_enabled = true;
        e.syn.pps_dbk_disabled = d.pps_disabled;
        if (e.sh.dependent_slice_segment_flag) return true;
        if (e.sh.first_slice_segment_in_pic_flag) ++picture, slice = 0;
        const SliceDeblocking::Slice& s = d.slices[size_t(picture + slice++) % d.slices.size()];
        e.sh.deblocking_filter_override_flag = s.override;
        e.sh.deblocking_filter_disabled_flag = s.disabled;
        e.sh.beta_offset_div2 = gint8(s.beta_offset_div2);
        e.sh.tc_offset_div2 = gint8(s.tc_offset_div2);
        e.sh.loop_filter_across_slices_enabled_flag = s.loop_filter_across_slices;
        *n_overridden += s.override;
        return true;
      });
}

size_t nth_nal_offset(const std::vector<uint8_t>& stream, int nal_type, int n) {
  for (size_t i = 0; i + 4 < stream.size(); ++i) {
    if (stream[i] || stream[i + 1] || stream[i + 2] != 1) continue;
    if (((stream[i + 3] >> 1) & 0x3f) == nal_type && n-- == 0) return (i > 0 && !stream[i - 1]) ? i - 1 : i;
  }
  return stream.size();
}

}  // namespace gvc::test
