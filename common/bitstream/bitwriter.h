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
  // u(n): the n low bits of `value`, most significant first; n in 0..32. Inline: CAVLC
  // calls it for every syntax element, and it mostly only shifts into the accumulator.
  void put_bits(int n, uint32_t value) {
    const uint64_t v = value & ((uint64_t(1) << n) - 1);
    if (fill_ + n < 64) {
      acc_ = (acc_ << n) | v;
      fill_ += n;
    } else {
      put_word(n, v);
    }
  }
  void put_bit(int b) { put_bits(1, uint32_t(b & 1)); }
  // ue(v) (9.1): leadingZeroBits zeros, a one, then the info bits; v up to 2^32 - 2.
  void put_ue(uint32_t v) {
    const uint64_t code = uint64_t(v) + 1;
    const int len = 63 - __builtin_clzll(code);  // leadingZeroBits
    if (len < 16)
      put_bits(2 * len + 1, uint32_t(code));
    else
      put_long_ue(code, len);
  }
  // se(v) (9.1.1).
  void put_se(int32_t v) { put_ue(se_to_ue(v)); }
  // rbsp_trailing_bits(): rbsp_stop_one_bit and alignment zeros.
  void rbsp_trailing_bits();
  // Zero bits up to the next byte boundary (pcm_alignment_zero_bit and the like).
  void align_zero() { put_bits((8 - (fill_ & 7)) & 7, 0); }
  // Appends the bits of `o` from its bit `first_bit` on (pieces written apart, then joined).
  void append(const BitWriter& o, size_t first_bit = 0);

  bool byte_aligned() const { return (fill_ & 7) == 0; }
  size_t bit_count() const { return 8 * bytes_ + size_t(fill_); }
  // The bytes written so far, a partial last byte padded with zeros; the stream is meant to be
  // byte aligned. Writes the accumulator's bytes into the buffer first (not thread safe).
  const std::vector<uint8_t>& bytes() const;
  void clear() {
    buf_.clear();
    bytes_ = 0;
    acc_ = 0;
    fill_ = 0;
  }

 private:
  void put_word(int n, uint64_t v);
  void put_64(uint64_t w);
  void store_word(uint64_t word);
  void put_long_ue(uint64_t code, int len);

  // buf_[0, bytes_) holds the bits written but the last fill_ (0..63), which are the low bits
  // of acc_ (the bits above them are stale). buf_ may be longer than bytes_: it grows ahead,
  // and bytes() leaves the accumulator's bytes after bytes_.
  mutable std::vector<uint8_t> buf_;
  size_t bytes_ = 0;
  uint64_t acc_ = 0;
  int fill_ = 0;
};

}  // namespace gvc
