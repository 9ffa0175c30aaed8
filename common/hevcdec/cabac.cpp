// cabac.cpp: HEVC CABAC engine (9.3.4.3) and context initialisation values (9.3.2.2, Tables 9-5..9-37)
#include "common/hevcdec/cabac.h"

namespace gvc::hevc {

// Table 9-46 rangeTabLps[pStateIdx][qRangeIdx].
constexpr uint8_t kCabacRangeTabLps[64][4] = {
    {128, 176, 208, 240}, {128, 167, 197, 227}, {128, 158, 187, 216}, {123, 150, 178, 205},
    {116, 142, 169, 195}, {111, 135, 160, 185}, {105, 128, 152, 175}, {100, 122, 144, 166},
    {95, 116, 137, 158},  {90, 110, 130, 150},  {85, 104, 123, 142},  {81, 99, 117, 135},
    {77, 94, 111, 128},   {73, 89, 105, 122},   {69, 85, 100, 116},   {66, 80, 95, 110},
    {62, 76, 90, 104},    {59, 72, 86, 99},     {56, 69, 81, 94},     {53, 65, 77, 89},
    {51, 62, 73, 85},     {48, 59, 69, 80},     {46, 56, 66, 76},     {43, 53, 63, 72},
    {41, 50, 59, 69},     {39, 48, 56, 65},     {37, 45, 54, 62},     {35, 43, 51, 59},
    {33, 41, 48, 56},     {32, 39, 46, 53},     {30, 37, 43, 50},     {29, 35, 41, 48},
    {27, 33, 39, 45},     {26, 31, 37, 43},     {24, 30, 35, 41},     {23, 28, 33, 39},
    {22, 27, 32, 37},     {21, 26, 30, 35},     {20, 24, 29, 33},     {19, 23, 27, 31},
    {18, 22, 26, 30},     {17, 21, 25, 28},     {16, 20, 23, 27},     {15, 19, 22, 25},
    {14, 18, 21, 24},     {14, 17, 20, 23},     {13, 16, 19, 22},     {12, 15, 18, 21},
    {12, 14, 17, 20},     {11, 14, 16, 19},     {11, 13, 15, 18},     {10, 12, 15, 17},
    {10, 12, 14, 16},     {9, 11, 13, 15},      {9, 11, 12, 14},      {8, 10, 12, 14},
    {8, 9, 11, 13},       {7, 9, 11, 12},       {7, 9, 10, 12},       {7, 8, 10, 11},
    {6, 8, 9, 11},        {6, 7, 9, 10},        {6, 7, 8, 9},         {2, 2, 2, 2}};

// Table 9-47 state transitions.
constexpr uint8_t kCabacTransIdxLps[64] = {
    0,  0,  1,  2,  2,  4,  4,  5,  6,  7,  8,  9,  9,  11, 11, 12, 13, 13, 15, 15, 16, 16,
    18, 18, 19, 19, 21, 21, 22, 22, 23, 24, 24, 25, 26, 26, 27, 27, 28, 29, 29, 30, 30, 30,
    31, 32, 32, 33, 33, 33, 34, 34, 35, 35, 35, 36, 36, 36, 37, 37, 37, 38, 38, 63};

namespace {

constexpr CabacStateTables make_state_tables() {
  CabacStateTables t{};
  for (int s = 0; s < 128; ++s) {
    const int p_state = s >> 1, val_mps = s & 1;
    for (int q = 0; q < 4; ++q) t.lps[q][s] = kCabacRangeTabLps[p_state][q];
    t.next[0][s] = uint8_t(((p_state < 62 ? p_state + 1 : p_state) << 1) | val_mps);  // transIdxMps
    t.next[1][s] = uint8_t((kCabacTransIdxLps[p_state] << 1) | (p_state == 0 ? !val_mps : val_mps));
  }
  return t;
}

}  // namespace

constexpr CabacStateTables kCabacStates = make_state_tables();

namespace {

// initValue per context, [initType][ctxIdx] in the CtxOffset layout.
constexpr uint8_t kInitValues[3][kNumCtx] = {
    {
        153, 200,                           // sao_merge_flag, sao_type_idx
        139, 141, 157,                      // split_cu_flag
        154,                                // cu_transquant_bypass_flag
        154, 154, 154,                      // cu_skip_flag
        154, 154,                           // cu_qp_delta_abs
        154,                                // pred_mode_flag
        184, 154, 154, 154,                 // part_mode
        184,                                // prev_intra_luma_pred_flag
        63,                                 // intra_chroma_pred_mode
        154, 154,                           // merge_flag, merge_idx
        154, 154, 154, 154, 154,            // inter_pred_idc
        154, 154,                           // ref_idx_lX
        154, 154,                           // abs_mvd_greater0/1_flag
        154, 154,                           // mvp_lX_flag, rqt_root_cbf
        153, 138, 138,                      // split_transform_flag
        111, 141,                           // cbf_luma
        94, 138, 182, 154,                  // cbf_cb, cbf_cr
        139, 139,                           // transform_skip_flag
        110, 110, 124, 125, 140, 153, 125, 127, 140, 109, 111, 143, 127, 111, 79, 108, 123, 63,
        110, 110, 124, 125, 140, 153, 125, 127, 140, 109, 111, 143, 127, 111, 79, 108, 123, 63,
        91, 171, 134, 141,                  // coded_sub_block_flag
        111, 111, 125, 110, 110, 94, 124, 108, 124, 107, 125, 141, 179, 153, 125, 107, 125, 141,
        179, 153, 125, 107, 125, 141, 179, 153, 125, 140, 139, 182, 182, 152, 136, 152, 136, 153,
        136, 139, 111, 136, 139, 111,       // sig_coeff_flag
        140, 92, 137, 138, 140, 152, 138, 139, 153, 74, 149, 92, 139, 107, 122, 152, 140, 179,
        166, 182, 140, 227, 122, 197,       // coeff_abs_level_greater1_flag
        138, 153, 136, 167, 152, 152,       // coeff_abs_level_greater2_flag
    },
    {
        153, 185,
        107, 139, 126,
        154,
        197, 185, 201,
        154, 154,
        149,
        154, 139, 154, 154,
        154,
        152,
        110, 122,
        95, 79, 63, 31, 31,
        153, 153,
        140, 198,
        168, 79,
        124, 138, 94,
        153, 111,
        149, 107, 167, 154,
        139, 139,
        125, 110, 94, 110, 95, 79, 125, 111, 110, 78, 110, 111, 111, 95, 94, 108, 123, 108,
        125, 110, 94, 110, 95, 79, 125, 111, 110, 78, 110, 111, 111, 95, 94, 108, 123, 108,
        121, 140, 61, 154,
        155, 154, 139, 153, 139, 123, 123, 63, 153, 166, 183, 140, 136, 153, 154, 166, 183, 140,
        136, 153, 154, 166, 183, 140, 136, 153, 154, 170, 153, 123, 123, 107, 121, 107, 121, 167,
        151, 183, 140, 151, 183, 140,
        154, 196, 196, 167, 154, 152, 167, 182, 182, 134, 149, 136, 153, 121, 136, 137, 169, 194,
        166, 167, 154, 167, 137, 182,
        107, 167, 91, 122, 107, 167,
    },
    {
        153, 160,
        107, 139, 126,
        154,
        197, 185, 201,
        154, 154,
        134,
        154, 139, 154, 154,
        183,
        152,
        154, 137,
        95, 79, 63, 31, 31,
        153, 153,
        169, 198,
        168, 79,
        224, 167, 122,
        153, 111,
        149, 92, 167, 154,
        139, 139,
        125, 110, 124, 110, 95, 94, 125, 111, 111, 79, 125, 126, 111, 111, 79, 108, 123, 93,
        125, 110, 124, 110, 95, 94, 125, 111, 111, 79, 125, 126, 111, 111, 79, 108, 123, 93,
        121, 140, 61, 154,
        170, 154, 139, 153, 139, 123, 123, 63, 124, 166, 183, 140, 136, 153, 154, 166, 183, 140,
        136, 153, 154, 166, 183, 140, 136, 153, 154, 170, 153, 138, 138, 122, 121, 122, 121, 167,
        151, 183, 140, 151, 183, 140,
        154, 196, 167, 167, 154, 152, 167, 182, 182, 134, 149, 136, 153, 121, 136, 122, 169, 208,
        166, 167, 154, 152, 167, 182,
        107, 167, 91, 107, 107, 167,
    }};

}  // namespace

void cabac_init_contexts(CabacContexts& ctx, int init_type, int slice_qp_y) {
  const int qp = slice_qp_y < 0 ? 0 : (slice_qp_y > 51 ? 51 : slice_qp_y);
  for (int i = 0; i < kNumCtx; ++i) {
    const int v = kInitValues[init_type][i];
    const int m = (v >> 4) * 5 - 45;
    const int n = ((v & 15) << 3) - 16;
    int pre = ((m * qp) >> 4) + n;
    pre = pre < 1 ? 1 : (pre > 126 ? 126 : pre);
    const int val_mps = pre <= 63 ? 0 : 1;
    const int p_state = val_mps ? pre - 64 : 63 - pre;
    ctx.state[i] = static_cast<uint8_t>((p_state << 1) | val_mps);
  }
}

void CabacEngine::init(const uint8_t* data, size_t size, size_t pos) {
  data_ = data;
  size_ = size;
  pos_ = pos;
  range_ = 510;
  // seven bytes: ivlOffset and 47 bits after it, the marker below them
  uint64_t v = 0;
  for (int i = 0; i < 7; ++i) v = v << 8 | (pos_ + size_t(i) < size_ ? data_[pos_ + size_t(i)] : 0);
  pos_ += 7;
  value_ = v << (kFrac - 47) | uint64_t(1) << (kFrac - 48);
}

uint64_t CabacEngine::with_32_more_bits(uint64_t value, const uint8_t* data, size_t pos, size_t size) {
  const int marker = __builtin_ctzll(value);
  uint32_t next = 0;
  for (size_t i = 0; i < 4; ++i) next = next << 8 | (pos + i < size ? data[pos + i] : 0);
  return (value ^ (uint64_t(1) << marker)) | ((uint64_t(next) << 1 | 1) << (marker - 32));
}

int CabacEngine::decode_terminate() {
  refill();
  range_ -= 2;
  const uint64_t scaled = uint64_t(range_) << kFrac;
  if (value_ >= scaled) return 1;
  if (range_ < 256) {  // RenormD: range_ was >= 256, so once
    range_ <<= 1;
    value_ <<= 1;
  }
  return 0;
}

}  // namespace gvc::hevc
