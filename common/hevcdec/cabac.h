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
class CabacEngine {
 public:
  // 9.3.2.5: starts decoding at byte `pos` of data[0..size).
  void init(const uint8_t* data, size_t size, size_t pos);
  int decode_decision(uint8_t& state);  // 9.3.4.3.2
  int decode_bypass();                  // 9.3.4.3.4
  int decode_terminate();               // 9.3.4.3.5
  uint32_t decode_bypass_bits(int n);   // n bypass bins, first bin most significant
  // After a terminating bin equal to 1: the byte where the following byte-aligned data begins.
  // The 9-bit engine has then read every bit of the encoder's flush (9.3.4.3.5), whose last bit
  // is alignment_bit_equal_to_one; only alignment zero bits remain before the byte boundary.
  size_t aligned_byte_after_terminate() const { return (bitpos_ + 7) >> 3; }
  bool overrun() const { return bitpos_ > size_ * 8 + 64; }

 private:
  int read_bit() {
    const size_t p = bitpos_++;
    if (p >= size_ * 8) return 0;
    return (data_[p >> 3] >> (7 - (p & 7))) & 1;
  }
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t bitpos_ = 0;
  uint32_t range_ = 510;
  uint32_t offset_ = 0;
};

}  // namespace gvc::hevc
