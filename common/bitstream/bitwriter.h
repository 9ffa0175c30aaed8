// bitwriter.h: MSB-first bit writer with the H.264 descriptors u(n), ue(v), se(v) and RBSP trailing bits
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gvc {

// Number of bits of ue(v) for code number v (9.1: 2 * floor(log2(v + 1)) + 1).
inline int ue_size(uint32_t v) {
  int len = 0;
  for (uint64_t c = uint64_t(v) + 1; c > 1; c >>= 1) len++;
  return 2 * len + 1;
}

// Code number of se(v) value v (Table 9-3: k > 0 -> 2k - 1, k <= 0 -> -2k).
inline uint32_t se_to_ue(int32_t v) {
  return v > 0 ? 2u * uint32_t(v) - 1u : 2u * uint32_t(-int64_t(v));
}

inline int se_size(int32_t v) { return ue_size(se_to_ue(v)); }

class BitWriter {
 public:
  // u(n): the n low bits of `value`, most significant first; n in 0..32.
  void put_bits(int n, uint32_t value);
  void put_bit(int b) { put_bits(1, uint32_t(b & 1)); }
  // ue(v) (9.1): leadingZeroBits zeros, a one, then the info bits; v up to 2^32 - 2.
  void put_ue(uint32_t v);
  // se(v) (9.1.1).
  void put_se(int32_t v) { put_ue(se_to_ue(v)); }
  // rbsp_trailing_bits(): rbsp_stop_one_bit and alignment zeros.
  void rbsp_trailing_bits();
  // Zero bits up to the next byte boundary (pcm_alignment_zero_bit and the like).
  void align_zero();
  // Appends the bits of `o` from its bit `first_bit` on (pieces written apart, then joined).
  void append(const BitWriter& o, size_t first_bit = 0);

  bool byte_aligned() const { return (bits_ & 7) == 0; }
  size_t bit_count() const { return bits_; }
  // The bytes written so far; the stream must be byte aligned.
  const std::vector<uint8_t>& bytes() const { return buf_; }
  void clear() {
    buf_.clear();
    bits_ = 0;
  }

 private:
  std::vector<uint8_t> buf_;
  size_t bits_ = 0;  // bits written; the last byte of buf_ is partial when bits_ % 8 != 0
};

}  // namespace gvc
