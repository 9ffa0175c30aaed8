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
        f.scaling_list_data += sps.scaling_list_enabled_flag && sps.scaling_list_data_present_flag;
        f.max_tb_log2 = std::max(f.max_tb_log2, sps.log2_min_transform_block_size_minus2 + 2 +
                                                    sps.log2_diff_max_min_transform_block_size);
      }
    } else if (nalu.type == GST_H265_NAL_PPS) {
      GstH265PPS pps;
      gst_h265_parser_parse_pps(parser, &nalu, &pps);
    } else if (nalu.type <= GST_H265_NAL_SLICE_CRA_NUT) {
      GstH265SliceHdr sh;
      if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) continue;
      if (sh.type <= 2) ++f.slices[sh.type];
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

size_t nth_nal_offset(const std::vector<uint8_t>& stream, int nal_type, int n) {
  for (size_t i = 0; i + 4 < stream.size(); ++i) {
    if (stream[i] || stream[i + 1] || stream[i + 2] != 1) continue;
    if (((stream[i + 3] >> 1) & 0x3f) == nal_type && n-- == 0) return (i > 0 && !stream[i - 1]) ? i - 1 : i;
  }
  return stream.size();
}

}  // namespace gvc::test
