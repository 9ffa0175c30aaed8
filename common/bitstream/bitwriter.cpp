// bitwriter.cpp: MSB-first bit writer with the H.264 descriptors u(n), ue(v), se(v)
#include "common/bitstream/bitwriter.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace gvc {

namespace {

// One store and one load with a byte swap (a byte loop stays a loop at -O2).
void store_be64(uint8_t* p, uint64_t w) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  std::memcpy(p, &w, 8);
}

uint64_t load_be64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

}  // namespace

// The accumulator cannot take all n bits: it is completed with the high ones and written as
// 8 bytes, and the rest start the next word. fill_ + n >= 64 with n <= 32 means fill_ >= 32.
void BitWriter::put_word(int n, uint64_t v) {
  const int rest = fill_ + n - 64;
  store_word((acc_ << (64 - fill_)) | (v >> rest));
  acc_ = v;
  fill_ = rest;
}

void BitWriter::store_word(uint64_t word) {
  if (buf_.size() < bytes_ + 8) buf_.resize(std::max<size_t>(2 * buf_.size(), bytes_ + 256));
  store_be64(buf_.data() + bytes_, word);
  bytes_ += 8;
}

// 64 bits: the fill_ pending ones and the high bits of w make a word, w's low fill_ bits are
// pending after it.
void BitWriter::put_64(uint64_t w) {
  store_word(fill_ ? (acc_ << (64 - fill_)) | (w >> fill_) : w);
  acc_ = w;
}

// ue(v) of more than 32 bits (code numbers from 2^16 - 1 on): the zeros apart.
void BitWriter::put_long_ue(uint64_t code, int len) {
  put_bits(len, 0);
  if (len + 1 > 32) {
    put_bits(1, 1);
    put_bits(len, uint32_t(code));
  } else {
    put_bits(len + 1, uint32_t(code));
  }
}

void BitWriter::rbsp_trailing_bits() {
  put_bit(1);
  align_zero();
}

const std::vector<uint8_t>& BitWriter::bytes() const {
  const int tail = (fill_ + 7) / 8;
  buf_.resize(bytes_ + size_t(tail));
  const uint64_t left = fill_ ? acc_ << (64 - fill_) : 0;  // the pending bits, left aligned
  for (int i = 0; i < tail; i++) buf_[bytes_ + size_t(i)] = uint8_t(left >> (56 - 8 * i));
  return buf_;
}

void BitWriter::append(const BitWriter& o, size_t first_bit) {
  const size_t end = o.bit_count();
  if (first_bit >= end) return;
  const uint8_t* src = o.bytes().data();
  size_t pos = first_bit;
  // The rest of o's first byte, then 64 bits at a time, then whole bytes, then o's partial
  // last byte.
  if (pos & 7) {
    const int n = int(std::min<size_t>(8 - (pos & 7), end - pos));
    put_bits(n, uint32_t(src[pos >> 3] >> (8 - (pos & 7) - size_t(n))));
    pos += size_t(n);
  }
  const size_t whole_end = end & ~size_t(7);
  for (; pos + 64 <= whole_end; pos += 64) put_64(load_be64(src + (pos >> 3)));
  for (; pos < whole_end; pos += 8) put_bits(8, src[pos >> 3]);
  if (pos < end) {
    const int n = int(end - pos);
    put_bits(n, uint32_t(src[pos >> 3] >> (8 - n)));
  }
}

}  // namespace gvc
