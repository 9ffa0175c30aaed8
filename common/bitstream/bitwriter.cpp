// bitwriter.cpp: MSB-first bit writer with the H.264 descriptors u(n), ue(v), se(v)
#include "common/bitstream/bitwriter.h"

#include <cstddef>

namespace gvc {

void BitWriter::put_bits(int n, uint32_t value) {
  // A byte at a time: the most significant of the n bits left go into the free low bits of
  // the last (partial) byte.
  while (n > 0) {
    if ((bits_ & 7) == 0) buf_.push_back(0);
    const int free = 8 - int(bits_ & 7);
    const int take = n < free ? n : free;
    const uint32_t chunk = uint32_t((uint64_t(value) >> (n - take)) & ((1u << take) - 1));
    buf_.back() |= uint8_t(chunk << (free - take));
    bits_ += size_t(take);
    n -= take;
  }
}

void BitWriter::put_ue(uint32_t v) {
  uint64_t code = uint64_t(v) + 1;
  int len = 0;
  while ((code >> (len + 1)) != 0) len++;
  put_bits(len, 0);
  // The code is len + 1 bits long: the leading one and len info bits.
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

void BitWriter::align_zero() {
  while (!byte_aligned()) put_bit(0);
}

void BitWriter::append(const BitWriter& o, size_t first_bit) {
  if (first_bit >= o.bits_) return;
  size_t pos = first_bit;
  // The rest of o's first byte, then whole bytes (copied as they are when this writer is
  // byte aligned), then o's partial last byte.
  if (pos & 7) {
    const int n = int(8 - (pos & 7)) < int(o.bits_ - pos) ? int(8 - (pos & 7)) : int(o.bits_ - pos);
    put_bits(n, uint32_t(o.buf_[pos >> 3] >> (8 - (pos & 7) - size_t(n))));
    pos += size_t(n);
  }
  const size_t whole_end = o.bits_ & ~size_t(7);
  if (pos < whole_end) {
    if (byte_aligned()) {
      buf_.insert(buf_.end(), o.buf_.begin() + std::ptrdiff_t(pos >> 3), o.buf_.begin() + std::ptrdiff_t(whole_end >> 3));
      bits_ += whole_end - pos;
    } else {
      for (size_t i = pos >> 3; i < (whole_end >> 3); i++) put_bits(8, o.buf_[i]);
    }
    pos = whole_end;
  }
  if (pos < o.bits_) {
    const int n = int(o.bits_ - pos);
    put_bits(n, uint32_t(o.buf_[pos >> 3] >> (8 - n)));
  }
}

}  // namespace gvc
