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

}  // namespace

std::string hevc_find_ffmpeg() {
  if (const char* e = getenv("FFMPEG")) return exists(e) ? e : "";
  const char* path = getenv("PATH");
  std::istringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (exists(dir + "/ffmpeg")) return dir + "/ffmpeg";
  return "";
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
  {
    std::ofstream f(in, std::ios::binary);
    f.write(reinterpret_cast<const char*>(stream.data()), std::streamsize(stream.size()));
  }
  std::string text;
  const int rc = run({hevc_find_ffmpeg(), "-nostdin", "-y", "-loglevel", "error", "-f", "hevc",
                      "-i", in, "-f", "rawvideo", "-pix_fmt", pix_fmt, out},
                     "", text);
  std::vector<uint8_t> raw = read_all(out);
  unlink(in.c_str());
  unlink(out.c_str());
  std::vector<std::vector<uint8_t>> frames;
  if (rc != 0 || !text.empty()) err = "ffmpeg decode failed or warned: " + text;
  for (size_t o = 0; o + frame_bytes <= raw.size(); o += frame_bytes)
    frames.emplace_back(raw.begin() + long(o), raw.begin() + long(o + frame_bytes));
  return frames;
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
      gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE);
    } else if (nalu.type == GST_H265_NAL_PPS) {
      GstH265PPS pps;
      gst_h265_parser_parse_pps(parser, &nalu, &pps);
    } else if (nalu.type <= GST_H265_NAL_SLICE_CRA_NUT) {
      GstH265SliceHdr sh;
      if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) continue;
      if (sh.type <= 2) ++f.slices[sh.type];
      if (sh.first_slice_segment_in_pic_flag) {
        if (nalu.type == GST_H265_NAL_SLICE_RASL_N || nalu.type == GST_H265_NAL_SLICE_RASL_R) ++f.rasl;
        if (nalu.type == GST_H265_NAL_SLICE_CRA_NUT) ++f.cra;
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
      }
      gst_h265_slice_hdr_free(&sh);
    }
  }
  gst_h265_parser_free(parser);
  return f;
}

size_t nth_nal_offset(const std::vector<uint8_t>& stream, int nal_type, int n) {
  for (size_t i = 0; i + 4 < stream.size(); ++i) {
    if (stream[i] || stream[i + 1] || stream[i + 2] != 1) continue;
    if (((stream[i + 3] >> 1) & 0x3f) == nal_type && n-- == 0) return (i > 0 && !stream[i - 1]) ? i - 1 : i;
  }
  return stream.size();
}

}  // namespace gvc::test
