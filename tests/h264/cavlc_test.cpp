// cavlc_test.cpp: the bit writer and the CAVLC macroblock layer against a plain walk of the syntax, on random input
//
// The reference writes one bit at a time into a string and follows clauses 7.3.5 and 9.2 the
// direct way (the neighbours' nC, predicted Intra_4x4 modes from cavlc_bits.h); the encoder's
// writer must give the same bits for any macroblock, whatever tables and shortcuts it uses.
// The I_PCM choice's bound (cavlc_bits.h) is checked against the same walk.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/bitstream/bitwriter.h"
#include "common/h264enc/cavlc.h"
#include "common/h264enc/cavlc_bits.h"
#include "common/h264enc/mb_layer_bits.h"
#include "common/h264enc/recon_mb.h"

namespace gvc::h264 {
namespace {

std::string bits_of(const BitWriter& bw) {
  const std::vector<uint8_t>& b = bw.bytes();
  std::string s;
  for (size_t i = 0; i < bw.bit_count(); i++) s += ((b[i / 8] >> (7 - i % 8)) & 1) ? '1' : '0';
  return s;
}

// The reference: bits as characters.
struct Ref {
  std::string s;
  void put(int n, uint64_t v) {
    for (int i = n - 1; i >= 0; i--) s += ((v >> i) & 1) ? '1' : '0';
  }
  void ue(uint32_t v) {
    const uint64_t code = uint64_t(v) + 1;
    int len = 0;
    while ((code >> (len + 1)) != 0) len++;
    put(len, 0);
    put(len + 1, code);
  }
  void se(int32_t v) { ue(se_to_ue(v)); }
  void vlc(const Vlc& v) { put(v.len, v.bits); }
};

void ref_residual(Ref& r, const int16_t* levels, int max_num_coeff, int nc) {
  int level[16], run[16];
  int total_coeff = 0, last = -1;
  for (int i = max_num_coeff - 1; i >= 0; i--) {
    if (levels[i]) {
      if (last < 0) last = i;
      level[total_coeff] = levels[i];
      run[total_coeff] = 0;
      total_coeff++;
    } else if (total_coeff) {
      run[total_coeff - 1]++;
    }
  }
  int trailing_ones = 0;
  while (trailing_ones < total_coeff && trailing_ones < 3 && std::abs(level[trailing_ones]) == 1) trailing_ones++;
  const int token = 4 * total_coeff + trailing_ones;
  r.vlc(nc < 0 ? kCoeffTokenChromaDc[token] : kCoeffToken[nc < 2 ? 0 : nc < 4 ? 1 : nc < 8 ? 2 : 3][token]);
  if (!total_coeff) return;
  for (int i = 0; i < trailing_ones; i++) r.put(1, level[i] < 0);
  int suffix_length = (total_coeff > 10 && trailing_ones < 3) ? 1 : 0;
  for (int i = trailing_ones; i < total_coeff; i++) {
    const int v = level[i];
    int level_code = v > 0 ? 2 * v - 2 : -2 * v - 1;
    if (i == trailing_ones && trailing_ones < 3) level_code -= 2;
    // level_prefix, level_suffix (9.2.2.1; no level_prefix above 15 with |level| <= kMaxLevel)
    int prefix, suffix_size, suffix;
    if (suffix_length == 0 && level_code < 14) {
      prefix = level_code, suffix_size = 0, suffix = 0;
    } else if (suffix_length == 0 && level_code < 30) {
      prefix = 14, suffix_size = 4, suffix = level_code - 14;
    } else if (suffix_length == 0) {
      prefix = 15, suffix_size = 12, suffix = level_code - 30;
    } else if (level_code < (15 << suffix_length)) {
      prefix = level_code >> suffix_length, suffix_size = suffix_length;
      suffix = level_code & ((1 << suffix_length) - 1);
    } else {
      prefix = 15, suffix_size = 12, suffix = level_code - (15 << suffix_length);
    }
    r.put(prefix, 0);
    r.put(1, 1);
    r.put(suffix_size, uint32_t(suffix));
    if (suffix_length == 0) suffix_length = 1;
    if (std::abs(v) > (3 << (suffix_length - 1)) && suffix_length < 6) suffix_length++;
  }
  if (total_coeff < max_num_coeff) {
    const int total_zeros = last + 1 - total_coeff;
    r.vlc(max_num_coeff == 4 ? kTotalZerosChromaDc[total_coeff - 1][total_zeros]
                             : kTotalZeros[total_coeff - 1][total_zeros]);
    int zeros_left = total_zeros;
    for (int i = 0; i < total_coeff - 1 && zeros_left > 0; i++) {
      r.vlc(kRunBefore[(zeros_left < 7 ? zeros_left : 7) - 1][run[i]]);
      zeros_left -= run[i];
    }
  }
}

void ref_macroblock(Ref& r, const MbMap& map, int mx, int my, bool p_slice, int num_ref_idx_active) {
  const Macroblock& mb = *map.at(mx, my);
  const int intra_offset = p_slice ? 5 : 0;
  const int cbp_luma = mb.cbp & 15, cbp_chroma = mb.cbp >> 4;
  switch (mb.type) {
    case MbType::IPcm:
      r.ue(uint32_t(intra_offset + 25));
      while (r.s.size() % 8) r.s += '0';
      for (int i = 0; i < 384; i++) r.put(8, mb.pcm[i]);
      return;
    case MbType::I16x16:
      r.ue(uint32_t(intra_offset + 1 + mb.i16_mode + 4 * cbp_chroma + (cbp_luma ? 12 : 0)));
      break;
    case MbType::I4x4: r.ue(uint32_t(intra_offset)); break;
    case MbType::PL0_16x16: r.ue(0); break;
    case MbType::PL0_16x8: r.ue(1); break;
    case MbType::PL0_8x16: r.ue(2); break;
    case MbType::P8x8: r.ue(3); break;
    case MbType::PSkip: return;
  }
  auto ref_idx = [&](int v) {
    if (num_ref_idx_active == 2)
      r.put(1, !v);
    else
      r.ue(uint32_t(v));
  };
  if (mb.type == MbType::I4x4) {
    for (int blk = 0; blk < 16; blk++) {
      const int pred = predict_i4_mode(map, mx, my, blk), mode = mb.i4_mode[blk];
      r.put(1, mode == pred);
      if (mode != pred) r.put(3, uint32_t(mode < pred ? mode : mode - 1));
    }
  }
  if (is_intra(mb.type)) {
    r.ue(mb.chroma_mode);
  } else if (mb.type == MbType::P8x8) {
    for (int i = 0; i < 4; i++) r.ue(mb.sub_mb_type[i]);
    if (num_ref_idx_active > 1)
      for (int i = 0; i < 4; i++) ref_idx(mb.ref_idx[i]);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < num_sub_mb_part(mb.sub_mb_type[i]); j++) {
        int x, y, w, h;
        sub_partition_rect(mb.sub_mb_type[i], j, &x, &y, &w, &h);
        const int b = 4 * (2 * (i >> 1) + y) + 2 * (i & 1) + x;
        r.se(mb.mvd[b][0]);
        r.se(mb.mvd[b][1]);
      }
  } else {
    const int parts = num_mb_part(mb.type);
    int x[2], y[2], w, h;
    for (int i = 0; i < parts; i++) partition_rect(mb.type, i, &x[i], &y[i], &w, &h);
    if (num_ref_idx_active > 1)
      for (int i = 0; i < parts; i++) ref_idx(mb.ref_idx[(y[i] >> 1) * 2 + (x[i] >> 1)]);
    for (int i = 0; i < parts; i++) {
      r.se(mb.mvd[4 * y[i] + x[i]][0]);
      r.se(mb.mvd[4 * y[i] + x[i]][1]);
    }
  }
  if (mb.type != MbType::I16x16) r.ue(kCbpToCodeNum[is_intra(mb.type) ? 0 : 1][mb.cbp & 0x3f]);
  if (cbp_luma == 0 && cbp_chroma == 0 && mb.type != MbType::I16x16) return;
  r.se(0);
  if (mb.type == MbType::I16x16) {
    ref_residual(r, mb.luma_dc, 16, luma_nc(map, mx, my, 0));
    if (cbp_luma)
      for (int blk = 0; blk < 16; blk++) ref_residual(r, mb.luma[blk] + 1, 15, luma_nc(map, mx, my, blk));
  } else {
    for (int blk = 0; blk < 16; blk++)
      if (cbp_luma & (1 << (blk >> 2))) ref_residual(r, mb.luma[blk], 16, luma_nc(map, mx, my, blk));
  }
  if (cbp_chroma)
    for (int c = 0; c < 2; c++) ref_residual(r, mb.chroma_dc[c], 4, -1);
  if (cbp_chroma & 2)
    for (int c = 0; c < 2; c++)
      for (int blk = 0; blk < 4; blk++) ref_residual(r, mb.chroma_ac[c][blk] + 1, 15, chroma_nc(map, mx, my, c, blk));
}

// A level as quantisation leaves them: mostly +-1, some larger, a few up to kMaxLevel.
int16_t random_level(std::mt19937& rng) {
  const uint32_t k = rng() % 100;
  const int mag = k < 65 ? 1 : k < 85 ? 2 + int(rng() % 3) : k < 97 ? 5 + int(rng() % 60) : 1 + int(rng() % kMaxLevel);
  return int16_t(rng() & 1 ? -mag : mag);
}

// Levels [start, n) of a block, `density` in 0..100 of them non-zero; returns how many.
int random_block(std::mt19937& rng, int16_t* levels, int start, int n, int density) {
  int count = 0;
  for (int i = 0; i < n; i++) {
    levels[i] = i >= start && int(rng() % 100) < density ? random_level(rng) : 0;
    count += levels[i] != 0;
  }
  return count;
}

// A macroblock of `type` with random syntax and levels, its cbp and TotalCoeff consistent.
Macroblock random_macroblock(std::mt19937& rng, MbType type, int num_refs) {
  Macroblock mb;
  mb.type = type;
  if (type == MbType::IPcm) {
    for (uint8_t& p : mb.pcm) p = uint8_t(rng());
    mb.cbp = 0x2f;
    for (uint8_t& t : mb.total_coeff_luma) t = 16;
    for (auto& c : mb.total_coeff_chroma)
      for (uint8_t& t : c) t = 16;
    return mb;
  }
  if (type == MbType::PSkip) return mb;
  mb.i16_mode = uint8_t(rng() % 4);
  for (uint8_t& m : mb.i4_mode) m = uint8_t(rng() % 9);
  mb.chroma_mode = uint8_t(rng() % 4);
  for (int i = 0; i < 4; i++) {
    mb.ref_idx[i] = is_intra(type) ? int8_t(-1) : int8_t(rng() % uint32_t(num_refs));
    mb.sub_mb_type[i] = uint8_t(rng() % 4);
  }
  for (auto& v : mb.mvd)
    for (int16_t& c : v) c = int16_t(rng() % 8 ? int(rng() % 33) - 16 : int(rng() % 8193) - 4096);
  // the density of each 8x8 and of chroma: many empty, some dense (QP 0 like)
  const int dens[4] = {0, 5, 25, 90};
  const bool i16 = type == MbType::I16x16;
  int ac_total = 0;
  if (i16) random_block(rng, mb.luma_dc, 0, 16, dens[rng() % 4]);
  for (int b8 = 0; b8 < 4; b8++) {
    const int d = dens[rng() % 4];
    int n8 = 0;
    for (int blk = 4 * b8; blk < 4 * b8 + 4; blk++) {
      const int n = random_block(rng, mb.luma[blk], i16 ? 1 : 0, 16, d);
      mb.total_coeff_luma[blk] = uint8_t(n);
      n8 += n;
    }
    if (!i16 && n8) mb.cbp |= uint8_t(1 << b8);
    ac_total += n8;
  }
  if (i16 && ac_total) mb.cbp |= 15;
  const int dc_density = dens[rng() % 4], ac_density = dens[rng() % 4];
  int dc_nz = 0, ac_nz = 0;
  for (int c = 0; c < 2; c++) {
    dc_nz += random_block(rng, mb.chroma_dc[c], 0, 4, dc_density);
    for (int blk = 0; blk < 4; blk++) {
      const int n = random_block(rng, mb.chroma_ac[c][blk], 1, 16, ac_density);
      mb.total_coeff_chroma[c][blk] = uint8_t(n);
      ac_nz += n;
    }
  }
  const int cbp_chroma = ac_nz ? 2 : dc_nz ? 1 : 0;
  if (cbp_chroma != 2)
    for (int c = 0; c < 2; c++)
      for (int blk = 0; blk < 4; blk++) mb.total_coeff_chroma[c][blk] = 0;
  mb.cbp = uint8_t(mb.cbp | cbp_chroma << 4);
  return mb;
}

TEST(CavlcWriter, BitWriterEqualsBitByBit) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; trial++) {
    BitWriter bw;
    Ref r;
    const int ops = int(rng() % 400);
    for (int k = 0; k < ops; k++) {
      switch (rng() % 6) {
        case 0:
        case 1: {
          const int n = int(rng() % 33);
          const uint32_t v = uint32_t(rng());  // bits above n must be ignored
          bw.put_bits(n, v);
          r.put(n, n == 32 ? v : v & ((1u << n) - 1));
          break;
        }
        case 2: {
          const uint32_t v = rng() % 4 ? rng() % 300 : uint32_t(rng()) % 0xffffffffu;
          bw.put_ue(v);
          r.ue(v);
          break;
        }
        case 3: {
          const int32_t v = int32_t(rng() % 2001) - 1000;
          bw.put_se(v);
          r.se(v);
          break;
        }
        case 4:
          bw.align_zero();
          while (r.s.size() % 8) r.s += '0';
          break;
        case 5: {  // a piece written apart, joined from a bit of its own
          BitWriter piece;
          Ref pr;
          const int len = int(rng() % 3000);
          for (int i = 0; i < len;) {
            const int n = std::min(len - i, int(rng() % 33));
            const uint32_t v = uint32_t(rng());
            piece.put_bits(n, v);
            pr.put(n, n == 32 ? v : v & ((1u << n) - 1));
            i += n;
          }
          const size_t first = len ? size_t(rng() % uint32_t(len + 1)) : 0;
          if (rng() % 2) piece.bytes();  // the accumulator written out before the join
          bw.append(piece, first);
          r.s += pr.s.substr(first);
          break;
        }
      }
      if (rng() % 16 == 0) {
        ASSERT_EQ(bits_of(bw), r.s) << "trial " << trial << ", op " << k;
      }
    }
    ASSERT_EQ(bw.bit_count(), r.s.size());
    ASSERT_EQ(bits_of(bw), r.s) << "trial " << trial;
    EXPECT_EQ(bw.bytes().size(), (r.s.size() + 7) / 8);
    EXPECT_EQ(bw.byte_aligned(), r.s.size() % 8 == 0);
  }
}

TEST(CavlcWriter, ResidualBlocksEqualTheSyntaxWalk) {
  std::mt19937 rng(5);
  const int kinds[3] = {16, 15, 4};
  for (int trial = 0; trial < 20000; trial++) {
    const int max_num_coeff = kinds[rng() % 3];
    const int nc = max_num_coeff == 4 ? -1 : int(rng() % 17);
    int16_t levels[16];
    random_block(rng, levels, 0, max_num_coeff, int(rng() % 101));
    BitWriter bw;
    bw.put_bits(int(rng() % 8), 0);  // any alignment
    const std::string head = bits_of(bw);
    Ref r;
    r.s = head;
    const int total = write_residual_block(bw, levels, max_num_coeff, nc);
    ref_residual(r, levels, max_num_coeff, nc);
    ASSERT_EQ(bits_of(bw), r.s) << "trial " << trial;
    ASSERT_EQ(int(bw.bit_count() - head.size()), residual_block_bits(levels, max_num_coeff, nc));
    int nonzero = 0;
    for (int i = 0; i < max_num_coeff; i++) nonzero += levels[i] != 0;
    ASSERT_EQ(total, nonzero);
  }
}

// A picture of 1..7 x 1..5 random macroblocks (an I slice's of the intra types, a P slice's of
// every type, with 1..4 references), cut into slices at random.
struct RandomPicture {
  int w = 0, h = 0, num_refs = 1;
  bool p_slice = false;
  std::vector<Macroblock> mbs;
};

RandomPicture random_picture(std::mt19937& rng) {
  const MbType types[8] = {MbType::I4x4,      MbType::I16x16,   MbType::IPcm,     MbType::PL0_16x16,
                           MbType::PSkip,     MbType::PL0_16x8, MbType::PL0_8x16, MbType::P8x8};
  RandomPicture pic;
  pic.w = 1 + int(rng() % 7);
  pic.h = 1 + int(rng() % 5);
  pic.p_slice = rng() % 3 != 0;
  pic.num_refs = pic.p_slice ? 1 + int(rng() % 4) : 1;
  int slice = 0;
  for (int i = 0; i < pic.w * pic.h; i++) {
    if (i && rng() % 6 == 0) slice++;
    const MbType t = types[pic.p_slice ? rng() % 8 : rng() % 3];
    pic.mbs.push_back(random_macroblock(rng, t, pic.num_refs));
    pic.mbs.back().slice_id = uint16_t(slice);
  }
  return pic;
}

// Pictures of random macroblocks of every type, cut into slices (neighbours of another slice
// are not available), written one macroblock after another.
TEST(CavlcWriter, MacroblocksEqualTheSyntaxWalk) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 60; trial++) {
    const RandomPicture pic = random_picture(rng);
    const int w = pic.w, h = pic.h, num_refs = pic.num_refs;
    const bool p_slice = pic.p_slice;
    const std::vector<Macroblock>& mbs = pic.mbs;
    BitWriter bw;
    Ref r;
    for (int i = 0; i < w * h; i++) {
      const MbMap map{mbs.data(), w, h, mbs[size_t(i)].slice_id};
      // an odd number of bits before each, as mb_skip_run would
      const int n = int(rng() % 5);
      bw.put_bits(n, 0);
      r.put(n, 0);
      write_macroblock(bw, map, i % w, i / w, p_slice, num_refs);
      ref_macroblock(r, map, i % w, i / w, p_slice, num_refs);
      ASSERT_EQ(bw.bit_count(), r.s.size()) << "trial " << trial << ", macroblock " << i << " type "
                                            << int(mbs[size_t(i)].type);
    }
    ASSERT_EQ(bits_of(bw), r.s) << "trial " << trial;
  }
}

// put_mb_layer (mb_layer_bits.h, the code the GPU runs) gives write_macroblock's bits for every
// coded macroblock but I_PCM (refused) and none for P_Skip; a string longer than its capacity
// says so and keeps its first words.
TEST(CavlcWriter, MacroblockBitStringsEqualTheWriter) {
  std::mt19937 rng(21);
  auto string_of = [](const uint32_t* words, int len) {
    std::string s;
    for (int i = 0; i < len; i++) s += char('0' + ((words[i / 32] >> (31 - i % 32)) & 1));
    return s;
  };
  int coded = 0, overflows = 0;
  for (int trial = 0; trial < 200; trial++) {
    const RandomPicture pic = random_picture(rng);
    const int w = pic.w, h = pic.h, num_refs = pic.num_refs;
    const bool p_slice = pic.p_slice;
    const std::vector<Macroblock>& mbs = pic.mbs;
    for (int i = 0; i < w * h; i++) {
      const MbMap map{mbs.data(), w, h, mbs[size_t(i)].slice_id};
      const MbType type = mbs[size_t(i)].type;
      std::vector<uint32_t> words(512, 0xdeadbeefu);
      MbBitString out(words.data(), 512);
      const bool written = put_mb_layer(out, map, i % w, i / w, p_slice, num_refs);
      const int len = out.finish();
      if (type == MbType::IPcm) {
        EXPECT_FALSE(written) << "trial " << trial << ", macroblock " << i;
        continue;
      }
      ASSERT_TRUE(written) << "trial " << trial << ", macroblock " << i;
      if (type == MbType::PSkip) {
        EXPECT_EQ(len, 0);
        continue;
      }
      BitWriter bw;
      write_macroblock(bw, map, i % w, i / w, p_slice, num_refs);
      ASSERT_FALSE(out.overflowed());
      ASSERT_EQ(string_of(words.data(), len), bits_of(bw)) << "trial " << trial << ", macroblock " << i << " type "
                                                          << int(type);
      coded++;
      // the same into 2 words: only a string of at most 64 bits fits
      uint32_t few[3] = {0, 0, 0x12345678u};
      MbBitString small(few, 2);
      put_mb_layer(small, map, i % w, i / w, p_slice, num_refs);
      EXPECT_EQ(small.finish(), len);
      EXPECT_EQ(small.overflowed(), len > 64);
      EXPECT_EQ(few[2], 0x12345678u) << "written past the capacity";
      EXPECT_EQ(string_of(few, std::min(len, 64)), bits_of(bw).substr(0, size_t(std::min(len, 64))));
      overflows += small.overflowed();
    }
  }
  EXPECT_GT(coded, 500);
  EXPECT_GT(overflows, 100);
}

// kTokenZerosMaxLen and its chroma DC version, from the code tables.
TEST(CavlcWriter, TokenZerosMaxLenFollowsTheTables) {
  for (int n = 0; n <= 16; n++) {
    int token = 0;
    for (int cls = 0; cls < 4; cls++)
      for (int t1 = 0; t1 < 4; t1++) token = std::max(token, int(kCoeffToken[cls][4 * n + t1].len));
    int zeros = 0;
    for (int tz = 0; n >= 1 && n < 16 && tz < 16; tz++) zeros = std::max(zeros, int(kTotalZeros[n - 1][tz].len));
    EXPECT_EQ(int(kTokenZerosMaxLen[n]), token + zeros) << n;
  }
  for (int n = 0; n <= 4; n++) {
    int token = 0;
    for (int t1 = 0; t1 < 4; t1++) token = std::max(token, int(kCoeffTokenChromaDc[4 * n + t1].len));
    int zeros = 0;
    for (int tz = 0; n >= 1 && n < 4 && tz < 4; tz++) zeros = std::max(zeros, int(kTotalZerosChromaDc[n - 1][tz].len));
    EXPECT_EQ(int(kTokenZerosMaxLenChromaDc[n]), token + zeros) << n;
  }
}

// The bound that spares the exact count of the I_PCM choice (recon_mb.h) must never be below
// what the syntax walk writes, for any nC.
TEST(CavlcWriter, ResidualBlockBoundHoldsForEveryNc) {
  std::mt19937 rng(13);
  const int kinds[3] = {16, 15, 4};
  for (int trial = 0; trial < 20000; trial++) {
    const int max_num_coeff = kinds[rng() % 3];
    int16_t levels[16];
    random_block(rng, levels, 0, max_num_coeff, int(rng() % 101));
    if (trial % 2) {  // dense blocks of levels 4 to 8 and a few wide ones: suffixLength's worst cases
      for (int i = 0; i < max_num_coeff; i++) {
        const int mag = rng() % 8 ? 4 + int(rng() % 5) : 1 + int(rng() % (rng() % 2 ? 64 : kMaxLevel));
        levels[i] = int16_t(rng() % 6 == 0 ? 0 : rng() & 1 ? -mag : mag);
      }
    }
    const int bound = residual_block_bits_bound(levels, max_num_coeff);
    for (int nc = max_num_coeff == 4 ? -1 : 0; nc <= (max_num_coeff == 4 ? -1 : 16); nc++) {
      Ref r;
      ref_residual(r, levels, max_num_coeff, nc);
      ASSERT_GE(bound, int(r.s.size())) << "trial " << trial << ", nC " << nc;
    }
  }
}

TEST(CavlcWriter, IntraMacroblockBoundHolds) {
  std::mt19937 rng(17);
  int decided = 0, total = 0;
  for (int trial = 0; trial < 300; trial++) {
    const int w = 1 + int(rng() % 5), h = 1 + int(rng() % 4);
    const bool p_slice = rng() % 2 != 0;
    std::vector<Macroblock> mbs;
    for (int i = 0; i < w * h; i++) {
      const MbType t = rng() % 2 ? MbType::I4x4 : MbType::I16x16;
      mbs.push_back(random_macroblock(rng, t, 1));
    }
    for (int i = 0; i < w * h; i++) {
      const MbMap map{mbs.data(), w, h, 0};
      Ref r;
      ref_macroblock(r, map, i % w, i / w, p_slice, 1);
      const Macroblock& mb = mbs[size_t(i)];
      const int bound = intra_mb_bits_bound(mb, p_slice);
      ASSERT_GE(bound, int(r.s.size())) << "trial " << trial << ", macroblock " << i;
      ASSERT_EQ(intra_mb_bits(map, i % w, i / w, p_slice), int(r.s.size()));
      decided += bound <= pcm_mb_bits(p_slice);
      total++;
    }
  }
  // random_macroblock's 8x8s are empty, sparse, half or nearly full: the bound alone settles
  // the I_PCM choice of many, not all
  EXPECT_GT(decided, total / 4);
  EXPECT_LT(decided, total);
}

// A macroblock of +-1 levels in a quarter of every block's positions, as at middling QPs: the
// bound settles it.
TEST(CavlcWriter, IntraMacroblockBoundSettlesTypicalLevels) {
  std::mt19937 rng(19);
  for (MbType t : {MbType::I4x4, MbType::I16x16}) {
    Macroblock mb;
    mb.type = t;
    const int start = t == MbType::I16x16 ? 1 : 0;
    for (auto& blk : mb.luma)
      for (int i = start; i < 16; i++) blk[i] = int16_t(rng() % 4 == 0 ? (rng() & 1 ? 1 : -1) : 0);
    for (auto& c : mb.chroma_ac)
      for (auto& blk : c)
        for (int i = 1; i < 16; i++) blk[i] = int16_t(rng() % 4 == 0 ? (rng() & 1 ? 1 : -1) : 0);
    mb.chroma_dc[0][0] = mb.chroma_dc[1][2] = 3;
    mb.luma_dc[0] = 9;
    mb.cbp = 0x2f;  // every luma 8x8 and the chroma AC coded
    EXPECT_LE(intra_mb_bits_bound(mb, false), pcm_mb_bits(false)) << int(t);
  }
}

}  // namespace
}  // namespace gvc::h264
