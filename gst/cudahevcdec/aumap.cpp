// aumap.cpp: hvcC parsing, length-prefixed to Annex B, and per-access-unit POC tracking for cudahevcdec
#include "gst/cudahevcdec/aumap.h"

#include <gst/codecparsers/gsth265parser.h>

#include <algorithm>
#include <cstring>

namespace gvc::hevcdec {
namespace {

const uint8_t kStartCode[4] = {0, 0, 0, 1};

void append_nal(std::vector<uint8_t>& out, const uint8_t* nal, size_t size) {
  out.insert(out.end(), kStartCode, kStartCode + 4);
  out.insert(out.end(), nal, nal + size);
}

bool is_irap(int t) { return t >= GST_H265_NAL_SLICE_BLA_W_LP && t <= 23; }
bool is_idr(int t) { return t == GST_H265_NAL_SLICE_IDR_W_RADL || t == GST_H265_NAL_SLICE_IDR_N_LP; }
bool is_bla(int t) { return t >= GST_H265_NAL_SLICE_BLA_W_LP && t <= GST_H265_NAL_SLICE_BLA_N_LP; }
bool is_rasl(int t) { return t == GST_H265_NAL_SLICE_RASL_N || t == GST_H265_NAL_SLICE_RASL_R; }
bool is_radl(int t) { return t == GST_H265_NAL_SLICE_RADL_N || t == GST_H265_NAL_SLICE_RADL_R; }
// sub-layer non-reference picture: the even VCL types below 16
bool is_slnr(int t) { return t <= 14 && (t % 2) == 0; }
// the slice NAL unit types the engine decodes
bool is_decoded_slice(int t) { return t <= GST_H265_NAL_SLICE_CRA_NUT && (t <= 9 || t >= 16); }

}  // namespace

bool parse_hvcc(const uint8_t* data, size_t size, int& nal_length_size,
                std::vector<uint8_t>& annexb) {
  if (size < 23) return false;
  const int len = (data[21] & 3) + 1;
  if (len == 3) return false;
  nal_length_size = len;
  const int num_arrays = data[22];
  size_t pos = 23;
  for (int a = 0; a < num_arrays; ++a) {
    if (pos + 3 > size) return false;
    const int num_nalus = (data[pos + 1] << 8) | data[pos + 2];
    pos += 3;
    for (int n = 0; n < num_nalus; ++n) {
      if (pos + 2 > size) return false;
      const size_t nal_size = (size_t(data[pos]) << 8) | data[pos + 1];
      pos += 2;
      if (nal_size > size - pos) return false;
      if (nal_size) append_nal(annexb, data + pos, nal_size);
      pos += nal_size;
    }
  }
  return true;
}

bool length_prefixed_to_annexb(const uint8_t* data, size_t size, int nal_length_size,
                               std::vector<uint8_t>& out) {
  size_t pos = 0;
  while (pos < size) {
    if (size - pos < size_t(nal_length_size)) return false;
    size_t nal_size = 0;
    for (int i = 0; i < nal_length_size; ++i) nal_size = (nal_size << 8) | data[pos + i];
    pos += nal_length_size;
    if (nal_size > size - pos) {
      append_nal(out, data + pos, size - pos);
      return false;
    }
    if (nal_size) append_nal(out, data + pos, nal_size);
    pos += nal_size;
  }
  return true;
}

struct AuTracker::Parser {
  GstH265Parser* p = gst_h265_parser_new();
  ~Parser() { gst_h265_parser_free(p); }
};

AuTracker::AuTracker() : parser_(new Parser) {}
AuTracker::~AuTracker() { delete parser_; }

void AuTracker::restart() {
  first_picture_ = true;
  seen_irap_ = false;
  no_rasl_output_ = true;
  prev_tid0_poc_ = 0;
}

std::vector<uint8_t> AuTracker::parameter_sets() const {
  std::vector<uint8_t> out;
  for (const auto& [key, nal] : param_sets_) append_nal(out, nal.data(), nal.size());
  return out;
}

AuInfo AuTracker::inspect(const uint8_t* data, size_t size) {
  AuInfo info;
  GstH265Parser* parser = parser_->p;
  GstH265NalUnit nalu;
  guint offset = 0;
  while (offset < size) {
    const GstH265ParserResult r = gst_h265_parser_identify_nalu(parser, data, offset, guint(size), &nalu);
    if (r != GST_H265_PARSER_OK && r != GST_H265_PARSER_NO_NAL_END) break;
    offset = nalu.offset + nalu.size;
    const uint8_t* nal = nalu.data + nalu.offset;
    switch (nalu.type) {
      case GST_H265_NAL_VPS: {
        GstH265VPS vps;
        if (gst_h265_parser_parse_vps(parser, &nalu, &vps) == GST_H265_PARSER_OK)
          param_sets_[nalu.type * 256 + vps.id].assign(nal, nal + nalu.size);
        break;
      }
      case GST_H265_NAL_SPS: {
        GstH265SPS sps;
        if (gst_h265_parser_parse_sps(parser, &nalu, &sps, TRUE) == GST_H265_PARSER_OK)
          param_sets_[nalu.type * 256 + sps.id].assign(nal, nal + nalu.size);
        break;
      }
      case GST_H265_NAL_PPS: {
        GstH265PPS pps;
        if (gst_h265_parser_parse_pps(parser, &nalu, &pps) == GST_H265_PARSER_OK)
          param_sets_[nalu.type * 256 + pps.id].assign(nal, nal + nalu.size);
        break;
      }
      case GST_H265_NAL_EOS:
        first_picture_ = true;
        break;
      default: {
        if (!is_decoded_slice(nalu.type) || info.has_picture) break;
        GstH265SliceHdr sh;
        std::memset(&sh, 0, sizeof(sh));
        if (gst_h265_parser_parse_slice_hdr(parser, &nalu, &sh) != GST_H265_PARSER_OK) {
          info.has_picture = true;  // a picture of unknown POC: its frame is not waited for
          break;
        }
        if (sh.first_slice_segment_in_pic_flag && sh.pps && sh.pps->sps) {
          const GstH265SPS& sps = *sh.pps->sps;
          const int t = nalu.type;
          info.has_picture = true;
          info.max_num_reorder = sps.max_num_reorder_pics[sps.max_sub_layers_minus1];
          if (is_irap(t)) {
            seen_irap_ = true;
            no_rasl_output_ = is_idr(t) || is_bla(t) || first_picture_;
          }
          if (!seen_irap_ || (is_rasl(t) && no_rasl_output_)) {
            info.skipped = true;
          } else {
            // 8.3.1, as the engine derives it
            const bool irap_no_rasl = is_irap(t) && no_rasl_output_;
            const int max_lsb = 1 << (sps.log2_max_pic_order_cnt_lsb_minus4 + 4);
            const int lsb = sh.pic_order_cnt_lsb;
            int msb = 0;
            if (!irap_no_rasl) {
              const int prev_lsb = prev_tid0_poc_ & (max_lsb - 1);
              const int prev_msb = prev_tid0_poc_ - prev_lsb;
              if (lsb < prev_lsb && prev_lsb - lsb >= max_lsb / 2)
                msb = prev_msb + max_lsb;
              else if (lsb > prev_lsb && lsb - prev_lsb > max_lsb / 2)
                msb = prev_msb - max_lsb;
              else
                msb = prev_msb;
            }
            info.poc = msb + lsb;
            info.poc_known = true;
            if (nalu.temporal_id_plus1 == 1 && !is_rasl(t) && !is_radl(t) && !is_slnr(t))
              prev_tid0_poc_ = info.poc;
            if (irap_no_rasl) {
              ++cvs_;
              info.new_cvs = true;
            }
            first_picture_ = false;
          }
          info.cvs = cvs_;
        }
        gst_h265_slice_hdr_free(&sh);
        break;
      }
    }
  }
  return info;
}

void FrameQueue::mark_corrupt(uint32_t frame_number) {
  for (auto& f : q_)
    if (f.frame_number == frame_number) f.corrupt = true;
}

bool FrameQueue::match(int poc, PendingFrame& out, std::vector<uint32_t>& stale) {
  auto it = std::find_if(q_.begin(), q_.end(), [poc](const PendingFrame& f) { return f.poc == poc; });
  if (it == q_.end()) return false;
  out = *it;
  q_.erase(it);
  for (auto i = q_.begin(); i != q_.end();) {
    if (i->cvs < out.cvs || (i->cvs == out.cvs && i->poc < out.poc)) {
      stale.push_back(i->frame_number);
      i = q_.erase(i);
    } else {
      ++i;
    }
  }
  return true;
}

void FrameQueue::drop_before(uint64_t cvs, std::vector<uint32_t>& stale) {
  for (auto i = q_.begin(); i != q_.end();) {
    if (i->cvs < cvs) {
      stale.push_back(i->frame_number);
      i = q_.erase(i);
    } else {
      ++i;
    }
  }
}

void FrameQueue::take_all(std::vector<uint32_t>& stale) {
  for (const auto& f : q_) stale.push_back(f.frame_number);
  q_.clear();
}

}  // namespace gvc::hevcdec
