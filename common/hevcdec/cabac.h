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

// The same tables indexed by a whole context state byte, (pStateIdx << 1) | valMps, so that a
// decision needs no unpacking of it.
struct CabacStateTables {
  uint8_t lps[4][128];   // [qRangeIdx][state] -> ivlLpsRange
  uint8_t next[2][128];  // [0 most probable symbol, 1 least][state] -> state after the bin
};
extern const CabacStateTables kCabacStates;

struct CabacContexts {
  uint8_t state[kNumCtx];  // (pStateIdx << 1) | valMps
};

// 9.3.2.2 initialisation of context variables; init_type 0 = I, 1 = P, 2 = B (9.3.2.2 eq. 9-7).
void cabac_init_contexts(CabacContexts& ctx, int init_type, int slice_qp_y);

// The arithmetic decoder over an RBSP byte range (emulation prevention already removed).
//
// value_ holds the 9-bit ivlOffset of 9.3.4.3 in its bits kFrac and up (bit 63 is left free for
// the doubling of a bypass bin), below it the stream bits already read that follow it, then a
// single 1 bit that marks where those end, then zeros. RenormD's
// "ivlOffset = (ivlOffset << 1) | read_bits(1)" is then value_ <<= 1, and ivlOffset >= range
// is value_ >= range << kFrac (the bits below kFrac cannot change that outcome). Four bytes are
// read at once when the marker has left the low 32 bits (fewer than 22 bits read ahead); past
// the end of the data the stream reads as zeros, as read_bits would.
class CabacEngine {
 public:
  // 9.3.2.5: starts decoding at byte `pos` of data[0..size).
  void init(const uint8_t* data, size_t size, size_t pos);

  int decode_decision(uint8_t& state) {  // 9.3.4.3.2
    refill();
    const unsigned s = state;
    const uint32_t lps = kCabacStates.lps[(range_ >> 6) & 3][s];
    // both successors read before the symbol is known: off the path from one bin to the next
    const uint32_t next_mps = kCabacStates.next[0][s], next_lps = kCabacStates.next[1][s];
    uint32_t range = range_ - lps;
    const uint64_t scaled = uint64_t(range) << kFrac;
    const unsigned is_lps = value_ >= scaled;
    // masks, not branches: which symbol comes is as good as random
    const uint32_t lps_mask = 0 - is_lps;
    value_ -= scaled & (0 - uint64_t(is_lps));
    range ^= (range ^ lps) & lps_mask;
    state = uint8_t(next_mps ^ ((next_mps ^ next_lps) & lps_mask));
    const int shift = __builtin_clz(range) - 23;  // RenormD: doubled up to 256..510
    range_ = range << shift;
    value_ <<= shift;
    return int((s & 1) ^ is_lps);
  }
  int decode_bypass() {  // 9.3.4.3.4
    refill();
    value_ <<= 1;
    const uint64_t scaled = uint64_t(range_) << kFrac;
    const unsigned bin = value_ >= scaled;
    value_ -= bin ? scaled : 0;
    return int(bin);
  }
  int decode_terminate();               // 9.3.4.3.5
  // n (0..32) bypass bins, first bin most significant; always inline, where an engine kept in
  // registers (ResidualSyntax) would otherwise have to go to memory for the call
  __attribute__((always_inline)) uint32_t decode_bypass_bits(int n) {
    uint32_t v = 0;
    for (; n > 16; n -= 16) v = (v << 16) | decode_bypass_bits_16(16);
    return (v << n) | decode_bypass_bits_16(n);
  }
  // The next 16 bypass bins (9.3.4.3.4), first bin most significant, without decoding them:
  // n bypass bins are the quotient of ivlOffset followed by the next n stream bits by
  // ivlCurrRange (which bypass decoding leaves as it is), the remainder the ivlOffset after
  // them. skip_bypass_bits() then decodes the first n of the 16.
  uint32_t peek_bypass_bits_16() {
    refill();
    return uint32_t(value_ >> (kFrac - 16)) / range_;
  }
  void skip_bypass_bits(int n, uint32_t peeked) {  // n <= 16
    const uint32_t offset = uint32_t(value_ >> (kFrac - n)) - (peeked >> (16 - n)) * range_;
    value_ = ((value_ << n) & ((uint64_t(1) << kFrac) - 1)) | uint64_t(offset) << kFrac;
  }
  // After a terminating bin equal to 1: the byte where the following byte-aligned data begins.
  // The 9-bit engine has then read every bit of the encoder's flush (9.3.4.3.5), whose last bit
  // is alignment_bit_equal_to_one; only alignment zero bits remain before the byte boundary.
  size_t aligned_byte_after_terminate() const { return (bitpos() + 7) >> 3; }
  bool overrun() const { return bitpos() > size_ * 8 + 64; }

 private:
  static constexpr int kFrac = 54;

  // The position of the spec's 9-bit engine: bits read so far.
  size_t bitpos() const { return pos_ * 8 - size_t(kFrac - 1 - __builtin_ctzll(value_)); }
  uint32_t decode_bypass_bits_16(int n) {  // n <= 16: one refill serves them all
    refill();
    const uint64_t scaled = uint64_t(range_) << kFrac;
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      value_ <<= 1;
      const uint32_t bin = value_ >= scaled;
      value_ -= bin ? scaled : 0;
      v = (v << 1) | bin;
    }
    return v;
  }
  // At least 16 bits read ahead (a decision shifts 6 at most, a bypass 1, decode_bypass_bits 16).
  void refill() {
    if (uint32_t(value_) == 0) {
      value_ = with_32_more_bits(value_, data_, pos_, size_);
      pos_ += 4;
    }
  }
  // value_ with data[pos..pos+4) (zeros past size) put below its marker, which is at bit 32 or
  // above. Out of line and on values only: an engine the compiler keeps in registers stays there.
  __attribute__((noinline, cold)) static uint64_t with_32_more_bits(uint64_t value, const uint8_t* data,
                                                                     size_t pos, size_t size);

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t pos_ = 0;  // bytes read into value_ (zeros past size_)
  uint32_t range_ = 510;
  uint64_t value_ = 0;
};

}  // namespace gvc::hevc
