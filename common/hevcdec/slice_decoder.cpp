// slice_decoder.cpp: coding_tree_unit -> coding_quadtree -> coding_unit -> transform_tree (7.3.8)
#include "common/hevcdec/slice_decoder.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>
#include <type_traits>

#include "common/dsp/hevc_deblock.h"
#include "common/dsp/hevc_itx.h"
#include "common/dsp/hevc_mc.h"
#include "common/hevcdec/mv_derive.h"
#include "common/hevcdec/recon.h"
#include "common/hevcdec/residual.h"
#include "common/util/progress.h"
#include "common/util/scope_ns.h"

namespace gvc::hevc {
namespace {

// `v` into `rows` rows of `n` units from `p`, the rows `stride` units apart (a block's units in
// a FrameState array or a motion field).
template <typename T>
inline void fill_units(T* p, size_t stride, int n, int rows, T v) {
  if constexpr (sizeof(T) == 1) {  // a row is 1 to 16 bytes: whole words rather than memset
    const uint64_t word = uint64_t(static_cast<uint8_t>(v)) * 0x0101010101010101ull;
    // By the row's width, each a few stores of constant size: GCC turned the loop over any
    // width into a call to memset per row (4 % of a one-thread 1080p parse).
    const auto rows_of = [&](auto store) {
      for (int r = 0; r < rows; ++r, p += stride) store(p);
    };
    switch (n) {
      case 16: return rows_of([&](T* q) { std::memcpy(q, &word, 8), std::memcpy(q + 8, &word, 8); });
      case 8: return rows_of([&](T* q) { std::memcpy(q, &word, 8); });
      case 4: return rows_of([&](T* q) { std::memcpy(q, &word, 4); });
      case 2: return rows_of([&](T* q) { std::memcpy(q, &word, 2); });
      case 1: return rows_of([&](T* q) { *q = v; });
      default:
        return rows_of([&](T* q) {
          for (int i = 0; i < n; ++i) q[i] = v;
        });
    }
  } else if (n > 2 && std::is_trivially_copyable_v<T>) {
    // the first row unit by unit, the others copied from it in wide moves (a motion field
    // unit is 12 bytes: three stores each, one after the other)
    std::fill_n(p, n, v);
    const T* first = p;
    for (int r = 1; r < rows; ++r) std::memcpy(p + size_t(r) * stride, first, size_t(n) * sizeof(T));
  } else {
    for (int r = 0; r < rows; ++r, p += stride) std::fill_n(p, n, v);
  }
}

// How long a row thread waiting for another row (of its picture or of the collocated one)
// yields before it sleeps. With frame threads the row threads outnumber the cores, and what
// they spend yielding the rows with work lack: 500 us (Progress's default) against 50 made the
// 2160p decoder's CPU time 10 % higher and its rate 1-3 % lower (.content/p69.sh, H200).
constexpr int kParseYieldUs = 50;

// The most dense levels a picture's TUs have: 1.5 per luma sample (4:2:0), below 2^30
// (PicParams refuses larger pictures).
uint32_t dense_level_limit(const PicParams& pp) { return uint32_t(int64_t(pp.width) * pp.height * 3 / 2); }

// Progress of one CTB row decoded on its own thread (WPP): CTBs done, and the contexts after its
// second CTB (TableStateIdxWpp), valid once done >= 2 or the row is complete.
struct RowSync {
  Progress done;
  CabacContexts wpp{};
};

class SliceDecoder {
 public:
  SliceDecoder(const SliceDecodeInput& in)
      : in_(in), pp_(*in.pp), sh_(*in.sh), pps_(*in.pp->pps), sps_(*in.pp->sps), pic_(*in.pic),
        fs_(*in.fs), recon_(in.recon) {
    if (sh_.type != GST_H265_I_SLICE) init_inter();
  }
  bool run(const uint8_t* rbsp, size_t size, size_t data_offset);
  // One CTB row `y` of a WPP slice segment that starts at a row start, as its own substream
  // from byte `start`, waiting for the row above where its CTBs depend on it (9.3.1, 6.4.1).
  // `last`: the segment's last row, which ends with end_of_slice_segment_flag; the others end
  // with end_of_subset_one_bit at the row's end.
  bool run_row(const uint8_t* rbsp, size_t size, size_t start, int y, bool last, const RowSync* above,
               RowSync& self, const std::atomic<bool>& abort);
  void record_into(PictureRecon* r) { recon_ = r; }
  // The CTB at ctb_addr_rs_ belongs to this slice segment (in the syntax arrays and, for the
  // TMVP of later pictures, in the picture).
  void set_ctb_slice() {
    fs_.ctb_slice[ctb_addr_rs_] = static_cast<int16_t>(in_.slice_idx);
    if (size_t(ctb_addr_rs_) < pic_.ctb_slice.size()) pic_.ctb_slice[ctb_addr_rs_] = static_cast<int16_t>(in_.slice_idx);
  }
  // Frame threads: the collocated picture's motion of the current CTB row (8.5.3.2.8 reads it
  // in this row only: the bottom right candidate is taken within the same CTB row) is parsed.
  void wait_for_col_rows() {
    if (!in_.col_pic || !in_.col_pic->parsed_rows || col_rows_ >= y_ctb_ + pp_.ctb_size) return;
    const Progress& col = *in_.col_pic->parsed_rows;
    if (col.get() < y_ctb_ + pp_.ctb_size) {
      const ScopeNs t(in_.waits ? &in_.waits->col_ns : nullptr);
      col.wait_for(y_ctb_ + pp_.ctb_size, kParseYieldUs);
    }
    col_rows_ = col.get();
  }
  // The rows up to the current CTB's are complete in the picture's motion field.
  void publish_rows() {
    if (pic_.parsed_rows) pic_.parsed_rows->advance(y_ctb_ + pp_.ctb_size);
  }

 private:
  // 6.4.1 availability in z-scan order
  bool available(int x_curr, int y_curr, int x_nb, int y_nb) const;
  static bool zscan_available(const void* self, int x_curr, int y_curr, int x_nb, int y_nb);
  void init_contexts();

  bool coding_tree_unit();
  void sao(int rx, int ry);
  bool coding_quadtree(int x0, int y0, int log2_cb_size, int cqt_depth);
  bool coding_unit(int x0, int y0, int log2_cb_size);
  bool inter_coding_unit(int x0, int y0, int log2_cb_size);
  bool pcm_sample(int x0, int y0, int log2_cb_size);
  bool transform_tree(int x0, int y0, int x_base, int y_base, int log2_trafo_size,
                      int trafo_depth, int blk_idx, bool parent_cbf_cb, bool parent_cbf_cr);
  bool transform_unit(int x0, int y0, int x_base, int y_base, int log2_trafo_size,
                      int trafo_depth, int blk_idx, bool cbf_luma, bool cbf_cb, bool cbf_cr);
  bool reconstruct_block(int x0, int y0, int log2_size, int c_idx, bool coded);
  void record_level_blocks(uint64_t coded, int log2_size, uint32_t dense_offset);

  void start_quantization_group(int xq, int yq);
  void set_qp_y();
  void intra_luma_modes(int x0, int y0, int n_cb_s, bool nxn, const int prev_flag[4],
                        const int mpm_idx[4], const int rem[4]);
  void intra_predict(int x0, int y0, int log2_size, int c_idx, int mode);
  void init_inter();
  bool prediction_unit(int x0, int y0, int w, int h, int part_idx, bool skip, bool* merge_out);
  void predict_inter(int x0, int y0, int w, int h, const MvField& mf);
  void mark_edges(int x0, int y0, int w, int h, uint8_t bit);
  // `v` into the units of a block (x0, y0 multiples of 4), one row of units at a time
  template <typename T>
  void fill(std::vector<T>& a, int x0, int y0, int w, int h, T v) {
    fill_units(a.data() + fs_.idx(x0, y0), size_t(fs_.w4), (w + 3) >> 2, (h + 3) >> 2, v);
  }

  SliceDecodeInput in_;
  const PicParams& pp_;
  const GstH265SliceHdr& sh_;
  const GstH265PPS& pps_;
  const GstH265SPS& sps_;
  Picture& pic_;
  FrameState& fs_;
  PictureRecon* recon_;  // where the sample work is recorded
  // residual_coding()'s block, all zeros between transform blocks (record_level_blocks clears
  // what it wrote)
  alignas(16) int16_t tu_levels_[32 * 32] = {};
  SyntaxReader rd_;
  const uint8_t* rbsp_ = nullptr;
  size_t size_ = 0;

  int slice_qp_y_ = 26;
  int ctb_addr_ts_ = 0, ctb_addr_rs_ = 0;
  int x_ctb_ = 0, y_ctb_ = 0;
  int col_rows_ = 0;  // luma rows of the collocated picture known to be parsed

  // 8.6.1 quantization parameters
  int qp_y_prev_ = 0, qp_y_pred_ = 0, qp_y_ = 0;
  bool is_cu_qp_delta_coded_ = false;
  int cu_qp_delta_val_ = 0;
  bool first_qg_in_ctb_row_or_tile_ = false;

  // the current coding unit
  int x_cb_ = 0, y_cb_ = 0, log2_cb_size_ = 3;
  bool cu_transquant_bypass_ = false;
  PredMode pred_mode_ = MODE_INTRA;
  PartMode part_mode_ = PART_2Nx2N;
  int max_trafo_depth_ = 0;
  bool intra_split_ = false;
  int intra_chroma_pred_mode_ = 0;  // IntraPredModeC
  bool left_edge_filtered_ = true, top_edge_filtered_ = true;
  bool deblock_cu_ = true;

  // inter prediction state of the slice
  MvEnv mv_env_;
  uint8_t ref_map_[32] = {};     // [X * 16 + refIdxLX]: index in PictureRecon::refs
  int ct_depth_ = 0;             // CtDepth of the current coding unit
};

void SliceDecoder::init_inter() {
  const RefPicLists& r = *in_.refs;
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < r.n[l]; ++i) ref_map_[l * 16 + i] = recon_->ref_index(r.pic[l][i]);
  mv_env_.pp = &pp_;
  mv_env_.sh = &sh_;
  mv_env_.refs = &r;
  mv_env_.cur = &pic_;
  mv_env_.col = in_.col_pic;
  mv_env_.max_num_merge_cand = 5 - sh_.five_minus_max_num_merge_cand;
  // 8.5.3.2.9 NoBackwardPredFlag: no reference picture follows the current one in output order
  mv_env_.no_backward_pred = true;
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < r.n[l]; ++i)
      if (r.poc[l][i] > pic_.poc) mv_env_.no_backward_pred = false;
  mv_env_.zscan_available = &SliceDecoder::zscan_available;
  mv_env_.zscan_self = this;
}

// 7.3.8.6 prediction_unit() with the motion derivation (8.5.3.2) and the samples (8.5.3.3).
bool SliceDecoder::prediction_unit(int x0, int y0, int w, int h, int part_idx, bool skip,
                                   bool* merge_out) {
  const RefPicLists& r = *in_.refs;
  // the block's motion field rows are written below: their cache lines fetched meanwhile
  MvField* const mvf = &pic_.mvf[size_t(y0 >> 2) * pic_.mvf_stride + (x0 >> 2)];
  for (int y = 0; y < h; y += 4) {
    const char* row = reinterpret_cast<const char*>(mvf + size_t(y >> 2) * pic_.mvf_stride);
    for (size_t b = 0; b < (size_t(w) >> 2) * sizeof(MvField); b += 64) __builtin_prefetch(row + b, 1);
  }
  PbPos pb{x_cb_, y_cb_, 1 << log2_cb_size_, x0, y0, w, h, part_idx, part_mode_};
  MvField mf;
  const int merge = skip ? 1 : rd_.merge_flag();
  if (merge_out) *merge_out = merge;
  if (merge) {
    const int merge_idx = mv_env_.max_num_merge_cand > 1 ? rd_.merge_idx(mv_env_.max_num_merge_cand) : 0;
    mf = derive_merge(mv_env_, pb, merge_idx);
  } else {
    InterPredIdc idc = PRED_L0;
    if (sh_.type == GST_H265_B_SLICE) idc = rd_.inter_pred_idc(w, h, ct_depth_);
    int mvd[2][2] = {{0, 0}, {0, 0}}, ref_idx[2] = {-1, -1}, mvp_flag[2] = {0, 0};
    for (int X = 0; X < 2; ++X) {
      if ((X == 0 && idc == PRED_L1) || (X == 1 && idc == PRED_L0)) continue;
      ref_idx[X] = r.n[X] > 1 ? rd_.ref_idx_lx(r.n[X]) : 0;
      if (!(X == 1 && sh_.mvd_l1_zero_flag && idc == PRED_BI)) rd_.mvd_coding(mvd[X]);
      mvp_flag[X] = rd_.mvp_lx_flag();
    }
    for (int X = 0; X < 2; ++X) {
      if (ref_idx[X] < 0) continue;
      if (ref_idx[X] >= r.n[X]) return false;
      int mvp[2];
      derive_amvp(mv_env_, pb, X, ref_idx[X], mvp_flag[X], mvp);
      mf.pred_flag |= uint8_t(1 << X);
      mf.ref_idx[X] = int8_t(ref_idx[X]);
      // 8-272..8-275: the sum wraps to 16 bits
      for (int c = 0; c < 2; ++c) mf.mv[X][c] = int16_t(uint16_t(mvp[c] + mvd[X][c]));
    }
  }
  for (int X = 0; X < 2; ++X)
    if (((mf.pred_flag >> X) & 1) && (mf.ref_idx[X] < 0 || mf.ref_idx[X] >= r.n[X])) return false;
  fill_units(mvf, size_t(pic_.mvf_stride), (w + 3) >> 2, (h + 3) >> 2, mf);
  mark_edges(x0, y0, w, h, 2);
  predict_inter(x0, y0, w, h, mf);
  return true;
}

// 8.5.3.3 decoding process for inter sample prediction of one prediction block.
void SliceDecoder::predict_inter(int x0, int y0, int w, int h, const MvField& mf) {
  HevcMcPb pb;
  pb.x = x0;
  pb.y = y0;
  pb.w = w;
  pb.h = h;
  for (int X = 0; X < 2; ++X) {
    pb.pred_flag[X] = (mf.pred_flag >> X) & 1;
    if (!pb.pred_flag[X]) continue;
    pb.ref[X] = ref_map_[X * 16 + mf.ref_idx[X]];
    pb.mv[X][0] = mf.mv[X][0];
    pb.mv[X][1] = mf.mv[X][1];
  }
  // 8.5.3.3.4.1 weightedPredFlag
  pb.weighted = sh_.type == GST_H265_P_SLICE ? pps_.weighted_pred_flag : pps_.weighted_bipred_flag;
  if (pb.weighted) {
    // 7.4.7.3 pred_weight_table semantics
    const GstH265PredWeightTable& t = sh_.pred_weight_table;
    const int log2_c = t.luma_log2_weight_denom + t.delta_chroma_log2_weight_denom;
    pb.log2_wd_base[0] = t.luma_log2_weight_denom;
    pb.log2_wd_base[1] = pb.log2_wd_base[2] = uint8_t(log2_c);
    for (int X = 0; X < 2; ++X) {
      if (!pb.pred_flag[X]) continue;
      const int i = mf.ref_idx[X];
      const bool lf = X ? t.luma_weight_l1_flag[i] : t.luma_weight_l0_flag[i];
      const bool cf = X ? t.chroma_weight_l1_flag[i] : t.chroma_weight_l0_flag[i];
      pb.weight[X][0] = int16_t((1 << t.luma_log2_weight_denom) +
                                (lf ? (X ? t.delta_luma_weight_l1[i] : t.delta_luma_weight_l0[i]) : 0));
      pb.offset[X][0] = int16_t(lf ? (X ? t.luma_offset_l1[i] : t.luma_offset_l0[i]) : 0);
      for (int j = 0; j < 2; ++j) {
        const int dw = cf ? (X ? t.delta_chroma_weight_l1[i][j] : t.delta_chroma_weight_l0[i][j]) : 0;
        const int cw = (1 << log2_c) + dw;
        const int d_off = X ? t.delta_chroma_offset_l1[i][j] : t.delta_chroma_offset_l0[i][j];
        // wpOffsetHalfRangeC = 1 << 7 (high_precision_offsets_enabled_flag 0)
        const int co = cf ? std::clamp((128 - ((128 * cw) >> log2_c) + d_off), -128, 127) : 0;
        pb.weight[X][1 + j] = int16_t(cw);
        pb.offset[X][1 + j] = int16_t(co);
      }
    }
  }
  recon_->pbs.push_back(pb);
}

// 6.4.1: MinTbAddrZs of the neighbour not above the current one's, in the same slice and tile.
bool SliceDecoder::available(int x_curr, int y_curr, int x_nb, int y_nb) const {
  if (x_nb < 0 || y_nb < 0 || x_nb >= pp_.width || y_nb >= pp_.height) return false;
  const int ctb_nb = (y_nb >> pp_.log2_ctb_size) * pp_.pic_width_in_ctbs + (x_nb >> pp_.log2_ctb_size);
  const int ctb_cur = (y_curr >> pp_.log2_ctb_size) * pp_.pic_width_in_ctbs + (x_curr >> pp_.log2_ctb_size);
  // Most neighbours are in the current CTB, which is in this slice segment's slice
  // (set_ctb_slice) and tile: the z-scan order alone decides.
  if (ctb_nb == ctb_cur) return pp_.zscan_in_ctb(x_nb, y_nb) <= pp_.zscan_in_ctb(x_curr, y_curr);
  const int ts_nb = pp_.ctb_addr_rs_to_ts[ctb_nb];
  if (ts_nb > pp_.ctb_addr_rs_to_ts[ctb_cur]) return false;
  const int s = fs_.ctb_slice[ctb_nb];
  if (s < 0 || fs_.slices[s].slice_addr_rs != in_.slice_addr_rs) return false;
  return pp_.tile_id[ts_nb] == pp_.tile_id[ctb_addr_ts_];
}

bool SliceDecoder::zscan_available(const void* self, int x_curr, int y_curr, int x_nb, int y_nb) {
  return static_cast<const SliceDecoder*>(self)->available(x_curr, y_curr, x_nb, y_nb);
}

// 9.3.2.2 initType from slice_type and cabac_init_flag.
void SliceDecoder::init_contexts() {
  int init_type = sh_.type == GST_H265_I_SLICE ? 0 : (sh_.type == GST_H265_P_SLICE ? 1 : 2);
  if (init_type && sh_.cabac_init_flag) init_type = 3 - init_type;
  cabac_init_contexts(rd_.ctx, init_type, slice_qp_y_);
}

bool SliceDecoder::run(const uint8_t* rbsp, size_t size, size_t data_offset) {
  rbsp_ = rbsp;
  size_ = size;
  slice_qp_y_ = 26 + pps_.init_qp_minus26 + sh_.qp_delta;
  ctb_addr_rs_ = in_.sh->segment_address;
  if (ctb_addr_rs_ >= pp_.pic_size_in_ctbs) return false;
  ctb_addr_ts_ = pp_.ctb_addr_rs_to_ts[ctb_addr_rs_];
  rd_.eng.init(rbsp, size, data_offset);
  const bool dependent = in_.sh->dependent_slice_segment_flag;
  if (dependent) {
    rd_.ctx = in_.carry->ds;
    qp_y_prev_ = in_.carry->qp_y_prev;
  } else {
    init_contexts();
    qp_y_prev_ = slice_qp_y_;
  }
  qp_y_ = qp_y_prev_;
  bool first = true;
  for (;;) {
    x_ctb_ = (ctb_addr_rs_ % pp_.pic_width_in_ctbs) << pp_.log2_ctb_size;
    y_ctb_ = (ctb_addr_rs_ / pp_.pic_width_in_ctbs) << pp_.log2_ctb_size;
    const int tile = pp_.tile_id[ctb_addr_ts_];
    const bool tile_start = ctb_addr_ts_ == 0 || pp_.tile_id[ctb_addr_ts_ - 1] != tile;
    int tile_col = 0;
    while (tile_col + 1 < int(pp_.col_bd.size()) - 1 && (x_ctb_ >> pp_.log2_ctb_size) >= pp_.col_bd[tile_col + 1])
      ++tile_col;
    const bool row_start = (x_ctb_ >> pp_.log2_ctb_size) == pp_.col_bd[tile_col];
    set_ctb_slice();
    // 9.3.1: context initialisation at a tile start, WPP synchronisation at a CTB row start. A
    // tile start comes before TableStateIdxDs: a dependent slice segment starting a tile
    // starts from initialised contexts, and with qPY_PREV = SliceQpY (8.6.1).
    if (tile_start && (!first || dependent)) {
      init_contexts();
      qp_y_prev_ = slice_qp_y_;
    }
    if (pps_.entropy_coding_sync_enabled_flag && row_start) {
      const int xt = x_ctb_ + pp_.ctb_size, yt = y_ctb_ - pp_.ctb_size;
      const bool avail_t = available(x_ctb_, y_ctb_, xt, yt);
      // without the CTB above right the contexts are initialised, also at the start of a
      // dependent slice segment: with WPP, TableStateIdxDs serves segments starting mid-row
      if (avail_t)
        rd_.ctx = in_.carry->wpp;
      else
        init_contexts();
      qp_y_prev_ = slice_qp_y_;
    }
    first = false;
    wait_for_col_rows();
    if (!coding_tree_unit()) return false;
    // raster order without tiles: a row's motion is complete after its last CTB
    if (!pps_.tiles_enabled_flag && (x_ctb_ >> pp_.log2_ctb_size) == pp_.pic_width_in_ctbs - 1) publish_rows();
    if (pps_.entropy_coding_sync_enabled_flag &&
        (x_ctb_ >> pp_.log2_ctb_size) == pp_.col_bd[tile_col] + 1)
      in_.carry->wpp = rd_.ctx;  // 9.3.2.3 storage after the 2nd CTB of a row
    if (pps_.entropy_coding_sync_enabled_flag && pp_.col_bd[tile_col + 1] - pp_.col_bd[tile_col] == 1)
      in_.carry->wpp = rd_.ctx;
    const int end_of_slice_segment = rd_.end_of_slice_segment_flag();
    ++ctb_addr_ts_;
    if (end_of_slice_segment) break;
    if (ctb_addr_ts_ >= pp_.pic_size_in_ctbs || rd_.eng.overrun()) return false;
    ctb_addr_rs_ = pp_.ctb_addr_ts_to_rs[ctb_addr_ts_];
    const bool next_tile = pp_.tile_id[ctb_addr_ts_] != pp_.tile_id[ctb_addr_ts_ - 1];
    const int nx = ctb_addr_rs_ % pp_.pic_width_in_ctbs;
    bool next_row = false;
    for (size_t i = 0; i + 1 < pp_.col_bd.size(); ++i)
      if (nx == pp_.col_bd[i]) next_row = true;
    if ((pps_.tiles_enabled_flag && next_tile) ||
        (pps_.entropy_coding_sync_enabled_flag && (next_row || next_tile))) {
      if (!rd_.end_of_subset_one_bit()) return false;
      rd_.eng.init(rbsp_, size_, rd_.eng.aligned_byte_after_terminate());  // byte_alignment()
    }
  }
  if (pps_.dependent_slice_segments_enabled_flag) {
    in_.carry->ds = rd_.ctx;
    in_.carry->qp_y_prev = qp_y_;
  }
  return true;
}

// Waits until the row above has `ctbs` CTBs done (or is complete, or the segment failed).
bool wait_for(const RowSync* above, int ctbs, const std::atomic<bool>& abort, ParseWaits* waits) {
  if (!above) return true;
  // (a thread yielding for its row above without end took the cores of the rows of other
  // pictures, 20 % of the frame-threaded decoder's CPU; Progress sleeps after kParseYieldUs)
  if (above->done.get() < ctbs) {
    const ScopeNs t(waits ? &waits->row_ns : nullptr);
    above->done.wait_for(ctbs, kParseYieldUs);
  }
  // a failed row is marked complete without being so: nothing of it may be read
  return !abort.load(std::memory_order_acquire);
}

bool SliceDecoder::run_row(const uint8_t* rbsp, size_t size, size_t start, int y, bool last, const RowSync* above,
                           RowSync& self, const std::atomic<bool>& abort) {
  rbsp_ = rbsp;
  size_ = size;
  slice_qp_y_ = 26 + pps_.init_qp_minus26 + sh_.qp_delta;
  const int w = pp_.pic_width_in_ctbs;
  rd_.eng.init(rbsp, size, start);
  y_ctb_ = y << pp_.log2_ctb_size;
  // 9.3.1 at the row start: the contexts of the row above after its 2nd CTB when the CTB above
  // right is available (in this slice), else initialised; qPY_PREV = SliceQpY.
  if (!wait_for(above, std::min(2, w), abort, in_.waits)) return false;
  x_ctb_ = 0;
  ctb_addr_rs_ = y * w;
  ctb_addr_ts_ = ctb_addr_rs_;  // no tiles
  set_ctb_slice();
  wait_for_col_rows();
  if (above && available(0, y_ctb_, pp_.ctb_size, y_ctb_ - pp_.ctb_size))
    rd_.ctx = above->wpp;
  else
    init_contexts();
  qp_y_prev_ = slice_qp_y_;
  qp_y_ = qp_y_prev_;
  for (int x = 0; x < w; ++x) {
    if (!wait_for(above, std::min(x + 2, w), abort, in_.waits)) return false;
    x_ctb_ = x << pp_.log2_ctb_size;
    ctb_addr_rs_ = y * w + x;
    ctb_addr_ts_ = ctb_addr_rs_;
    set_ctb_slice();
    if (!coding_tree_unit()) return false;
    if (x == 1 || w == 1) self.wpp = rd_.ctx;  // 9.3.2.3 storage after the 2nd CTB of a row
    self.done.set(x + 1);
    if (x == w - 1) {
      // the rows above are complete (this row's last CTB waited for them)
      publish_rows();
      if (in_.plan_rows) plan_deblocking_rows(pp_, fs_, pic_, in_.recon->loop_filters, y, y + 1);
    }
    const int end_of_slice_segment = rd_.end_of_slice_segment_flag();
    if (rd_.eng.overrun()) return false;
    if (end_of_slice_segment) return last;  // only the last row may end the segment
    if (x == w - 1) return !last && rd_.end_of_subset_one_bit();
  }
  return false;
}

// 7.3.8.2
bool SliceDecoder::coding_tree_unit() {
  if (sh_.sao_luma_flag || sh_.sao_chroma_flag)
    sao(x_ctb_ >> pp_.log2_ctb_size, y_ctb_ >> pp_.log2_ctb_size);
  return coding_quadtree(x_ctb_, y_ctb_, pp_.log2_ctb_size, 0);
}

// 7.3.8.3 sample adaptive offset syntax and 7.4.9.3 semantics (SaoOffsetVal).
void SliceDecoder::sao(int rx, int ry) {
  HevcSaoCtb& cur = fs_.sao[ctb_addr_rs_];
  cur = HevcSaoCtb{};
  if (rx > 0) {
    const bool left_in_slice = ctb_addr_rs_ - 1 >= in_.slice_addr_rs &&
                               fs_.ctb_slice[ctb_addr_rs_ - 1] >= 0 &&
                               fs_.slices[fs_.ctb_slice[ctb_addr_rs_ - 1]].slice_addr_rs == in_.slice_addr_rs;
    const bool left_in_tile = pp_.tile_id[ctb_addr_ts_] == pp_.tile_id[pp_.ctb_addr_rs_to_ts[ctb_addr_rs_ - 1]];
    if (left_in_slice && left_in_tile && rd_.sao_merge_flag()) {
      cur = fs_.sao[ctb_addr_rs_ - 1];
      return;
    }
  }
  if (ry > 0) {
    const int up = ctb_addr_rs_ - pp_.pic_width_in_ctbs;
    const bool up_in_slice = up >= in_.slice_addr_rs && fs_.ctb_slice[up] >= 0 &&
                             fs_.slices[fs_.ctb_slice[up]].slice_addr_rs == in_.slice_addr_rs;
    const bool up_in_tile = pp_.tile_id[ctb_addr_ts_] == pp_.tile_id[pp_.ctb_addr_rs_to_ts[up]];
    if (up_in_slice && up_in_tile && rd_.sao_merge_flag()) {
      cur = fs_.sao[up];
      return;
    }
  }
  for (int c = 0; c < 3; ++c) {
    if ((c == 0 && !sh_.sao_luma_flag) || (c > 0 && !sh_.sao_chroma_flag)) continue;
    const int bit_depth = c ? pp_.bit_depth_c : pp_.bit_depth_y;
    if (c == 0)
      cur.type_idx[0] = static_cast<uint8_t>(rd_.sao_type_idx());
    else if (c == 1)
      cur.type_idx[1] = cur.type_idx[2] = static_cast<uint8_t>(rd_.sao_type_idx());
    if (!cur.type_idx[c]) continue;
    int abs[4];
    for (int i = 0; i < 4; ++i) abs[i] = rd_.sao_offset_abs(bit_depth);
    const int log2_offset_scale = 0;  // log2_sao_offset_scale_luma/chroma (range extension)
    if (cur.type_idx[c] == 1) {
      for (int i = 0; i < 4; ++i)
        if (abs[i] && rd_.sao_offset_sign()) abs[i] = -abs[i];
      cur.band_position[c] = static_cast<uint8_t>(rd_.sao_band_position());
      for (int i = 0; i < 4; ++i) cur.offset_val[c][i + 1] = static_cast<int16_t>(abs[i] << log2_offset_scale);
    } else {
      if (c == 0) cur.eo_class[0] = static_cast<uint8_t>(rd_.sao_eo_class());
      if (c == 1) cur.eo_class[1] = cur.eo_class[2] = static_cast<uint8_t>(rd_.sao_eo_class());
      abs[2] = -abs[2];
      abs[3] = -abs[3];
      for (int i = 0; i < 4; ++i) cur.offset_val[c][i + 1] = static_cast<int16_t>(abs[i] << log2_offset_scale);
    }
  }
}

// 7.3.8.4
bool SliceDecoder::coding_quadtree(int x0, int y0, int log2_cb_size, int cqt_depth) {
  const int size = 1 << log2_cb_size;
  int split;
  if (x0 + size <= pp_.width && y0 + size <= pp_.height && log2_cb_size > pp_.log2_min_cb_size) {
    // 9.3.4.2.2 ctxInc from the depth of the left and above coding units
    int inc = 0;
    if (available(x0, y0, x0 - 1, y0) && fs_.ct_depth[fs_.idx(x0 - 1, y0)] > cqt_depth) ++inc;
    if (available(x0, y0, x0, y0 - 1) && fs_.ct_depth[fs_.idx(x0, y0 - 1)] > cqt_depth) ++inc;
    split = rd_.split_cu_flag(inc);
  } else {
    split = log2_cb_size > pp_.log2_min_cb_size;
  }
  if (pps_.cu_qp_delta_enabled_flag && log2_cb_size >= pp_.log2_min_cu_qp_delta_size) {
    is_cu_qp_delta_coded_ = false;
    cu_qp_delta_val_ = 0;
  }
  if (log2_cb_size >= pp_.log2_min_cu_qp_delta_size) start_quantization_group(x0, y0);
  if (split) {
    const int x1 = x0 + (size >> 1), y1 = y0 + (size >> 1);
    if (!coding_quadtree(x0, y0, log2_cb_size - 1, cqt_depth + 1)) return false;
    if (x1 < pp_.width && !coding_quadtree(x1, y0, log2_cb_size - 1, cqt_depth + 1)) return false;
    if (y1 < pp_.height && !coding_quadtree(x0, y1, log2_cb_size - 1, cqt_depth + 1)) return false;
    if (x1 < pp_.width && y1 < pp_.height && !coding_quadtree(x1, y1, log2_cb_size - 1, cqt_depth + 1))
      return false;
    return true;
  }
  const int w = std::min(size, pp_.width - x0), h = std::min(size, pp_.height - y0);
  fill(fs_.ct_depth, x0, y0, w, h, static_cast<uint8_t>(cqt_depth));
  return coding_unit(x0, y0, log2_cb_size);
}

// 8.6.1 derivation of qPY_PRED, at the first coding unit of a quantization group.
void SliceDecoder::start_quantization_group(int xq, int yq) {
  const int prev = qp_y_prev_;
  const int ctb_mask = ~(pp_.ctb_size - 1);
  auto in_ctb = [&](int x, int y) { return (x & ctb_mask) == x_ctb_ && (y & ctb_mask) == y_ctb_; };
  int qp_a = prev, qp_b = prev;
  if (available(xq, yq, xq - 1, yq) && in_ctb(xq - 1, yq)) qp_a = fs_.qp_y[fs_.idx(xq - 1, yq)];
  if (available(xq, yq, xq, yq - 1) && in_ctb(xq, yq - 1)) qp_b = fs_.qp_y[fs_.idx(xq, yq - 1)];
  qp_y_pred_ = (qp_a + qp_b + 1) >> 1;
  qp_y_ = qp_y_pred_;
}

// 8.6.1 QpY = ((qPY_PRED + CuQpDeltaVal + 52 + 2 * QpBdOffsetY) % (52 + QpBdOffsetY)) - QpBdOffsetY
void SliceDecoder::set_qp_y() {
  const int off = pp_.qp_bd_offset_y;
  qp_y_ = ((qp_y_pred_ + cu_qp_delta_val_ + 52 + 2 * off) % (52 + off)) - off;
}

void SliceDecoder::mark_edges(int x0, int y0, int w, int h, uint8_t bit) {
  w = std::min(w, pp_.width - x0);
  h = std::min(h, pp_.height - y0);
  if (!deblock_cu_ || w <= 0 || h <= 0) return;
  if (x0 > 0 && (x0 != x_cb_ || left_edge_filtered_))
    for (int y = y0; y < y0 + h; y += 4) fs_.edge_v[fs_.idx(x0, y)] |= bit;
  if (y0 > 0 && (y0 != y_cb_ || top_edge_filtered_))
    for (int x = x0; x < x0 + w; x += 4) fs_.edge_h[fs_.idx(x, y0)] |= bit;
}

// 7.3.8.5
bool SliceDecoder::coding_unit(int x0, int y0, int log2_cb_size) {
  const int n_cb_s = 1 << log2_cb_size;
  const int w = std::min(n_cb_s, pp_.width - x0), h = std::min(n_cb_s, pp_.height - y0);
  x_cb_ = x0;
  y_cb_ = y0;
  log2_cb_size_ = log2_cb_size;
  cu_transquant_bypass_ = pps_.transquant_bypass_enabled_flag && rd_.cu_transquant_bypass_flag();

  // 8.7.2.3 filterEdgeFlag of the left and top coding block edges.
  const SliceInfo& si = fs_.slices[in_.slice_idx];
  deblock_cu_ = !si.deblocking_disabled;
  auto edge_ok = [&](int xn, int yn) {
    if (xn < 0 || yn < 0) return false;
    const int ctb_n = (yn >> pp_.log2_ctb_size) * pp_.pic_width_in_ctbs + (xn >> pp_.log2_ctb_size);
    if (ctb_n == ctb_addr_rs_) return true;
    const int s = fs_.ctb_slice[ctb_n];
    if (!si.loop_filter_across_slices && (s < 0 || fs_.slices[s].slice_addr_rs != in_.slice_addr_rs))
      return false;
    if (!pps_.loop_filter_across_tiles_enabled_flag &&
        pp_.tile_id[pp_.ctb_addr_rs_to_ts[ctb_n]] != pp_.tile_id[ctb_addr_ts_])
      return false;
    return true;
  };
  left_edge_filtered_ = edge_ok(x0 - 1, y0);
  top_edge_filtered_ = edge_ok(x0, y0 - 1);

  int skip = 0;
  if (sh_.type != GST_H265_I_SLICE) {
    int inc = 0;
    if (available(x0, y0, x0 - 1, y0) && fs_.skip_flag[fs_.idx(x0 - 1, y0)]) ++inc;
    if (available(x0, y0, x0, y0 - 1) && fs_.skip_flag[fs_.idx(x0, y0 - 1)]) ++inc;
    skip = rd_.cu_skip_flag(inc);
  }
  fill(fs_.skip_flag, x0, y0, w, h, static_cast<uint8_t>(skip));
  fill(fs_.no_filter, x0, y0, w, h, static_cast<uint8_t>(cu_transquant_bypass_));
  fill(fs_.pcm, x0, y0, w, h, uint8_t(0));
  fill(fs_.nz_luma, x0, y0, w, h, uint8_t(0));
  if (!pps_.cu_qp_delta_enabled_flag || !is_cu_qp_delta_coded_) set_qp_y();
  ct_depth_ = fs_.ct_depth[fs_.idx(x0, y0)];
  part_mode_ = PART_2Nx2N;
  intra_split_ = false;
  if (skip) {
    pred_mode_ = MODE_INTER;
    fill(fs_.pred_mode, x0, y0, w, h, static_cast<uint8_t>(MODE_INTER));
    mark_edges(x0, y0, n_cb_s, n_cb_s, 3);
    if (!prediction_unit(x0, y0, n_cb_s, n_cb_s, 0, true, nullptr)) return false;
    fill(fs_.qp_y, x0, y0, w, h, static_cast<int8_t>(qp_y_));
    qp_y_prev_ = qp_y_;
    return !rd_.eng.overrun();
  }
  pred_mode_ = MODE_INTRA;
  if (sh_.type != GST_H265_I_SLICE && !rd_.pred_mode_flag()) pred_mode_ = MODE_INTER;
  fill(fs_.pred_mode, x0, y0, w, h, static_cast<uint8_t>(pred_mode_));
  if (pred_mode_ == MODE_INTER || log2_cb_size == pp_.log2_min_cb_size)
    part_mode_ = rd_.part_mode(pred_mode_ == MODE_INTRA, log2_cb_size, pp_.log2_min_cb_size,
                               sps_.amp_enabled_flag);
  if (pred_mode_ == MODE_INTER) return inter_coding_unit(x0, y0, log2_cb_size);
  intra_split_ = part_mode_ == PART_NxN;
  if (intra_split_ && log2_cb_size == 3 && pp_.log2_min_tb_size > 2) return false;

  bool pcm = false;
  if (part_mode_ == PART_2Nx2N && sps_.pcm_enabled_flag && log2_cb_size >= pp_.log2_min_pcm_cb_size &&
      log2_cb_size <= pp_.log2_max_pcm_cb_size)
    pcm = rd_.pcm_flag();
  if (pcm) {
    fill(fs_.pcm, x0, y0, w, h, uint8_t(1));
    if (sps_.pcm_loop_filter_disabled_flag) fill(fs_.no_filter, x0, y0, w, h, uint8_t(1));
    fill(fs_.intra_mode, x0, y0, w, h, uint8_t(1));
    if (!pcm_sample(x0, y0, log2_cb_size)) return false;
  } else {
    const int nb = intra_split_ ? 4 : 1;
    int prev_flag[4] = {0, 0, 0, 0}, mpm[4] = {0, 0, 0, 0}, rem[4] = {0, 0, 0, 0};
    for (int i = 0; i < nb; ++i) prev_flag[i] = rd_.prev_intra_luma_pred_flag();
    for (int i = 0; i < nb; ++i) {
      if (prev_flag[i])
        mpm[i] = rd_.mpm_idx();
      else
        rem[i] = rd_.rem_intra_luma_pred_mode();
    }
    intra_luma_modes(x0, y0, n_cb_s, intra_split_, prev_flag, mpm, rem);
    const int chroma = rd_.intra_chroma_pred_mode();
    // 8.4.3 derivation of IntraPredModeC (4:2:0: Table 8-2 without the 4:2:2 mapping)
    const int luma = fs_.intra_mode[fs_.idx(x0, y0)];
    if (chroma == 4) {
      intra_chroma_pred_mode_ = luma;
    } else {
      static const int kModes[4] = {0, 26, 10, 1};
      intra_chroma_pred_mode_ = kModes[chroma] == luma ? 34 : kModes[chroma];
    }
  }
  // the coding block edge is a transform and prediction block edge (8.7.2.2, 8.7.2.3)
  mark_edges(x0, y0, n_cb_s, n_cb_s, 3);
  if (!pcm) {
    max_trafo_depth_ = sps_.max_transform_hierarchy_depth_intra + (intra_split_ ? 1 : 0);
    if (!transform_tree(x0, y0, x0, y0, log2_cb_size, 0, 0, false, false)) return false;
  }
  fill(fs_.qp_y, x0, y0, w, h, static_cast<int8_t>(qp_y_));
  qp_y_prev_ = qp_y_;
  return true;
}

// 7.3.8.5, the inter branch after part_mode: prediction units, rqt_root_cbf, transform_tree.
bool SliceDecoder::inter_coding_unit(int x0, int y0, int log2_cb_size) {
  const int s = 1 << log2_cb_size, hs = s / 2, qs = s / 4;
  const int w = std::min(s, pp_.width - x0), h = std::min(s, pp_.height - y0);
  mark_edges(x0, y0, s, s, 3);
  bool merge0 = false;
  bool ok = true;
  switch (part_mode_) {
    case PART_2Nx2N:
      ok = prediction_unit(x0, y0, s, s, 0, false, &merge0);
      break;
    case PART_2NxN:
      ok = prediction_unit(x0, y0, s, hs, 0, false, nullptr) && prediction_unit(x0, y0 + hs, s, hs, 1, false, nullptr);
      break;
    case PART_Nx2N:
      ok = prediction_unit(x0, y0, hs, s, 0, false, nullptr) && prediction_unit(x0 + hs, y0, hs, s, 1, false, nullptr);
      break;
    case PART_2NxnU:
      ok = prediction_unit(x0, y0, s, qs, 0, false, nullptr) &&
           prediction_unit(x0, y0 + qs, s, s * 3 / 4, 1, false, nullptr);
      break;
    case PART_2NxnD:
      ok = prediction_unit(x0, y0, s, s * 3 / 4, 0, false, nullptr) &&
           prediction_unit(x0, y0 + s * 3 / 4, s, qs, 1, false, nullptr);
      break;
    case PART_nLx2N:
      ok = prediction_unit(x0, y0, qs, s, 0, false, nullptr) &&
           prediction_unit(x0 + qs, y0, s * 3 / 4, s, 1, false, nullptr);
      break;
    case PART_nRx2N:
      ok = prediction_unit(x0, y0, s * 3 / 4, s, 0, false, nullptr) &&
           prediction_unit(x0 + s * 3 / 4, y0, qs, s, 1, false, nullptr);
      break;
    case PART_NxN:
      ok = prediction_unit(x0, y0, hs, hs, 0, false, nullptr) &&
           prediction_unit(x0 + hs, y0, hs, hs, 1, false, nullptr) &&
           prediction_unit(x0, y0 + hs, hs, hs, 2, false, nullptr) &&
           prediction_unit(x0 + hs, y0 + hs, hs, hs, 3, false, nullptr);
      break;
  }
  if (!ok) return false;
  int rqt_root_cbf = 1;
  if (!(part_mode_ == PART_2Nx2N && merge0)) rqt_root_cbf = rd_.rqt_root_cbf();
  if (rqt_root_cbf) {
    max_trafo_depth_ = sps_.max_transform_hierarchy_depth_inter;
    if (!transform_tree(x0, y0, x0, y0, log2_cb_size, 0, 0, false, false)) return false;
  }
  fill(fs_.qp_y, x0, y0, w, h, static_cast<int8_t>(qp_y_));
  qp_y_prev_ = qp_y_;
  return !rd_.eng.overrun();
}

// 7.3.8.7 pcm_sample(): the samples follow pcm_flag byte-aligned, then CABAC restarts (9.3.2.5).
bool SliceDecoder::pcm_sample(int x0, int y0, int log2_cb_size) {
  size_t bitpos = rd_.eng.aligned_byte_after_terminate() * 8;
  auto bits = [&](int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i, ++bitpos)
      v = (v << 1) | (bitpos < size_ * 8 ? (rbsp_[bitpos >> 3] >> (7 - (bitpos & 7))) & 1 : 0);
    return v;
  };
  const int s = 1 << log2_cb_size;
  const int pbd_y = sps_.pcm_sample_bit_depth_luma_minus1 + 1;
  const int pbd_c = sps_.pcm_sample_bit_depth_chroma_minus1 + 1;
  // PicParams::derive checked these against the picture's bit depths; an SPS of the same id
  // arriving between two slices of the picture (a damaged stream) may have changed them since
  if (pbd_y > pp_.bit_depth_y || pbd_c > pp_.bit_depth_c) return false;
  PcmBlock b;
  b.x = uint16_t(x0);
  b.y = uint16_t(y0);
  b.log2_size = uint8_t(log2_cb_size);
  b.offset = uint32_t(recon_->pcm_samples.size());
  recon_->pcm.push_back(b);
  for (int i = 0; i < s * s; ++i) recon_->pcm_samples.push_back(uint16_t(bits(pbd_y) << (pp_.bit_depth_y - pbd_y)));
  for (int i = 0; i < s * s / 2; ++i)
    recon_->pcm_samples.push_back(uint16_t(bits(pbd_c) << (pp_.bit_depth_c - pbd_c)));
  if (bitpos > size_ * 8) return false;
  rd_.eng.init(rbsp_, size_, (bitpos + 7) >> 3);
  return true;
}

// 8.4.2 derivation process for luma intra prediction mode.
void SliceDecoder::intra_luma_modes(int x0, int y0, int n_cb_s, bool nxn, const int prev_flag[4],
                                    const int mpm_idx[4], const int rem[4]) {
  const int pb = nxn ? n_cb_s / 2 : n_cb_s;
  for (int j = 0, i = 0; j < n_cb_s; j += pb)
    for (int k = 0; k < n_cb_s; k += pb, ++i) {
      const int x_pb = x0 + k, y_pb = y0 + j;
      auto cand = [&](int xn, int yn, bool above) {
        if (!available(x_pb, y_pb, xn, yn)) return 1;
        const size_t n = fs_.idx(xn, yn);
        if (fs_.pred_mode[n] != MODE_INTRA || fs_.pcm[n]) return 1;
        if (above && yn < ((y_pb >> pp_.log2_ctb_size) << pp_.log2_ctb_size)) return 1;
        return int(fs_.intra_mode[n]);
      };
      const int a = cand(x_pb - 1, y_pb, false);
      const int b = cand(x_pb, y_pb - 1, true);
      int c[3];
      if (a == b) {
        if (a < 2) {
          c[0] = 0; c[1] = 1; c[2] = 26;
        } else {
          c[0] = a;
          c[1] = 2 + ((a + 29) % 32);
          c[2] = 2 + ((a - 2 + 1) % 32);
        }
      } else {
        c[0] = a;
        c[1] = b;
        c[2] = (a != 0 && b != 0) ? 0 : ((a != 1 && b != 1) ? 1 : 26);
      }
      int mode;
      if (prev_flag[i]) {
        mode = c[mpm_idx[i]];
      } else {
        std::sort(c, c + 3);
        mode = rem[i];
        for (int t = 0; t < 3; ++t)
          if (mode >= c[t]) ++mode;
      }
      const int w = std::min(pb, pp_.width - x_pb), h = std::min(pb, pp_.height - y_pb);
      if (w > 0 && h > 0) fill(fs_.intra_mode, x_pb, y_pb, w, h, static_cast<uint8_t>(mode));
    }
}

// 7.3.8.8
bool SliceDecoder::transform_tree(int x0, int y0, int x_base, int y_base, int log2_trafo_size,
                                  int trafo_depth, int blk_idx, bool parent_cbf_cb,
                                  bool parent_cbf_cr) {
  int split;
  if (log2_trafo_size <= pp_.log2_max_tb_size && log2_trafo_size > pp_.log2_min_tb_size &&
      trafo_depth < max_trafo_depth_ && !(intra_split_ && trafo_depth == 0)) {
    split = rd_.split_transform_flag(log2_trafo_size);
  } else {
    const bool inter_split = sps_.max_transform_hierarchy_depth_inter == 0 &&
                             pred_mode_ == MODE_INTER && part_mode_ != PART_2Nx2N && trafo_depth == 0;
    split = log2_trafo_size > pp_.log2_max_tb_size || (intra_split_ && trafo_depth == 0) || inter_split;
  }
  bool cbf_cb = false, cbf_cr = false;
  if (log2_trafo_size > 2) {
    if (trafo_depth == 0 || parent_cbf_cb) cbf_cb = rd_.cbf_chroma(trafo_depth);
    if (trafo_depth == 0 || parent_cbf_cr) cbf_cr = rd_.cbf_chroma(trafo_depth);
  } else {
    // 4x4 luma blocks of 4:2:0: chroma is coded with blkIdx 3 using the parent's flags
    cbf_cb = parent_cbf_cb;
    cbf_cr = parent_cbf_cr;
  }
  if (split) {
    const int x1 = x0 + (1 << (log2_trafo_size - 1)), y1 = y0 + (1 << (log2_trafo_size - 1));
    return transform_tree(x0, y0, x0, y0, log2_trafo_size - 1, trafo_depth + 1, 0, cbf_cb, cbf_cr) &&
           transform_tree(x1, y0, x0, y0, log2_trafo_size - 1, trafo_depth + 1, 1, cbf_cb, cbf_cr) &&
           transform_tree(x0, y1, x0, y0, log2_trafo_size - 1, trafo_depth + 1, 2, cbf_cb, cbf_cr) &&
           transform_tree(x1, y1, x0, y0, log2_trafo_size - 1, trafo_depth + 1, 3, cbf_cb, cbf_cr);
  }
  int cbf_luma = 1;
  if (pred_mode_ == MODE_INTRA || trafo_depth != 0 || cbf_cb || cbf_cr) cbf_luma = rd_.cbf_luma(trafo_depth);
  return transform_unit(x0, y0, x_base, y_base, log2_trafo_size, trafo_depth, blk_idx, cbf_luma,
                        cbf_cb, cbf_cr);
}

// 7.3.8.10, with the reconstruction of each transform block (8.4.4.1, 8.6.2).
bool SliceDecoder::transform_unit(int x0, int y0, int x_base, int y_base, int log2_trafo_size,
                                  int trafo_depth, int blk_idx, bool cbf_luma, bool cbf_cb,
                                  bool cbf_cr) {
  (void)trafo_depth;
  const int size = 1 << log2_trafo_size;
  mark_edges(x0, y0, size, size, 1);
  if (cbf_luma || cbf_cb || cbf_cr) {
    if (pps_.cu_qp_delta_enabled_flag && !is_cu_qp_delta_coded_) {
      int delta = rd_.cu_qp_delta_abs();
      if (delta && rd_.cu_qp_delta_sign_flag()) delta = -delta;
      is_cu_qp_delta_coded_ = true;
      cu_qp_delta_val_ = delta;
      if (delta < -(26 + pp_.qp_bd_offset_y / 2) || delta > 25 + pp_.qp_bd_offset_y / 2) return false;
      set_qp_y();
    }
  }
  if (pred_mode_ == MODE_INTRA) intra_predict(x0, y0, log2_trafo_size, 0, fs_.intra_mode[fs_.idx(x0, y0)]);
  if (cbf_luma) {
    const int w = std::min(size, pp_.width - x0), h = std::min(size, pp_.height - y0);
    fill(fs_.nz_luma, x0, y0, w, h, uint8_t(1));
  }
  if (!reconstruct_block(x0, y0, log2_trafo_size, 0, cbf_luma)) return false;
  if (log2_trafo_size > 2) {
    const int xc = x0 / 2, yc = y0 / 2;
    if (pred_mode_ == MODE_INTRA) intra_predict(xc, yc, log2_trafo_size - 1, 1, intra_chroma_pred_mode_);
    if (!reconstruct_block(xc, yc, log2_trafo_size - 1, 1, cbf_cb)) return false;
    if (pred_mode_ == MODE_INTRA) intra_predict(xc, yc, log2_trafo_size - 1, 2, intra_chroma_pred_mode_);
    if (!reconstruct_block(xc, yc, log2_trafo_size - 1, 2, cbf_cr)) return false;
  } else if (blk_idx == 3) {
    const int xc = x_base / 2, yc = y_base / 2;
    if (pred_mode_ == MODE_INTRA) intra_predict(xc, yc, 2, 1, intra_chroma_pred_mode_);
    if (!reconstruct_block(xc, yc, 2, 1, cbf_cb)) return false;
    if (pred_mode_ == MODE_INTRA) intra_predict(xc, yc, 2, 2, intra_chroma_pred_mode_);
    if (!reconstruct_block(xc, yc, 2, 2, cbf_cr)) return false;
  }
  return !rd_.eng.overrun();
}

// residual_coding() of one transform block, then scaling, transform and reconstruction; false
// when the picture's TUs outgrow it (below).
bool SliceDecoder::reconstruct_block(int x0, int y0, int log2_size, int c_idx, bool coded) {
  if (!coded) return true;
  const int intra_mode = pred_mode_ == MODE_INTRA
                             ? (c_idx ? intra_chroma_pred_mode_ : fs_.intra_mode[fs_.idx(x0, y0)])
                             : -1;
  ResidualParams rp;
  rp.log2_trafo_size = log2_size;
  rp.c_idx = c_idx;
  rp.transquant_bypass = cu_transquant_bypass_;
  rp.transform_skip_enabled = pps_.transform_skip_enabled_flag;
  rp.sign_data_hiding = pps_.sign_data_hiding_enabled_flag;
  // 7.4.9.11 scanIdx
  rp.scan_idx = 0;
  if (intra_mode >= 0 && (log2_size == 2 || (log2_size == 3 && c_idx == 0))) {
    if (intra_mode >= 6 && intra_mode <= 14) rp.scan_idx = 2;
    else if (intra_mode >= 22 && intra_mode <= 30) rp.scan_idx = 1;
  }
  // The TUs of a picture cover it once: dense levels past 1.5 per luma sample (4:2:0) are CTBs
  // decoded twice, in a damaged stream, which fails here before their count outgrows the
  // levels' 30-bit places (or memory: a 32x32 TU of one level adds 1024 of them).
  const uint32_t n_dense = uint32_t(1) << (2 * log2_size);
  if (uint64_t(recon_->dense_levels) + n_dense > dense_level_limit(pp_)) return false;
  bool transform_skip = false;
  const uint64_t coded_sub_blocks = residual_coding(rd_, rp, tu_levels_, &transform_skip);
  const uint32_t coeff_offset = recon_->dense_levels;
  recon_->dense_levels += n_dense;
  record_level_blocks(coded_sub_blocks, log2_size, coeff_offset);

  HevcTu tu;
  tu.x = x0;
  tu.y = y0;
  tu.c_idx = static_cast<uint8_t>(c_idx);
  tu.log2_size = static_cast<uint8_t>(log2_size);
  tu.transquant_bypass = cu_transquant_bypass_;
  tu.transform_skip = transform_skip;
  tu.dst = pred_mode_ == MODE_INTRA && log2_size == 2 && c_idx == 0;
  int qp;
  if (c_idx == 0) {
    qp = qp_y_ + pp_.qp_bd_offset_y;
  } else {
    const int off = c_idx == 1 ? pps_.cb_qp_offset + sh_.cb_qp_offset : pps_.cr_qp_offset + sh_.cr_qp_offset;
    const int qpi = std::clamp(qp_y_ + off, -pp_.qp_bd_offset_c, 57);
    qp = hevc_chroma_qp(qpi) + pp_.qp_bd_offset_c;
  }
  tu.qp = static_cast<uint8_t>(qp);
  tu.scaling = nullptr;
  if (sps_.scaling_list_enabled_flag && !(transform_skip && log2_size > 2)) {
    const int matrix_id = c_idx + (pred_mode_ == MODE_INTRA ? 0 : 3);
    tu.scaling = pp_.scaling_factor[log2_size - 2][matrix_id].data();
  }
  tu.coeff_offset = coeff_offset;
  if (pred_mode_ == MODE_INTRA) {
    // the intra block recorded just before (transform_unit predicts, then reconstructs)
    recon_->intra.back().tu = int32_t(recon_->intra_tus.size());
    recon_->intra_tus.push_back(tu);
  } else {
    recon_->inter_tus.push_back(tu);
  }
  return true;
}

// Moves the levels of the sub-blocks `coded` of tu_levels_ (residual_coding()'s mask) into the
// recording, 16 each with their place in the dense levels, and clears them there.
void SliceDecoder::record_level_blocks(uint64_t coded, int log2_size, uint32_t dense_offset) {
  const int n = 1 << log2_size, log2_sb = log2_size - 2;
  std::vector<int16_t>& levels = recon_->levels;
  size_t at = levels.size();
  levels.resize(at + 16 * size_t(__builtin_popcountll(coded)));
  for (; coded; coded &= coded - 1) {
    const int b = __builtin_ctzll(coded);
    const int x = (b & ((1 << log2_sb) - 1)) << 2, y = (b >> log2_sb) << 2;
    int16_t* from = tu_levels_ + y * n + x;
    for (int r = 0; r < 4; ++r, at += 4) {
      std::memcpy(&levels[at], from + r * n, 4 * sizeof(int16_t));
      std::memset(from + r * n, 0, 4 * sizeof(int16_t));
    }
    recon_->level_blocks.push_back(hevc_level_block(dense_offset + uint32_t(y * n + x), log2_size));
  }
}

// 8.4.4.2.1: which reference samples are available (6.4.1 plus constrained_intra_pred_flag),
// recorded with the block for reconstruct_picture (one decision per unit of 4 luma samples).
void SliceDecoder::intra_predict(int x0, int y0, int log2_size, int c_idx, int mode) {
  const int n = 1 << log2_size;
  const int sh = c_idx ? 1 : 0;
  const int u = 4 >> sh;  // samples per unit
  const int x_cur = x0 << sh, y_cur = y0 << sh;
  HevcIntraBlock b;
  b.x = uint16_t(x0);
  b.y = uint16_t(y0);
  b.c_idx = uint8_t(c_idx);
  b.log2_size = uint8_t(log2_size);
  b.mode = uint8_t(mode);
  int bit = 0;
  auto unit = [&](int x, int y) {
    const int xl = x << sh, yl = y << sh;
    bool ok = available(x_cur, y_cur, xl, yl);
    if (ok && pps_.constrained_intra_pred_flag && fs_.pred_mode[fs_.idx(xl, yl)] != MODE_INTRA) ok = false;
    if (ok) b.avail |= uint64_t(1) << bit;
    ++bit;
  };
  for (int i = 0; i < 2 * n; i += u) unit(x0 - 1, y0 + 2 * n - 1 - i);
  unit(x0 - 1, y0 - 1);
  for (int i = 0; i < 2 * n; i += u) unit(x0 + i, y0 - 1);
  recon_->intra.push_back(b);
}

// Appends the sample work of one row to the picture's, in decoding order. The row's levels
// move to the picture's level_rows, which give `from` an array of an earlier picture's back.
// False, appending nothing, when the picture would have more dense levels than it can hold
// (rows decoding CTBs twice, as reconstruct_block refuses).
bool append_recon(PictureRecon& to, PictureRecon& from, uint32_t dense_limit) {
  if (uint64_t(to.dense_levels) + from.dense_levels > dense_limit) return false;
  const uint32_t dense = to.dense_levels, pcm = uint32_t(to.pcm_samples.size());
  const int32_t intra_tus = int32_t(to.intra_tus.size());
  if (to.level_rows.size() <= to.n_level_rows) to.level_rows.resize(to.n_level_rows + 1);
  to.level_rows[to.n_level_rows++].swap(from.levels);
  from.levels.clear();
  for (const uint32_t b : from.level_blocks) to.level_blocks.push_back(b + dense);
  to.dense_levels += from.dense_levels;
  from.level_blocks.clear();
  from.dense_levels = 0;
  to.pcm_samples.insert(to.pcm_samples.end(), from.pcm_samples.begin(), from.pcm_samples.end());
  to.pbs.insert(to.pbs.end(), from.pbs.begin(), from.pbs.end());
  for (HevcTu tu : from.inter_tus) {
    tu.coeff_offset += dense;
    to.inter_tus.push_back(tu);
  }
  for (HevcTu tu : from.intra_tus) {
    tu.coeff_offset += dense;
    to.intra_tus.push_back(tu);
  }
  for (HevcIntraBlock b : from.intra) {
    if (b.tu >= 0) b.tu += intra_tus;
    to.intra.push_back(b);
  }
  for (PcmBlock b : from.pcm) {
    b.offset += pcm;
    to.pcm.push_back(b);
  }
  return true;
}

// The rows of a WPP slice segment on several threads: each row is its own substream (entry
// points) and needs only the row above to be two CTBs ahead, the wavefront WPP was made for.
bool decode_rows_in_parallel(const SliceDecodeInput& in, const uint8_t* rbsp, size_t size) {
  const PicParams& pp = *in.pp;
  const int w = pp.pic_width_in_ctbs;
  const int y0 = in.sh->segment_address / w;
  const int n_rows = int(in.substreams->size());
  std::unique_ptr<RowSync[]> sync(new RowSync[size_t(n_rows)]);
  std::vector<std::unique_ptr<SliceDecoder>> rows;
  std::vector<PictureRecon> own_recons;
  std::vector<PictureRecon>& recons = in.row_recons ? *in.row_recons : own_recons;
  if (recons.size() < size_t(n_rows)) recons.resize(size_t(n_rows));
  for (int r = 0; r < n_rows; ++r) {  // one decoder per row; references indexed here, in order
    recons[size_t(r)].clear();
    rows.emplace_back(new SliceDecoder(in));
    rows.back()->record_into(&recons[size_t(r)]);
  }
  std::atomic<bool> abort{false};
  std::atomic<int> next{0};
  auto work = [&]() {
    for (int r; (r = next.fetch_add(1)) < n_rows;) {
      const bool ok = rows[size_t(r)]->run_row(rbsp, size, (*in.substreams)[size_t(r)], y0 + r, r == n_rows - 1,
                                               r ? &sync[size_t(r) - 1] : nullptr, sync[size_t(r)], abort);
      if (!ok) abort.store(true);
      sync[size_t(r)].done.set(w);  // never leave a waiter behind
    }
  };
  const int n_threads = std::min(in.threads, n_rows);
  if (in.workers) {
    in.workers->run(n_threads, work);
  } else {
    std::vector<std::thread> threads;
    for (int t = 1; t < n_threads; ++t) {
      try {
        threads.emplace_back(work);
      } catch (const std::system_error&) {
        break;  // no more threads to be had: the rows left are taken by those running
      }
    }
    work();
    for (std::thread& t : threads) t.join();
  }
  if (abort.load()) return false;
  for (int r = 0; r < n_rows; ++r)
    if (!append_recon(*in.recon, recons[size_t(r)], dense_level_limit(pp))) return false;
  return true;
}

}  // namespace

bool decode_slice_segment(const SliceDecodeInput& in, const uint8_t* rbsp, size_t size,
                          size_t data_offset) {
  const PicParams& pp = *in.pp;
  const GstH265PPS& pps = *pp.pps;
  // WPP rows in parallel where each row is a whole substream: no tiles, no dependent segments
  // (TableStateIdxDs), the segment starting at a row start and spanning as many rows as it has
  // substreams.
  if (in.threads > 1 && in.substreams && in.substreams->size() > 1 && pps.entropy_coding_sync_enabled_flag &&
      !pps.tiles_enabled_flag && !pps.dependent_slice_segments_enabled_flag &&
      in.sh->segment_address % pp.pic_width_in_ctbs == 0 &&
      int(in.sh->segment_address) / pp.pic_width_in_ctbs + int(in.substreams->size()) <= pp.pic_height_in_ctbs &&
      in.substreams->front() == data_offset)
    return decode_rows_in_parallel(in, rbsp, size);
  // this segment's levels go into `levels`, after every earlier one's
  if (in.recon) in.recon->flatten_levels();
  SliceDecoder d(in);
  return d.run(rbsp, size, data_offset);
}

}  // namespace gvc::hevc
