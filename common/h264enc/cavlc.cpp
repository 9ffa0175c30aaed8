// cavlc.cpp: CAVLC residual blocks (9.2) and the macroblock layer of CAVLC slices (7.3.5)
#include "common/h264enc/cavlc.h"

#include <cstdlib>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/h264enc/tables.h"

namespace gvc::h264 {

namespace {

inline void put_vlc(BitWriter& bw, const Vlc& v) { bw.put_bits(v.len, v.bits); }

// Bit i set when block[i] != 0, i in 0..15: the coded levels are found from it without
// a branch per coefficient, and an empty block costs one test.
inline uint32_t nonzero_mask16(const int16_t* block) {
#if defined(__SSE2__)
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 8));
  // packs saturates, so a level stays non-zero as a byte
  const __m128i zero = _mm_cmpeq_epi8(_mm_packs_epi16(lo, hi), _mm_setzero_si128());
  return ~uint32_t(_mm_movemask_epi8(zero)) & 0xffffu;
#else
  uint32_t m = 0;
  for (int i = 0; i < 16; i++) m |= uint32_t(block[i] != 0) << i;
  return m;
#endif
}

// The same for the 4 levels of a chroma DC block.
inline uint32_t nonzero_mask4(const int16_t* block) {
#if defined(__SSE2__)
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block));
  const __m128i zero = _mm_cmpeq_epi8(_mm_packs_epi16(v, v), _mm_setzero_si128());
  return ~uint32_t(_mm_movemask_epi8(zero)) & 0xfu;
#else
  uint32_t m = 0;
  for (int i = 0; i < 4; i++) m |= uint32_t(block[i] != 0) << i;
  return m;
#endif
}

inline uint32_t nonzero_mask(const int16_t* levels, int n) {
  uint32_t m = 0;
  for (int i = 0; i < n; i++) m |= uint32_t(levels[i] != 0) << i;
  return m;
}

inline int highest_bit(uint32_t m) { return 31 - __builtin_clz(m); }

// level_prefix, its stop bit and level_suffix of one levelCode with the current suffixLength
// (level_code_parts, cavlc_bits.h) as one code: at most 15 zeros, the one and a 12-bit suffix.
// Returns the code with a one above its highest bit.
uint32_t level_code_bits(int level_code, int suffix_length) {
  const LevelCode c = level_code_parts(level_code, suffix_length);
  const int len = c.prefix + 1 + c.suffix_size;
  return 1u << len | 1u << c.suffix_size | uint32_t(c.suffix);
}

// Codes precomputed once, each with a one above its highest bit that gives its length (one
// put_bits instead of a branch or a table look-up per syntax element).
struct CavlcCodes {
  // level_prefix / level_suffix of levelCode 0..127 (|level| <= 64), [suffixLength].
  uint32_t level[7][128];
  // total_zeros and every run_before of a 4x4 block (maxNumCoeff 15 or 16) depend only on
  // which of its levels are non-zero: [that mask] (at most 30 bits; the mask of 16 levels has
  // none, TotalCoeff == maxNumCoeff).
  uint32_t zeros[1 << 16];

  CavlcCodes() {
    for (int sl = 0; sl < 7; sl++)
      for (int lc = 0; lc < 128; lc++) level[sl][lc] = level_code_bits(lc, sl);
    zeros[0] = 0;
    for (uint32_t nz = 1; nz < (1u << 16); nz++) {
      const int total_coeff = __builtin_popcount(nz), last = highest_bit(nz);
      const int total_zeros = last + 1 - total_coeff;
      const Vlc tz = total_coeff < 16 ? kTotalZeros[total_coeff - 1][total_zeros] : Vlc{0, 0};
      uint64_t bits = tz.bits;
      int len = tz.len;
      int zeros_left = total_zeros;
      for (uint32_t m = nz & ~(1u << last), i = uint32_t(last); m && zeros_left > 0;) {
        const int next = highest_bit(m);
        const int run = int(i) - next - 1;
        const Vlc rb = kRunBefore[(zeros_left < 7 ? zeros_left : 7) - 1][run];
        bits = bits << rb.len | rb.bits;
        len += rb.len;
        zeros_left -= run;
        m &= ~(1u << next);
        i = uint32_t(next);
      }
      zeros[nz] = uint32_t(bits | uint64_t(1) << len);
    }
  }
};

const CavlcCodes& cavlc_codes() {
  static const CavlcCodes* codes = new CavlcCodes;  // built on first use, never freed
  return *codes;
}

// coeff_token table of nC >= 0 (Table 9-5 columns): [nC], nC <= 16.
constexpr uint8_t kNcClass[17] = {0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3};

// TrailingOnes from bit k set when the k-th level from the end is +-1: [those bits of the last 3].
constexpr uint8_t kTrailingOnes[8] = {0, 1, 0, 2, 0, 1, 0, 3};

// The codes of one block, gathered in a register and handed to the writer at most 64 bits at
// a time: the writer keeps its state in memory, where a put_bits per syntax element waits on the
// store of the one before.
class BlockBits {
 public:
  explicit BlockBits(BitWriter& bw) : bw_(bw) {}
  // `value` < 2^n, n <= 32.
  void put(int n, uint32_t value) {
    if (len_ + n > 64) flush();
    bits_ = bits_ << n | value;
    len_ += n;
  }
  // A code of cavlc_codes(), the marker bit dropped.
  void put_marked(uint32_t code) {
    const int n = highest_bit(code);
    put(n, code ^ (1u << n));
  }
  void flush() {
    if (len_ > 32) {
      bw_.put_bits(len_ - 32, uint32_t(bits_ >> 32));
      len_ = 32;
    }
    bw_.put_bits(len_, uint32_t(bits_));
    len_ = 0;
  }

 private:
  BitWriter& bw_;
  uint64_t bits_ = 0;
  int len_ = 0;
};

// residual_block_cavlc() of levels[0, max_num_coeff) whose non-zero ones are the bits of `nz`
// (not 0), coeff_token from the table of its nC. Kept out of line: empty blocks, most of them,
// are written by residual_block without the call.
[[gnu::noinline]] int coded_residual_block(BitWriter& bw, const CavlcCodes& codes, const int16_t* levels, uint32_t nz,
                                           int max_num_coeff, const Vlc* coeff_token) {
  // Non-zero levels from the highest frequency down; a 2 after the last (not a level) ends the
  // trailing ones.
  int level[16];
  level[1] = level[2] = 2;
  const int last = highest_bit(nz);
  int total_coeff = 0;
  for (uint32_t m = nz; m; total_coeff++) {
    const int i = highest_bit(m);
    level[total_coeff] = levels[i];
    m ^= 1u << i;
  }
  // TrailingOnes (at most 3 levels of +-1 from the end) and their trailing_ones_sign_flags go out
  // with coeff_token.
  auto is_one = [](int v) { return int(unsigned(v + 1) <= 2u); };  // +-1, levels are not 0
  const int ones = is_one(level[0]) | is_one(level[1]) << 1 | is_one(level[2]) << 2;
  const int trailing_ones = kTrailingOnes[ones];
  const uint32_t signs = (uint32_t(level[0] < 0) << 2 | uint32_t(level[1] < 0) << 1 | uint32_t(level[2] < 0)) >>
                         (3 - trailing_ones);
  const Vlc token = coeff_token[4 * total_coeff + trailing_ones];
  BlockBits out(bw);
  out.put(token.len + trailing_ones, uint32_t(token.bits) << trailing_ones | signs);

  int suffix_length = (total_coeff > 10 && trailing_ones < 3) ? 1 : 0;
  // After fewer than three trailing ones the first level is at least 2 in magnitude and its
  // levelCode is 2 less (9.2.2.1): it is coded one step nearer zero.
  int nearer = trailing_ones < 3;
  for (int i = trailing_ones; i < total_coeff; i++, nearer = 0) {
    const int v = level[i], neg = v < 0;
    const int mag = neg ? -v : v;
    const int level_code = 2 * (mag - nearer) - 2 + neg;
    out.put_marked(level_code < 128 ? codes.level[suffix_length][level_code]
                                    : level_code_bits(level_code, suffix_length));
    suffix_length += suffix_length == 0;
    suffix_length += int(mag > (3 << (suffix_length - 1))) & int(suffix_length < 6);
  }

  if (total_coeff < max_num_coeff) {
    if (max_num_coeff != 4) {
      out.put_marked(codes.zeros[nz]);
    } else {
      // total_zeros and run_before of chroma DC
      const int total_zeros = last + 1 - total_coeff;
      const Vlc tz = kTotalZerosChromaDc[total_coeff - 1][total_zeros];
      out.put(tz.len, tz.bits);
      int zeros_left = total_zeros;
      for (uint32_t m = nz & ~(1u << last), i = uint32_t(last); m && zeros_left > 0;) {
        const int next = highest_bit(m);
        const int run = int(i) - next - 1;
        const Vlc rb = kRunBefore[(zeros_left < 7 ? zeros_left : 7) - 1][run];
        out.put(rb.len, rb.bits);
        zeros_left -= run;
        m &= ~(1u << next);
        i = uint32_t(next);
      }
    }
  }
  out.flush();
  return total_coeff;
}

// residual_block_cavlc() of any block.
inline int residual_block(BitWriter& bw, const CavlcCodes& codes, const int16_t* levels, uint32_t nz,
                          int max_num_coeff, const Vlc* coeff_token) {
  if (nz) return coded_residual_block(bw, codes, levels, nz, max_num_coeff, coeff_token);
  put_vlc(bw, coeff_token[0]);
  return 0;
}

// coeff_token table of nC `nc` (-1: chroma DC).
inline const Vlc* coeff_token_table(int nc) { return nc < 0 ? kCoeffTokenChromaDc : kCoeffToken[kNcClass[nc]]; }

// nA and nB of each block (9.2.1) as indices into the TotalCoeff of a macroblock's own blocks
// followed by those of the neighbouring blocks left of it (by row) and above it (by column):
// luma [0, 16) own, [16, 20) left, [20, 24) above; chroma [0, 4) own, [4, 6) left, [6, 8) above.
struct NeighbourIndex {
  uint8_t luma_a[16] = {}, luma_b[16] = {};
  uint8_t chroma_a[4] = {}, chroma_b[4] = {};
  constexpr NeighbourIndex() {
    for (int blk = 0; blk < 16; blk++) {
      const int bx = kBlkX[blk], by = kBlkY[blk];
      luma_a[blk] = uint8_t(bx ? kBlkIdx[by][bx - 1] : 16 + by);
      luma_b[blk] = uint8_t(by ? kBlkIdx[by - 1][bx] : 20 + bx);
    }
    for (int blk = 0; blk < 4; blk++) {
      const int bx = blk & 1, by = blk >> 1;
      chroma_a[blk] = uint8_t(bx ? blk - 1 : 4 + by);
      chroma_b[blk] = uint8_t(by ? blk - 2 : 6 + bx);
    }
  }
};
constexpr NeighbourIndex kNeighbour{};

// TotalCoeff of a macroblock's blocks and of the neighbouring ones, laid out as NeighbourIndex
// says; kNotAvailable for a neighbour outside the picture or slice.
constexpr uint8_t kNotAvailable = 0x80;
struct TotalCoeffs {
  uint8_t luma[24];
  uint8_t chroma[2][8];
};

TotalCoeffs total_coeffs(const MbMap& map, const Macroblock& cur, int mx, int my) {
  TotalCoeffs t;
  const Macroblock* a = map.at(mx - 1, my);
  const Macroblock* b = map.at(mx, my - 1);
  for (int i = 0; i < 16; i++) t.luma[i] = cur.total_coeff_luma[i];
  for (int i = 0; i < 4; i++) {
    t.luma[16 + i] = a ? uint8_t(nz_luma(*a, kBlkIdx[i][3])) : kNotAvailable;
    t.luma[20 + i] = b ? uint8_t(nz_luma(*b, kBlkIdx[3][i])) : kNotAvailable;
  }
  for (int c = 0; c < 2; c++) {
    for (int i = 0; i < 4; i++) t.chroma[c][i] = cur.total_coeff_chroma[c][i];
    for (int i = 0; i < 2; i++) {
      t.chroma[c][4 + i] = a ? uint8_t(nz_chroma(*a, c, 2 * i + 1)) : kNotAvailable;
      t.chroma[c][6 + i] = b ? uint8_t(nz_chroma(*b, c, 2 + i)) : kNotAvailable;
    }
  }
  return t;
}

// nC from nA and nB (combine_nc of cavlc_bits.h): their rounded mean when both are
// available, the one available, else 0. With kNotAvailable = 0x80, a sum of 0x80 or more has
// at most one of them in its low bits.
inline int nc_of(int na, int nb) {
  const int sum = na + nb;
  return sum < kNotAvailable ? (sum + 1) >> 1 : sum & (kNotAvailable - 1);
}

// te(v) of ref_idx_l0 with cMax = num_ref_idx_l0_active - 1 (9.1.2): one inverted bit when
// cMax is 1, else ue(v).
void put_ref_idx(BitWriter& bw, int ref_idx, int num_ref_idx_active) {
  if (num_ref_idx_active == 2)
    bw.put_bit(!ref_idx);
  else
    bw.put_ue(uint32_t(ref_idx));
}

// mvd_l0 of the (sub-)partition whose top-left 4x4 block is at (x, y).
void put_mvd(BitWriter& bw, const Macroblock& mb, int x, int y) {
  bw.put_se(mb.mvd[4 * y + x][0]);  // mvd_l0[][][0]
  bw.put_se(mb.mvd[4 * y + x][1]);  // mvd_l0[][][1]
}

// prev_intra4x4_pred_mode_flag / rem_intra4x4_pred_mode of the 16 blocks (7.3.5.1), the
// predicted modes (8.3.1.1, predict_i4_mode of cavlc_bits.h) from the neighbours read once.
void write_i4_modes(BitWriter& bw, const MbMap& map, const Macroblock& mb, int mx, int my) {
  const Macroblock* a = map.at(mx - 1, my);
  const Macroblock* b = map.at(mx, my - 1);
  // A neighbour that is not Intra_4x4 counts as Intra_4x4_DC; -1: not available.
  int left[4], top[4];
  for (int i = 0; i < 4; i++) {
    left[i] = !a ? -1 : a->type == MbType::I4x4 ? a->i4_mode[kBlkIdx[i][3]] : 2;
    top[i] = !b ? -1 : b->type == MbType::I4x4 ? b->i4_mode[kBlkIdx[3][i]] : 2;
  }
  for (int blk = 0; blk < 16; blk++) {
    const int bx = kBlkX[blk], by = kBlkY[blk];
    const int mode_a = bx ? mb.i4_mode[kBlkIdx[by][bx - 1]] : left[by];
    const int mode_b = by ? mb.i4_mode[kBlkIdx[by - 1][bx]] : top[bx];
    const int pred = (mode_a < 0 || mode_b < 0) ? 2 : mode_a < mode_b ? mode_a : mode_b;  // dcPredModePredictedFlag
    const int mode = mb.i4_mode[blk];
    // prev_intra4x4_pred_mode_flag, then rem_intra4x4_pred_mode when it is 0
    const int rem = mode < pred ? mode : mode - 1;
    bw.put_bits(mode == pred ? 1 : 4, mode == pred ? 1u : uint32_t(rem));
  }
}

}  // namespace

int write_residual_block(BitWriter& bw, const int16_t* levels, int max_num_coeff, int nc) {
  return residual_block(bw, cavlc_codes(), levels, nonzero_mask(levels, max_num_coeff), max_num_coeff,
                        coeff_token_table(nc));
}

void write_macroblock(BitWriter& bw, const MbMap& map, int mx, int my, bool p_slice,
                      int num_ref_idx_active) {
  const Macroblock& mb = *map.at(mx, my);
  int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  if (mb.type == MbType::PSkip) return;  // coded as part of mb_skip_run
  bw.put_ue(mb_type_value(mb, p_slice));
  if (mb.type == MbType::IPcm) {
    bw.align_zero();  // pcm_alignment_zero_bit
    for (int i = 0; i < 384; i += 4)
      bw.put_bits(32, uint32_t(mb.pcm[i]) << 24 | uint32_t(mb.pcm[i + 1]) << 16 | uint32_t(mb.pcm[i + 2]) << 8 |
                          mb.pcm[i + 3]);
    return;
  }

  if (mb.type == MbType::I4x4) write_i4_modes(bw, map, mb, mx, my);
  if (is_intra(mb.type)) {
    bw.put_ue(mb.chroma_mode);
  } else if (mb.type == MbType::P8x8) {
    // sub_mb_pred() (7.3.5.2)
    for (int i = 0; i < 4; i++) bw.put_ue(mb.sub_mb_type[i]);
    if (num_ref_idx_active > 1)
      for (int i = 0; i < 4; i++) put_ref_idx(bw, mb.ref_idx[i], num_ref_idx_active);
    for (int i = 0; i < 4; i++) {
      for (int j = 0; j < num_sub_mb_part(mb.sub_mb_type[i]); j++) {
        int x, y, w, h;
        sub_partition_rect(mb.sub_mb_type[i], j, &x, &y, &w, &h);
        put_mvd(bw, mb, 2 * (i & 1) + x, 2 * (i >> 1) + y);
      }
    }
  } else {
    // mb_pred() (7.3.5.1)
    const int parts = num_mb_part(mb.type);
    int x[2], y[2], w, h;
    for (int i = 0; i < parts; i++) partition_rect(mb.type, i, &x[i], &y[i], &w, &h);
    if (num_ref_idx_active > 1)
      for (int i = 0; i < parts; i++)
        put_ref_idx(bw, mb.ref_idx[(y[i] >> 1) * 2 + (x[i] >> 1)], num_ref_idx_active);
    for (int i = 0; i < parts; i++) put_mvd(bw, mb, x[i], y[i]);
  }
  if (mb.type != MbType::I16x16) bw.put_ue(kCbpToCodeNum[is_intra(mb.type) ? 0 : 1][mb.cbp & 0x3f]);
  if (cbp_luma == 0 && cbp_chroma == 0 && mb.type != MbType::I16x16) return;

  bw.put_bit(1);  // mb_qp_delta se(0): constant QP
  const CavlcCodes& codes = cavlc_codes();
  const TotalCoeffs t = total_coeffs(map, mb, mx, my);
  auto luma_token = [&](int blk) {
    return kCoeffToken[kNcClass[nc_of(t.luma[kNeighbour.luma_a[blk]], t.luma[kNeighbour.luma_b[blk]])]];
  };
  if (mb.type == MbType::I16x16) {
    residual_block(bw, codes, mb.luma_dc, nonzero_mask16(mb.luma_dc), 16, luma_token(0));
    if (cbp_luma)
      for (int blk = 0; blk < 16; blk++)
        residual_block(bw, codes, mb.luma[blk] + 1, nonzero_mask16(mb.luma[blk]) >> 1, 15, luma_token(blk));
  } else {
    for (int b8 = 0; b8 < 4; b8++)
      if (cbp_luma & (1 << b8))
        for (int blk = 4 * b8; blk < 4 * b8 + 4; blk++)
          residual_block(bw, codes, mb.luma[blk], nonzero_mask16(mb.luma[blk]), 16, luma_token(blk));
  }
  if (cbp_chroma) {
    for (int c = 0; c < 2; c++)
      residual_block(bw, codes, mb.chroma_dc[c], nonzero_mask4(mb.chroma_dc[c]), 4, kCoeffTokenChromaDc);
  }
  if (cbp_chroma & 2) {
    for (int c = 0; c < 2; c++)
      for (int blk = 0; blk < 4; blk++) {
        const int nc = nc_of(t.chroma[c][kNeighbour.chroma_a[blk]], t.chroma[c][kNeighbour.chroma_b[blk]]);
        residual_block(bw, codes, mb.chroma_ac[c][blk] + 1, nonzero_mask16(mb.chroma_ac[c][blk]) >> 1, 15,
                       kCoeffToken[kNcClass[nc]]);
      }
  }
}

}  // namespace gvc::h264
