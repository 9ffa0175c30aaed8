// dpb.cpp: POC derivation, RPS marking and DPB bumping (8.3.1, 8.3.2, 8.3.3, C.5.2)
#include "common/hevcdec/dpb.h"

#include <algorithm>

namespace gvc::hevc {

int Dpb::derive_poc(const GstH265SPS& sps, const GstH265SliceHdr& sh, bool irap_no_rasl,
                    bool tid0_candidate) {
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
  const int poc = msb + lsb;
  if (tid0_candidate) prev_tid0_poc_ = poc;
  return poc;
}

void Dpb::apply_rps(const GstH265SPS& sps, const GstH265SliceHdr& sh, int poc, bool idr,
                    bool irap_no_rasl, RefPicSet& rps, int width, int height, int bd_y, int bd_c) {
  rps = RefPicSet{};
  if (irap_no_rasl)
    for (auto& p : pics_) p->short_term_ref = p->long_term_ref = false;
  // An IRAP picture uses no reference (7.4.7.1: I slices only; 8.3.2: its RefPicSetStCurr* are
  // empty), and with NoRaslOutputFlag its RefPicSetStFoll/LtFoll could only keep pictures for
  // RASL pictures that are not decoded: a damaged RPS here must not generate pictures (which
  // before_decode would then remove while the RPS still points to them).
  if (idr || irap_no_rasl) return;

  const GstH265ShortTermRefPicSet* st = sh.short_term_ref_pic_set_sps_flag
                                            ? &sps.short_term_ref_pic_set[sh.short_term_ref_pic_set_idx]
                                            : &sh.short_term_ref_pic_sets;
  std::vector<int> poc_st_curr_before, poc_st_curr_after, poc_st_foll;
  for (int i = 0; i < st->NumNegativePics; ++i)
    (st->UsedByCurrPicS0[i] ? poc_st_curr_before : poc_st_foll).push_back(poc + st->DeltaPocS0[i]);
  for (int i = 0; i < st->NumPositivePics; ++i)
    (st->UsedByCurrPicS1[i] ? poc_st_curr_after : poc_st_foll).push_back(poc + st->DeltaPocS1[i]);

  const int max_lsb = 1 << (sps.log2_max_pic_order_cnt_lsb_minus4 + 4);
  struct Lt { int poc; bool msb; };
  std::vector<Lt> lt_curr, lt_foll;
  int delta_msb = 0;
  const int n_lt = sh.num_long_term_sps + sh.num_long_term_pics;
  for (int i = 0; i < n_lt && i < 16; ++i) {
    int poc_lt;
    bool used;
    if (i < sh.num_long_term_sps) {
      poc_lt = sps.lt_ref_pic_poc_lsb_sps[sh.lt_idx_sps[i]];
      used = sps.used_by_curr_pic_lt_sps_flag[sh.lt_idx_sps[i]];
    } else {
      poc_lt = sh.poc_lsb_lt[i];
      used = sh.used_by_curr_pic_lt_flag[i];
    }
    // 7-52 DeltaPocMsbCycleLt accumulates within each of the two groups
    if (i == 0 || i == sh.num_long_term_sps)
      delta_msb = sh.delta_poc_msb_cycle_lt[i];
    else
      delta_msb += sh.delta_poc_msb_cycle_lt[i];
    if (sh.delta_poc_msb_present_flag[i])
      poc_lt += poc - delta_msb * max_lsb - (poc & (max_lsb - 1));
    (used ? lt_curr : lt_foll).push_back({poc_lt, bool(sh.delta_poc_msb_present_flag[i])});
  }

  auto find = [&](int p, bool full, bool need_short) -> Picture* {
    for (auto& pic : pics_) {
      if (!pic->is_reference()) continue;
      if (need_short && !pic->short_term_ref) continue;
      const int v = full ? pic->poc : (pic->poc & (max_lsb - 1));
      if (v == p) return pic.get();
    }
    return nullptr;
  };
  // long-term first (8-5), then short-term (8-6); pictures in no list become unused.
  std::vector<Picture*> keep;
  for (const Lt& l : lt_curr) rps.lt_curr.push_back(find(l.poc, l.msb, false));
  for (const Lt& l : lt_foll) rps.lt_foll.push_back(find(l.poc, l.msb, false));
  for (int p : poc_st_curr_before) rps.st_curr_before.push_back(find(p, true, true));
  for (int p : poc_st_curr_after) rps.st_curr_after.push_back(find(p, true, true));
  for (int p : poc_st_foll) rps.st_foll.push_back(find(p, true, true));
  for (auto* v : {&rps.lt_curr, &rps.lt_foll})
    for (Picture* p : *v)
      if (p) {
        p->long_term_ref = true;
        p->short_term_ref = false;
      }
  for (auto& pic : pics_) {
    bool in = false;
    for (auto* v : {&rps.st_curr_before, &rps.st_curr_after, &rps.st_foll, &rps.lt_curr, &rps.lt_foll})
      for (Picture* p : *v) in |= p == pic.get();
    if (!in) pic->short_term_ref = pic->long_term_ref = false;
  }
  // 8.3.3.2 generation of unavailable reference pictures (only those the picture uses)
  auto generate = [&](std::vector<Picture*>& v, const std::vector<int>& pocs, bool lt) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i]) continue;
      std::shared_ptr<Picture> g = fresh_picture();
      g->allocate(width, height, bd_y, bd_c);
      for (int c = 0; c < 3; ++c)
        std::fill(g->buf[c].begin(), g->buf[c].end(), uint16_t(1 << ((c ? bd_c : bd_y) - 1)));
      g->poc = pocs[i];
      g->short_term_ref = !lt;
      g->long_term_ref = lt;
      g->decode_index = counter_++;
      g->samples_on_host = true;
      pics_.push_back(g);
      v[i] = g.get();
    }
  };
  generate(rps.st_curr_before, poc_st_curr_before, false);
  generate(rps.st_curr_after, poc_st_curr_after, false);
  std::vector<int> lt_pocs;
  for (const Lt& l : lt_curr) lt_pocs.push_back(l.poc);
  generate(rps.lt_curr, lt_pocs, true);
}

void Dpb::remove_unused() {
  size_t kept = 0;
  for (std::shared_ptr<Picture>& p : pics_) {
    if (!p->needed_for_output && !p->is_reference())
      removed.push_back(std::move(p));
    else
      pics_[kept++] = std::move(p);
  }
  pics_.resize(kept);
}

void Dpb::remove_all() {
  for (std::shared_ptr<Picture>& p : pics_) removed.push_back(std::move(p));
  pics_.clear();
}

// C.5.2.4 "bumping": the picture with the smallest POC is output.
void Dpb::bump() {
  Picture* best = nullptr;
  std::shared_ptr<Picture> best_sp;
  for (auto& p : pics_)
    if (p->needed_for_output && (!best || p->poc < best->poc)) {
      best = p.get();
      best_sp = p;
    }
  if (!best) return;
  best->needed_for_output = false;
  output.push_back(best_sp);
  remove_unused();
}

void Dpb::before_decode(const GstH265SPS& sps, bool irap_no_rasl_not_first,
                        bool no_output_of_prior_pics) {
  const int htid = sps.max_sub_layers_minus1;
  if (irap_no_rasl_not_first) {
    if (no_output_of_prior_pics) {
      remove_all();
    } else {
      for (auto& p : pics_) p->short_term_ref = p->long_term_ref = false;
      while (std::any_of(pics_.begin(), pics_.end(), [](auto& p) { return p->needed_for_output; })) bump();
      remove_all();
    }
    return;
  }
  remove_unused();
  const int max_latency = sps.max_latency_increase_plus1[htid]
                              ? sps.max_num_reorder_pics[htid] + sps.max_latency_increase_plus1[htid] - 1
                              : -1;
  for (;;) {
    int n_out = 0;
    bool latency = false;
    for (auto& p : pics_)
      if (p->needed_for_output) {
        ++n_out;
        if (max_latency >= 0 && p->pic_latency_count >= max_latency) latency = true;
      }
    const bool full = int(pics_.size()) >= sps.max_dec_pic_buffering_minus1[htid] + 1;
    if (n_out > sps.max_num_reorder_pics[htid] || latency || (full && n_out > 0))
      bump();
    else
      break;
  }
}

// A picture nobody holds any more is reused with its buffers (their pages are mapped already:
// a new 1080p picture costs about 8 MB of page faults), its fields reset.
std::shared_ptr<Picture> Dpb::share(const Picture* p) const {
  for (const std::shared_ptr<Picture>& q : pool_)
    if (q.get() == p) return q;
  return nullptr;
}

std::shared_ptr<Picture> Dpb::fresh_picture() {
  for (const std::shared_ptr<Picture>& p : pool_) {
    if (p.use_count() != 1) continue;
    Picture kept;
    for (int c = 0; c < 3; ++c) kept.buf[c].swap(p->buf[c]);
    kept.mvf.swap(p->mvf);
    kept.ctb_slice.swap(p->ctb_slice);
    kept.slice_refs.swap(p->slice_refs);
    // the bit depths say what the kept samples are (Picture::allocate keeps them only when
    // they are the new picture's depths)
    kept.bit_depth_y = p->bit_depth_y;
    kept.bit_depth_c = p->bit_depth_c;
    *p = Picture{};
    p->bit_depth_y = kept.bit_depth_y;
    p->bit_depth_c = kept.bit_depth_c;
    for (int c = 0; c < 3; ++c) p->buf[c].swap(kept.buf[c]);
    p->mvf.swap(kept.mvf);
    p->ctb_slice.swap(kept.ctb_slice);
    p->slice_refs.swap(kept.slice_refs);
    return p;
  }
  pool_.push_back(std::make_shared<Picture>());
  return pool_.back();
}

Picture* Dpb::new_picture() {
  std::shared_ptr<Picture> p = fresh_picture();
  p->decode_index = counter_++;
  p->samples_on_host = true;
  pics_.push_back(p);
  return p.get();
}

void Dpb::after_decode(const GstH265SPS& sps, Picture* cur, bool pic_output_flag) {
  const int htid = sps.max_sub_layers_minus1;
  for (auto& p : pics_)
    if (p->needed_for_output && p.get() != cur) ++p->pic_latency_count;
  cur->needed_for_output = pic_output_flag;
  cur->pic_latency_count = 0;
  cur->short_term_ref = true;  // "used for short-term reference"
  const int max_latency = sps.max_latency_increase_plus1[htid]
                              ? sps.max_num_reorder_pics[htid] + sps.max_latency_increase_plus1[htid] - 1
                              : -1;
  for (;;) {
    int n_out = 0;
    bool latency = false;
    for (auto& p : pics_)
      if (p->needed_for_output) {
        ++n_out;
        if (max_latency >= 0 && p->pic_latency_count >= max_latency) latency = true;
      }
    if (n_out > sps.max_num_reorder_pics[htid] || latency)
      bump();
    else
      break;
  }
}

void Dpb::flush() {
  while (std::any_of(pics_.begin(), pics_.end(), [](auto& p) { return p->needed_for_output; })) bump();
  remove_all();
}

}  // namespace gvc::hevc
