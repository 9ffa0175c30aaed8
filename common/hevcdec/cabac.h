// cabac.h: HEVC CABAC arithmetic decoding engine and context variables (9.3.2, 9.3.4.3)
#pragma once

#include <cstddef>
#include <cstdint>

namespace gvc::hevc {

// Context indices: the first context of each syntax element in one state array. Counts follow
// Table 9-4 (Main/Main10 elements only).
enum CtxOffset : int {
  kCtxSaoMergeFlag = 0,              // 1
  kCtxSaoTypeIdx = 1,                // 1
  kCtxSplitCuFlag = 2,               // 3
  kCtxCuTransquantBypassFlag = 5,    // 1
  kCtxCuSkipFlag = 6,                // 3
  kCtxCuQpDeltaAbs = 9,              // 2
  kCtxPredModeFlag = 11,             // 1
  kCtxPartMode = 12,                 // 4
  kCtxPrevIntraLumaPredFlag = 16,    // 1
  kCtxIntraChromaPredMode = 17,      // 1
  kCtxMergeFlag = 18,                // 1
  kCtxMergeIdx = 19,                 // 1
  kCtxInterPredIdc = 20,             // 5
  kCtxRefIdx = 25,                   // 2
  kCtxAbsMvdGreater0Flag = 27,       // 1
  kCtxAbsMvdGreater1Flag = 28,       // 1
  kCtxMvpFlag = 29,                  // 1
  kCtxRqtRootCbf = 30,               // 1
  kCtxSplitTransformFlag = 31,       // 3
  kCtxCbfLuma = 34,                  // 2
  kCtxCbfChroma = 36,                // 4
  kCtxTransformSkipFlag = 40,        // 2 (luma, chroma)
  kCtxLastSigCoeffXPrefix = 42,      // 18
  kCtxLastSigCoeffYPrefix = 60,      // 18
  kCtxCodedSubBlockFlag = 78,        // 4
  kCtxSigCoeffFlag = 82,             // 42
  kCtxCoeffAbsLevelGreater1Flag = 124,  // 24
  kCtxCoeffAbsLevelGreater2Flag = 148,  // 6
  kNumCtx = 154,
};

// Table 9-46 rangeTabLps[pStateIdx][qRangeIdx] and Table 9-47 transIdxLps[pStateIdx] (the
// arithmetic coder's tables, shared with the test-only encoder of tests/hevc/synth_stream.cpp).
extern const uint8_t kCabacRangeTabLps[64][4];
extern const uint8_t kCabacTransIdxLps[64];

struct CabacContexts {
  uint8_t state[kNumCtx];  // (pStateIdx << 1) | valMps
};

// 9.3.2.2 initialisation of context variables; init_type 0 = I, 1 = P, 2 = B (9.3.2.2 eq. 9-7).
void cabac_init_contexts(CabacContexts& ctx, int init_type, int slice_qp_y);

// The arithmetic decoder over an RBSP byte range (emulation prevention already removed).
//
// The 9-bit ivlOffset of 9.3.4.3 is kept with the bits that follow it in the stream already
// read behind it: value_ = (ivlOffset << bits_) | the next bits_ bits. RenormD's
// "ivlOffset = (ivlOffset << 1) | read_bits(1)" is then bits_ -= 1, and bytes are read a whole
// one at a time when bits_ runs low; past the end of the data the stream reads as zeros, as
// read_bits would. The position in the stream of the spec's engine is pos_ * 8 - bits_.
class CabacEngine {
 public:
  // 9.3.2.5: starts decoding at byte `pos` of data[0..size).
  void init(const uint8_t* data, size_t size, size_t pos);

  int decode_decision(uint8_t& state) {  // 9.3.4.3.2
    refill();
    const int p_state = state >> 1;
    const uint32_t lps = kCabacRangeTabLps[p_state][(range_ >> 6) & 3];
    range_ -= lps;
    const uint64_t scaled = uint64_t(range_) << bits_;
    if (value_ < scaled) {  // most probable symbol
      const int bin = state & 1;
      if (p_state < 62) state = uint8_t(state + 2);
      if (range_ < 256) {  // RenormD: after a most probable symbol, one doubling at most
        range_ <<= 1;
        --bits_;
      }
      return bin;
    }
    value_ -= scaled;
    const int bin = !(state & 1);
    const int val_mps = p_state == 0 ? bin : state & 1;
    state = uint8_t((kCabacTransIdxLps[p_state] << 1) | val_mps);
    const int shift = __builtin_clz(lps) - 23;  // RenormD: lps (6..240) doubled up to 256..510
    range_ = lps << shift;
    bits_ -= shift;
    return bin;
  }
  int decode_bypass() {  // 9.3.4.3.4
    refill();
    --bits_;
    const uint64_t scaled = uint64_t(range_) << bits_;
    if (value_ >= scaled) {
      value_ -= scaled;
      return 1;
    }
    return 0;
  }
  int decode_terminate();               // 9.3.4.3.5
  uint32_t decode_bypass_bits(int n) {  // n (0..32) bypass bins, first bin most significant
    uint32_t v = 0;
    for (; n > 16; n -= 16) v = (v << 16) | decode_bypass_bits_16(16);
    return (v << n) | decode_bypass_bits_16(n);
  }
  // After a terminating bin equal to 1: the byte where the following byte-aligned data begins.
  // The 9-bit engine has then read every bit of the encoder's flush (9.3.4.3.5), whose last bit
  // is alignment_bit_equal_to_one; only alignment zero bits remain before the byte boundary.
  size_t aligned_byte_after_terminate() const { return (bitpos() + 7) >> 3; }
  bool overrun() const { return bitpos() > size_ * 8 + 64; }

 private:
  // The position of the spec's 9-bit engine: bits read so far.
  size_t bitpos() const { return pos_ * 8 - size_t(bits_); }
  uint32_t decode_bypass_bits_16(int n) {  // n <= 16: one refill serves them all
    refill();
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      --bits_;
      const uint64_t scaled = uint64_t(range_) << bits_;
      const uint32_t bin = value_ >= scaled;
      value_ -= scaled & (0 - uint64_t(bin));
      v = (v << 1) | bin;
    }
    return v;
  }
  // At least 16 bits behind ivlOffset (a decision shifts 6 at most, a bypass 1).
  void refill() {
    if (bits_ >= 16) return;
    while (bits_ <= 40) {
      value_ = (value_ << 8) | (pos_ < size_ ? data_[pos_] : 0);
      ++pos_;
      bits_ += 8;
    }
  }

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t pos_ = 0;     // bytes read into value_ (zeros past size_)
  int bits_ = 0;       // bits of value_ below ivlOffset
  uint32_t range_ = 510;
  uint64_t value_ = 0;
};

}  // namespace gvc::hevc
