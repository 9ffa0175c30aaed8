// nal.cpp: NAL unit headers, emulation prevention and the Annex-B byte stream format
#include "common/bitstream/nal.h"

#include <cstring>

namespace gvc {

void rbsp_to_ebsp(const uint8_t* rbsp, size_t size, std::vector<uint8_t>& out) {
  // Written in place (at most one 0x03 for every two bytes, and a last one), the runs of
  // non-zero bytes between zero bytes copied whole: an IDR's slice is 600 KB at 1080p.
  const size_t base = out.size();
  out.resize(base + size + size / 2 + 1);
  uint8_t* o = out.data() + base;
  int zeros = 0;  // zero bytes just written
  for (size_t i = 0; i < size;) {
    if (zeros < 2 && rbsp[i] != 0) {  // up to the next zero byte: nothing to insert
      const void* z = std::memchr(rbsp + i, 0, size - i);
      const size_t end = z ? size_t(static_cast<const uint8_t*>(z) - rbsp) : size;
      std::memcpy(o, rbsp + i, end - i);
      o += end - i;
      i = end;
      zeros = 0;
      continue;
    }
    if (zeros == 2 && rbsp[i] <= 3) {  // 7.4.1: emulation_prevention_three_byte
      *o++ = 3;
      zeros = 0;
    }
    zeros = rbsp[i] == 0 ? zeros + 1 : 0;
    *o++ = rbsp[i++];
  }
  if (size > 0 && rbsp[size - 1] == 0) *o++ = 3;
  out.resize(size_t(o - out.data()));
}

std::vector<uint8_t> ebsp_to_rbsp(const uint8_t* ebsp, size_t size) {
  std::vector<uint8_t> out;
  out.reserve(size);
  int zeros = 0;
  for (size_t i = 0; i < size; i++) {
    if (zeros == 2 && ebsp[i] == 3) {
      zeros = 0;
      continue;
    }
    out.push_back(ebsp[i]);
    zeros = ebsp[i] == 0 ? zeros + 1 : 0;
  }
  return out;
}

void write_annexb_nal(std::vector<uint8_t>& out, int nal_ref_idc, NalUnitType type,
                      const std::vector<uint8_t>& rbsp, bool long_start_code) {
  if (long_start_code) out.push_back(0);
  out.push_back(0);
  out.push_back(0);
  out.push_back(1);
  // forbidden_zero_bit (0), nal_ref_idc u(2), nal_unit_type u(5)
  out.push_back(uint8_t(((nal_ref_idc & 3) << 5) | (uint8_t(type) & 31)));
  rbsp_to_ebsp(rbsp.data(), rbsp.size(), out);
}

std::vector<std::vector<uint8_t>> split_annexb(const uint8_t* data, size_t size) {
  std::vector<std::vector<uint8_t>> nals;
  size_t i = 0;
  auto is_start = [&](size_t p) {
    return p + 2 < size && data[p] == 0 && data[p + 1] == 0 && data[p + 2] == 1;
  };
  while (i < size && !is_start(i)) i++;
  while (i < size) {
    size_t begin = i + 3;
    size_t end = begin;
    while (end < size && !is_start(end)) end++;
    size_t stop = end;
    while (stop > begin && data[stop - 1] == 0) stop--;  // zero_byte / trailing_zero_8bits
    nals.emplace_back(data + begin, data + stop);
    i = end;
  }
  return nals;
}

}  // namespace gvc
