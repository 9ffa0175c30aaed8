// bitstream_test.cpp: bit writer, Exp-Golomb codes, emulation prevention and Annex-B framing
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/bitstream/bitwriter.h"
#include "common/bitstream/nal.h"

namespace gvc {
namespace {

// The written bits as a string of '0' and '1' (the writer is padded to a byte by the test).
std::string bits_of(const BitWriter& bw) {
  std::string s;
  for (size_t i = 0; i < bw.bit_count(); i++)
    s += ((bw.bytes()[i / 8] >> (7 - i % 8)) & 1) ? '1' : '0';
  return s;
}

TEST(BitWriter, PutBitsMsbFirst) {
  BitWriter bw;
  bw.put_bits(3, 5);
  bw.put_bits(0, 0);
  bw.put_bits(13, 0x1abc);
  EXPECT_EQ(bits_of(bw), "1011101010111100");
  ASSERT_EQ(bw.bytes().size(), 2u);
  EXPECT_EQ(bw.bytes()[0], 0xba);
  EXPECT_EQ(bw.bytes()[1], 0xbc);
  bw.put_bits(32, 0x80000001u);
  EXPECT_EQ(bw.bit_count(), 48u);
  EXPECT_EQ(bw.bytes()[2], 0x80);
  EXPECT_EQ(bw.bytes()[5], 0x01);
}

// Pieces written apart and joined give the bits of one writer, whatever the alignment of
// either side and the first bit taken.
TEST(BitWriter, AppendJoinsPiecesBitForBit) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; trial++) {
    BitWriter head, piece;
    std::string expected;
    auto random_bits = [&](BitWriter& bw, int count, bool record) {
      for (int i = 0; i < count; i++) {
        const int b = int(rng() & 1);
        bw.put_bit(b);
        if (record) expected += char('0' + b);
      }
    };
    random_bits(head, int(rng() % 40), true);
    const int skip = int(rng() % 12);
    random_bits(piece, skip, false);
    random_bits(piece, int(rng() % 70), true);
    head.append(piece, size_t(skip));
    EXPECT_EQ(bits_of(head), expected) << "trial " << trial;
    EXPECT_EQ(head.bytes().size(), (expected.size() + 7) / 8);
  }
}

TEST(BitWriter, UeCodesOfTable9_2) {
  // 9.1, Table 9-2: codeNum -> bit string
  const char* expected[] = {"1", "010", "011", "00100", "00101", "00110", "00111", "0001000", "0001001"};
  for (uint32_t v = 0; v < 9; v++) {
    BitWriter bw;
    bw.put_ue(v);
    EXPECT_EQ(bits_of(bw), expected[v]) << "ue " << v;
    EXPECT_EQ(int(bw.bit_count()), ue_size(v));
  }
  BitWriter bw;
  bw.put_ue(0xfffffffeu);  // the largest codeNum: 31 zeros, a one, 31 info bits
  EXPECT_EQ(bw.bit_count(), 63u);
  EXPECT_EQ(ue_size(0xfffffffeu), 63);
  EXPECT_EQ(bits_of(bw), std::string(31, '0') + std::string(32, '1'));
}

TEST(BitWriter, SeMapping) {
  // Table 9-3: 0, 1, -1, 2, -2, 3 -> codeNum 0..5
  const int32_t values[] = {0, 1, -1, 2, -2, 3};
  for (uint32_t k = 0; k < 6; k++) {
    BitWriter a, b;
    a.put_se(values[k]);
    b.put_ue(k);
    EXPECT_EQ(bits_of(a), bits_of(b)) << "se " << values[k];
    EXPECT_EQ(se_size(values[k]), ue_size(k));
  }
  EXPECT_EQ(se_to_ue(-2147483647), 4294967294u);
}

TEST(BitWriter, TrailingBitsAndAlignment) {
  BitWriter bw;
  bw.put_bits(3, 0);
  bw.rbsp_trailing_bits();
  EXPECT_EQ(bits_of(bw), "00010000");
  EXPECT_TRUE(bw.byte_aligned());
  bw.rbsp_trailing_bits();  // aligned: a whole byte 0x80
  EXPECT_EQ(bw.bytes().back(), 0x80);
  bw.put_bit(1);
  bw.align_zero();
  EXPECT_EQ(bw.bytes().back(), 0x80);
  EXPECT_EQ(bw.bit_count(), 24u);
}

TEST(Nal, EmulationPreventionInsertsThreeBytes) {
  const uint8_t rbsp[] = {0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0x80};
  std::vector<uint8_t> ebsp;
  rbsp_to_ebsp(rbsp, sizeof(rbsp), ebsp);
  const std::vector<uint8_t> expected = {0, 0, 3, 0, 0, 3, 0, 1, 0, 0, 3, 2, 0, 0, 3, 3, 0, 0, 4, 0x80};
  EXPECT_EQ(ebsp, expected);
  EXPECT_EQ(ebsp_to_rbsp(ebsp.data(), ebsp.size()), std::vector<uint8_t>(rbsp, rbsp + sizeof(rbsp)));
  // A payload ending in zero gets a final 0x03.
  const uint8_t tail[] = {0x12, 0};
  ebsp.clear();
  rbsp_to_ebsp(tail, 2, ebsp);
  EXPECT_EQ(ebsp, (std::vector<uint8_t>{0x12, 0, 3}));
}

TEST(Nal, RandomPayloadsRoundTripWithoutStartCodes) {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 200; iter++) {
    std::vector<uint8_t> rbsp(1 + rng() % 300);
    // Mostly zeros and small values so that every escape case occurs.
    for (auto& b : rbsp) b = (rng() % 3) ? uint8_t(rng() % 4) : uint8_t(rng());
    rbsp.back() = 0x80;
    std::vector<uint8_t> ebsp;
    rbsp_to_ebsp(rbsp.data(), rbsp.size(), ebsp);
    for (size_t i = 0; i + 2 < ebsp.size(); i++)
      ASSERT_FALSE(ebsp[i] == 0 && ebsp[i + 1] == 0 && ebsp[i + 2] <= 2) << "at " << i;
    ASSERT_EQ(ebsp_to_rbsp(ebsp.data(), ebsp.size()), rbsp);
  }
}

// The rule of 7.4.1 byte by byte: after two zero bytes, a byte of 0x00 to 0x03 gets an
// emulation_prevention_three_byte before it; a payload ending in zero gets one at the end.
std::vector<uint8_t> ebsp_by_the_rule(const std::vector<uint8_t>& rbsp) {
  std::vector<uint8_t> out;
  int zeros = 0;
  for (uint8_t b : rbsp) {
    if (zeros == 2 && b <= 3) {
      out.push_back(3);
      zeros = 0;
    }
    out.push_back(b);
    zeros = b == 0 ? zeros + 1 : 0;
  }
  if (!rbsp.empty() && rbsp.back() == 0) out.push_back(3);
  return out;
}

// Payloads of every mix (long runs of non-zero bytes, runs of zeros, small values, empty),
// appended to what the output held: the rule's bytes exactly.
TEST(Nal, EmulationPreventionFollowsTheRuleByteForByte) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 400; iter++) {
    std::vector<uint8_t> rbsp(rng() % 2000);
    const int zero_share = int(rng() % 4);  // 0: none, 3: mostly zero
    for (auto& b : rbsp) b = int(rng() % 4) < zero_share ? uint8_t(rng() % 4 == 0 ? rng() % 4 : 0) : uint8_t(rng());
    std::vector<uint8_t> ebsp = {0x55, 0};  // bytes before the payload stay as they are
    rbsp_to_ebsp(rbsp.data(), rbsp.size(), ebsp);
    std::vector<uint8_t> want = {0x55, 0};
    const std::vector<uint8_t> rule = ebsp_by_the_rule(rbsp);
    want.insert(want.end(), rule.begin(), rule.end());
    ASSERT_EQ(ebsp, want) << "payload " << iter << " of " << rbsp.size() << " bytes";
  }
}

TEST(Nal, AnnexBFramingAndSplit) {
  std::vector<uint8_t> stream;
  write_annexb_nal(stream, 3, NalUnitType::kSps, {0x42, 0, 0, 1, 0x80});
  write_annexb_nal(stream, 0, NalUnitType::kSei, {0x05, 0x80}, false);
  const std::vector<uint8_t> expected = {0, 0, 0, 1, 0x67, 0x42, 0, 0, 3, 1, 0x80, 0, 0, 1, 0x06, 0x05, 0x80};
  EXPECT_EQ(stream, expected);
  auto nals = split_annexb(stream.data(), stream.size());
  ASSERT_EQ(nals.size(), 2u);
  EXPECT_EQ(nals[0], (std::vector<uint8_t>{0x67, 0x42, 0, 0, 3, 1, 0x80}));
  EXPECT_EQ(nals[1], (std::vector<uint8_t>{0x06, 0x05, 0x80}));
}

}  // namespace
}  // namespace gvc
