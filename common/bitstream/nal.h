// nal.h: NAL unit headers, emulation prevention (7.4.1) and the Annex-B byte stream format
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gvc {

// nal_unit_type values (Table 7-1) used by the encoder.
enum class NalUnitType : uint8_t {
  kSliceNonIdr = 1,
  kSliceIdr = 5,
  kSei = 6,
  kSps = 7,
  kPps = 8,
  kAud = 9,
};

// Appends the RBSP with emulation_prevention_three_byte inserted: within the payload no
// 0x000000, 0x000001, 0x000002 or 0x000003 remains, and a payload ending in 0x00 gets a
// final 0x03 (7.4.1, cabac_zero_word rule).
void rbsp_to_ebsp(const uint8_t* rbsp, size_t size, std::vector<uint8_t>& out);

// Removes emulation_prevention_three_byte (the inverse of rbsp_to_ebsp).
std::vector<uint8_t> ebsp_to_rbsp(const uint8_t* ebsp, size_t size);

// Appends one Annex-B NAL unit: start code (zero_byte + 0x000001 when long_start_code, as
// B.1.2 requires for parameter sets and the first NAL unit of an access unit), the header
// byte (forbidden_zero_bit, nal_ref_idc, nal_unit_type) and the escaped payload.
void write_annexb_nal(std::vector<uint8_t>& out, int nal_ref_idc, NalUnitType type,
                      const std::vector<uint8_t>& rbsp, bool long_start_code = true);

// Splits an Annex-B byte stream into NAL units (header byte included, start codes and
// trailing_zero_8bits removed, emulation prevention kept).
std::vector<std::vector<uint8_t>> split_annexb(const uint8_t* data, size_t size);

}  // namespace gvc
