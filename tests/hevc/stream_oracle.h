// stream_oracle.h: test helpers: make HEVC streams with ffmpeg/libx265 and decode them with ffmpeg
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gvc::test {

// $FFMPEG or "ffmpeg" found on $PATH; empty if none.
std::string hevc_find_ffmpeg();
// $GVC_TEST_CLIP or opencv-doc's vtest.avi; empty if missing.
std::string hevc_find_clip();

// Encodes `frames` frames of `clip` scaled to w x h with libx265 and `x265_params`
// ("key=value:..."), pixel format `pix_fmt`, into an Annex B file. `extra_vf` (e.g. a fade)
// is appended to the scaling filter chain. Returns the stream bytes (empty on failure, with
// the reason in `err`).
std::vector<uint8_t> x265_encode(const std::string& clip, int w, int h, int frames,
                                 const std::string& pix_fmt, const std::string& x265_params,
                                 std::string& err, const std::string& extra_vf = "");

// Decodes `stream` with ffmpeg to raw frames in `pix_fmt` (yuv420p or yuv420p10le); one byte
// vector per frame of `frame_bytes` bytes.
std::vector<std::vector<uint8_t>> ffmpeg_decode(const std::vector<uint8_t>& stream,
                                                const std::string& pix_fmt, size_t frame_bytes,
                                                std::string& err);

// $DEC265 or libde265's "libde265-dec265" (Debian's libde265-examples) or "dec265" found on
// $PATH; empty if none.
std::string hevc_find_dec265();

// Decodes `stream` with libde265's dec265 (single-threaded) to raw frames: 8-bit samples, or
// 16-bit little endian above 8 bits, cropped, in output order, the same layout as
// ffmpeg_decode. Any warning dec265 prints is an error in `err`.
std::vector<std::vector<uint8_t>> dec265_decode(const std::vector<uint8_t>& stream, size_t frame_bytes,
                                                std::string& err);

// The access units of an Annex B stream (7.4.2.4.4: one begins at an AUD, VPS, SPS, PPS or
// prefix SEI that follows a slice, or at a slice with first_slice_segment_in_pic_flag that
// follows a slice), each with its start codes.
std::vector<std::vector<uint8_t>> split_access_units(const std::vector<uint8_t>& stream);

// What a stream's slice headers contain (GstH265Parser), so a test can check that the stream
// really exercises the feature it is named after.
struct StreamFeatures {
  int slices[3] = {0, 0, 0};  // by slice_type: B, P, I
  int rasl = 0, cra = 0;      // RASL and CRA pictures (first slice segments)
  int weighted = 0;           // P/B slices with a luma or chroma weight flag set
  int tmvp_off = 0;           // P/B slices with slice_temporal_mvp_enabled_flag 0
  int max_refs = 0;           // largest num_ref_idx_l0_active_minus1 + 1
  int log2_par_mrg_level = 0; // largest Log2ParMrgLevel of the PPSs that slices use
  int hidden = 0;             // pictures with pic_output_flag 0
  int max_num_reorder = 0;    // largest sps_max_num_reorder_pics[HighestTid] of the SPSs
  int max_dec_pic_buffering = 0;  // largest sps_max_dec_pic_buffering_minus1[HighestTid] + 1
  int cip = 0;                // slices whose PPS has constrained_intra_pred_flag
  int wpp = 0;                // slices whose PPS has entropy_coding_sync_enabled_flag
  int scaling_list_data = 0;  // SPSs with sps_scaling_list_data_present_flag
  int max_tb_log2 = 0;        // largest MaxTbLog2SizeY of the SPSs
  int bla[3] = {0, 0, 0};     // BLA pictures by type: BLA_W_LP, BLA_W_RADL, BLA_N_LP
  int no_output_of_prior_pics = 0;  // IRAP pictures after the first with no_output_of_prior_pics_flag
  int sps_st_rps_inter = 0;   // SPS short-term RPSs coded with inter_ref_pic_set_prediction_flag
  int slices_sps_rps = 0;     // slices with short_term_ref_pic_set_sps_flag
  int slices_rps_inter = 0;   // slices whose own st_ref_pic_set() is inter predicted
  int pps_scaling_list_data = 0;  // PPSs with pps_scaling_list_data_present_flag
  int dbk_override_offsets = 0;   // slices overriding the PPS deblocking with other offsets
  int dbk_override_off = 0;       // slices with slice_deblocking_filter_disabled_flag by override
  int slice_chroma_qp_offsets = 0;  // slices with slice_cb_qp_offset or slice_cr_qp_offset
  int col_b_from_l0 = 0;          // B slices using TMVP with collocated_from_l0_flag 1 (x265: 0)
  int max_col_ref_idx = 0;        // largest collocated_ref_idx of slices using TMVP
  int lf_across_slices_off = 0;   // slices (not first in their picture) coding
                                  // slice_loop_filter_across_slices_enabled_flag 0
};
StreamFeatures stream_features(const std::vector<uint8_t>& stream);

// Rewrites log2_parallel_merge_level_minus2 in every PPS of the stream so that Log2ParMrgLevel
// becomes `log2_level`. The result is still a conforming stream (the syntax of the slices does
// not depend on the level), but its merge candidates differ from the encoder's: a test of the
// decoding process against FFmpeg, not of the encoder. Returns an empty vector if a PPS has
// fields this rewriter does not parse (pps_scaling_list_data).
std::vector<uint8_t> with_parallel_merge_level(const std::vector<uint8_t>& stream, int log2_level);

// Turns every P picture that references the two previous pictures into one that references
// the older of them as a long-term picture (SPS long_term_ref_pics_present_flag 1; slice RPS
// {-1} plus one long-term entry). Like the PPS rewrite it changes the decoding (no MV scaling
// to a long-term picture, LongTermRefPic rules of merge/AMVP/TMVP), not the syntax of the
// slice data. `n_lt` receives the number of slices rewritten. Empty when the stream has
// something the rewriter does not handle (x265 P-only streams are handled).
std::vector<uint8_t> with_long_term_refs(const std::vector<uint8_t>& stream, int* n_lt);

// Sets lists_modification_present_flag in the PPSs and gives every P and B slice with more
// than one reference picture a ref_pic_lists_modification() that rotates RefPicListTemp0 by
// one entry and RefPicListTemp1 by two (8.3.4). `n_mod` receives the number of slices changed.
// Empty when the stream has something the rewriter does not handle.
std::vector<uint8_t> with_list_modification(const std::vector<uint8_t>& stream, int* n_mod);

// Sets output_flag_present_flag in the PPSs and gives every third picture in decode order
// (the 3rd, 6th, ...) pic_output_flag = 0 in all its slice segment headers, the others 1: those
// pictures are decoded, kept as references, and never output (C.5.2.3). `n_hidden` receives
// the number of pictures hidden. Empty when the stream has something the rewriter does not
// handle (num_extra_slice_header_bits, separate colour planes).
std::vector<uint8_t> with_pic_output_flag(const std::vector<uint8_t>& stream, int* n_hidden);

// The number of slice segment NAL units that the slice segment header writer of the rewriters
// below, given GstH265Parser's values of each header unchanged, does not write back byte for
// byte (0: it writes the stream's syntax as it is); -1 if the stream could not be rewritten.
int slice_header_writer_mismatches(const std::vector<uint8_t>& stream);

// Turns every CRA picture after the first IRAP picture into a BLA picture of `bla_type`
// (GST_H265_NAL_SLICE_BLA_W_LP, _W_RADL or _N_LP; same slice header syntax as CRA). Their RASL
// pictures are then not output (NoRaslOutputFlag 1, 8.1.3); with BLA_W_RADL and BLA_N_LP they
// are not allowed in the stream (7.4.2.2) and are left out. `n_skipped` receives the number of
// RASL pictures concerned. Empty when a BLA_N_LP would have RADL pictures.
std::vector<uint8_t> with_bla(const std::vector<uint8_t>& stream, int bla_type, int* n_skipped);

// Sets no_output_of_prior_pics_flag to `flag` on every IDR and BLA picture but the first
// picture: with 1, the pictures still waiting for output in the DPB when it arrives are
// discarded (C.5.2.2). `n_changed` receives the number of pictures whose flag changed.
std::vector<uint8_t> with_no_output_of_prior_pics(const std::vector<uint8_t>& stream, bool flag, int* n_changed);

// Moves the short-term RPSs that the slices code into the SPS (num_short_term_ref_pic_sets;
// each set after the first inter predicted from the one before it where some deltaRps allows)
// and has the slices select them (short_term_ref_pic_set_sps_flag 1, short_term_ref_pic_set_idx
// of Ceil(Log2(num_short_term_ref_pic_sets)) bits). With `one_in_slices`, the last distinct
// RPS stays in the slice headers as st_ref_pic_set(num_short_term_ref_pic_sets), inter
// predicted from an SPS set (delta_idx_minus1) where one allows it. The RPSs, and so the
// decoded pictures, stay the same: a test of the syntax, which FFmpeg must decode unchanged.
// `n_from_sps` receives the number of pictures that take their RPS from the SPS. Empty when
// the stream has something this does not handle.
std::vector<uint8_t> with_sps_rps(const std::vector<uint8_t>& stream, bool one_in_slices, int* n_from_sps);

// Gives every PPS pps_scaling_list_data() (explicit lists, copies by
// scaling_list_pred_matrix_id_delta in every size including 32x32, a default 4x4 list), other
// than the SPS's. The SPS must have scaling_list_enabled_flag. `n_pps` receives the number of
// PPSs changed.
std::vector<uint8_t> with_pps_scaling_lists(const std::vector<uint8_t>& stream, int* n_pps);

// Sets pps_slice_chroma_qp_offsets_present_flag and gives the slices slice_cb_qp_offset and
// slice_cr_qp_offset rotating through other values (up to the -12..12 limit of the sums with
// the PPS's): the chroma QPs of dequantization change, not those of chroma deblocking, which
// take only pps_cb_qp_offset / pps_cr_qp_offset (8.7.2.5.5). `n_slices` receives the number of
// slices with an offset other than 0.
std::vector<uint8_t> with_slice_chroma_qp_offsets(const std::vector<uint8_t>& stream, int* n_slices);

// Gives every P and B slice that uses TMVP another collocated picture (8.5.3.2.8): the last
// entry of the other list (B slices, collocated_from_l0_flag inverted) or of list 0 (P
// slices). All slices of a picture get the same one, as 7.4.7.1 requires. `n_slices` receives
// the number of slices changed.
std::vector<uint8_t> with_other_collocated_picture(const std::vector<uint8_t>& stream, int* n_slices);

// Slice-level deblocking control: the PPSs get deblocking_filter_control_present_flag,
// deblocking_filter_override_enabled_flag and the values below; slice k of picture p (in
// decoding order, independent slice segments counted) takes slices[(p + k) % slices.size()].
// `n_overridden` receives the number of slices with deblocking_filter_override_flag.
struct SliceDeblocking {
  bool pps_loop_filter_across_slices = true;  // pps_loop_filter_across_slices_enabled_flag
  bool pps_disabled = false;                  // pps_deblocking_filter_disabled_flag
  int pps_beta_offset_div2 = 0, pps_tc_offset_div2 = 0;
  struct Slice {
    bool override;  // deblocking_filter_override_flag
    bool disabled;  // slice_deblocking_filter_disabled_flag
    int beta_offset_div2, tc_offset_div2;
    bool loop_filter_across_slices;  // slice_loop_filter_across_slices_enabled_flag (where coded)
  };
  std::vector<Slice> slices;
};
std::vector<uint8_t> with_slice_deblocking(const std::vector<uint8_t>& stream, const SliceDeblocking& d,
                                           int* n_overridden);

// Drops every VPS, SPS and PPS NAL unit that repeats, byte for byte, the latest one of its
// type (x265 repeats them before each IRAP picture). The decoding process is unchanged (a
// repeated parameter set with the same content changes nothing); `n_dropped` receives how
// many were dropped.
std::vector<uint8_t> without_repeated_parameter_sets(const std::vector<uint8_t>& stream, int* n_dropped);

// Byte offset of the `n`th (0-based) NAL unit of type `nal_type` in an Annex B stream, at its
// start code; stream.size() if there is none.
size_t nth_nal_offset(const std::vector<uint8_t>& stream, int nal_type, int n);

}  // namespace gvc::test
