// slice_data_test.cpp: slice_data() written in row pieces on several threads (and as rows arrive) equals the macroblocks written one after the other
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "common/h264enc/cavlc.h"
#include "common/h264enc/encoder.h"
#include "common/h264enc/frame_recon.h"
#include "common/h264enc/mb_layer_bits.h"
#include "common/h264enc/slice_data.h"
#include "common/util/progress.h"

namespace gvc::h264 {
namespace {

// slice_data() the plain way: the macroblocks of the slice in order, one writer.
void write_serially(BitWriter& bw, const std::vector<Macroblock>& mbs, int mb_width, int mb_height,
                    int slice, int first, int end, bool p_slice, int num_refs) {
  const MbMap map{mbs.data(), mb_width, mb_height, slice};
  int skip_run = 0;
  for (int addr = first; addr < end; addr++) {
    if (mbs[size_t(addr)].type == MbType::PSkip) {
      skip_run++;
      continue;
    }
    if (p_slice) {
      bw.put_ue(uint32_t(skip_run));
      skip_run = 0;
    }
    write_macroblock(bw, map, addr % mb_width, addr / mb_width, p_slice, num_refs);
  }
  if (skip_run) bw.put_ue(uint32_t(skip_run));
}

// Frames of noise on a smooth ramp at QP 0 and 40 give I_PCM macroblocks (at QP 0, after
// headers of odd lengths, so their alignment bits depend on where the pieces land), P_Skip
// runs across rows (QP 40, still content) and slices that start mid-row.
TEST(SliceData, PiecesOnThreadsEqualOneWriter) {
  const int w = 176, h = 144;
  std::mt19937 rng(3);
  std::vector<uint8_t> frame(size_t(w) * h * 3 / 2);
  for (const int qp : {0, 40}) {
    for (const int slices : {1, 3, 7}) {
      EncoderParams p;
      p.width = w;
      p.height = h;
      p.rc.qp = qp;
      p.slices = slices;
      Encoder enc;
      ASSERT_TRUE(enc.init(p).ok());
      int pcm = 0, skip = 0;
      for (int f = 0; f < 3; f++) {
        for (size_t i = 0; i < frame.size(); i++)
          frame[i] = uint8_t((i % 97) + (qp == 0 || f == 0 ? rng() % 64 : 0));
        FrameIn in{{frame.data(), frame.data() + w * h, frame.data() + w * h * 5 / 4}, {w, w / 2, w / 2}};
        EncodedFrame out;
        ASSERT_TRUE(enc.encode(in, false, out).ok());
        const std::vector<Macroblock>& mbs = enc.macroblocks();
        const int mb_w = w / 16, mb_h = h / 16, count = mb_w * mb_h;
        pcm += out.stats.count(MbType::IPcm);
        skip += out.stats.count(MbType::PSkip);
        std::vector<BitWriter> joined(static_cast<size_t>(slices)), serial(static_cast<size_t>(slices));
        std::vector<SliceOut> outs(static_cast<size_t>(slices));
        for (int s = 0; s < slices; s++) {
          const int first = count * s / slices, end = count * (s + 1) / slices;
          // a stand-in for the slice header, of a length that differs per slice
          for (BitWriter* bw : {&joined[size_t(s)], &serial[size_t(s)]}) bw->put_bits(5 + 3 * s, 0x15);
          outs[size_t(s)] = SliceOut{first, end, &joined[size_t(s)]};
          write_serially(serial[size_t(s)], mbs, mb_w, mb_h, s, first, end, !out.idr, out.stats.num_ref_idx_active);
        }
        MbCounts counts;
        write_slices_data(mbs.data(), mb_w, mb_h, outs.data(), slices, !out.idr, out.stats.num_ref_idx_active, 4,
                          nullptr, &counts);
        // the pieces' counts of the macroblocks, against a count of them here
        MbCounts want;
        for (const Macroblock& m : mbs) {
          want.mb_type[int(m.type)]++;
          if (m.type == MbType::P8x8)
            for (int i = 0; i < 4; i++) want.sub_mb_type[m.sub_mb_type[i]]++;
          if (!is_intra(m.type))
            for (int i = 0; i < 4; i++) want.ref_idx[m.ref_idx[i]]++;
        }
        EXPECT_EQ(0, std::memcmp(&counts, &want, sizeof counts)) << "qp " << qp << ", " << slices << " slices, frame " << f;
        EXPECT_EQ(0, std::memcmp(&counts, static_cast<const MbCounts*>(&out.stats), sizeof counts))
            << "qp " << qp << ", " << slices << " slices, frame " << f << ": the encoder's stats";
        for (int s = 0; s < slices; s++) {
          ASSERT_EQ(joined[size_t(s)].bit_count(), serial[size_t(s)].bit_count())
              << "qp " << qp << ", " << slices << " slices, frame " << f << ", slice " << s;
          EXPECT_EQ(joined[size_t(s)].bytes(), serial[size_t(s)].bytes())
              << "qp " << qp << ", " << slices << " slices, frame " << f << ", slice " << s;
        }
      }
      if (qp == 0) {
        EXPECT_GT(pcm, 0) << slices << " slices: no I_PCM macroblock, the alignment is untested";
      } else {
        EXPECT_GT(skip, 0) << slices << " slices: no P_Skip macroblock";
      }
    }
  }
}

// Rows handed over one at a time (rows_ready), as the GPU's intra wavefront finishes them: each
// piece waits for its row, so the bits are those of the complete picture; without the wait
// the pieces would read rows not there yet. An I and a P frame (P_Skip runs across pieces), in
// 4 slices that start mid-row.
TEST(SliceData, PiecesWaitForTheirRows) {
  const int w = 176, h = 144, mb_w = w / 16, mb_h = h / 16, slices = 4;
  std::mt19937 rng(7);
  std::vector<uint8_t> frame(size_t(w) * h * 3 / 2);
  EncoderParams p;
  p.width = w;
  p.height = h;
  p.rc.qp = 20;
  p.slices = slices;
  Encoder enc;
  ASSERT_TRUE(enc.init(p).ok());
  int skip = 0;
  for (int f = 0; f < 2; f++) {
    if (f == 0)  // noise on a ramp; then the same but for its first rows (still macroblocks: P_Skip)
      for (size_t i = 0; i < frame.size(); i++) frame[i] = uint8_t((i % 97) + rng() % 64);
    else
      for (size_t i = 0; i < size_t(w) * 24; i++) frame[i] = uint8_t(rng());
    FrameIn in{{frame.data(), frame.data() + w * h, frame.data() + w * h * 5 / 4}, {w, w / 2, w / 2}};
    EncodedFrame out;
    ASSERT_TRUE(enc.encode(in, false, out).ok());
    skip += out.stats.count(MbType::PSkip);
    const std::vector<Macroblock>& mbs = enc.macroblocks();
    for (const int threads : {0, 4}) {
      std::vector<Macroblock> arriving(mbs.size());  // rows copied in as they "arrive"
      std::vector<BitWriter> joined(slices), whole(slices);
      std::vector<SliceOut> outs(slices), outs_whole(slices);
      for (int s = 0; s < slices; s++) {
        const int first = mb_w * mb_h * s / slices, end = mb_w * mb_h * (s + 1) / slices;
        outs[size_t(s)] = SliceOut{first, end, &joined[size_t(s)]};
        outs_whole[size_t(s)] = SliceOut{first, end, &whole[size_t(s)]};
      }
      const bool p_slice = !out.idr;
      const int refs = out.stats.num_ref_idx_active;
      write_slices_data(mbs.data(), mb_w, mb_h, outs_whole.data(), slices, p_slice, refs, threads);
      Progress rows;
      std::thread feeder([&] {
        for (int y = 0; y < mb_h; y++) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          std::copy(mbs.begin() + y * mb_w, mbs.begin() + (y + 1) * mb_w, arriving.begin() + y * mb_w);
          rows.set(y + 1);
        }
      });
      write_slices_data(arriving.data(), mb_w, mb_h, outs.data(), slices, p_slice, refs, threads, &rows);
      feeder.join();
      for (int s = 0; s < slices; s++)
        EXPECT_EQ(joined[size_t(s)].bytes(), whole[size_t(s)].bytes()) << "frame " << f << ", " << threads
                                                                       << " threads, slice " << s;
    }
  }
  EXPECT_GT(skip, 0) << "no P_Skip macroblock: the skip runs across pieces are untested";
}

// The macroblocks' bits made elsewhere (MbBitsView, the CUDA backend's, here put_mb_layer on the
// CPU) stand for their levels: with only the decisions in `mbs` (everything after them
// scrambled, and P_L0_16x16 macroblocks given back their decision's P_Skip as a coded skip
// candidate has it) the slices and counts are those the levels give. I and P frames, two
// references, three slices.
TEST(SliceData, BitsStandForTheLevels) {
  const int w = 176, h = 144, mb_w = w / 16, mb_h = h / 16, slices = 3, kWords = 100;
  std::mt19937 rng(11);
  std::vector<uint8_t> frame(size_t(w) * h * 3 / 2);
  EncoderParams p;
  p.width = w;
  p.height = h;
  p.rc.qp = 24;
  p.slices = slices;
  p.ref_frames = 2;
  Encoder enc;
  ASSERT_TRUE(enc.init(p).ok());
  int candidates = 0, skips = 0;
  for (int f = 0; f < 4; f++) {
    if (f == 0)  // noise on a ramp; then new noise in the first rows only (the rest P_Skip)
      for (size_t i = 0; i < frame.size(); i++) frame[i] = uint8_t((i % 97) + rng() % 32);
    else
      for (size_t i = 0; i < size_t(w) * 40; i++) frame[i] = uint8_t(rng());
    FrameIn in{{frame.data(), frame.data() + w * h, frame.data() + w * h * 5 / 4}, {w, w / 2, w / 2}};
    EncodedFrame out;
    ASSERT_TRUE(enc.encode(in, false, out).ok());
    const std::vector<Macroblock>& mbs = enc.macroblocks();
    const bool p_slice = !out.idr;
    const int refs = out.stats.num_ref_idx_active;
    std::vector<uint32_t> words(mbs.size() * kWords);
    std::vector<uint16_t> lens(mbs.size());
    std::vector<Macroblock> decisions(mbs.size());
    for (size_t i = 0; i < mbs.size(); i++) {
      ASSERT_NE(mbs[i].type, MbType::IPcm);
      MbBitString bits(&words[i * kWords], kWords);
      ASSERT_TRUE(put_mb_layer(bits, MbMap{mbs.data(), mb_w, mb_h, mbs[i].slice_id}, int(i) % mb_w, int(i) / mb_w,
                               p_slice, refs));
      lens[i] = uint16_t(bits.finish());
      ASSERT_FALSE(bits.overflowed());
      std::memset(static_cast<void*>(&decisions[i]), 0x5a, sizeof(Macroblock));
      std::memcpy(static_cast<void*>(&decisions[i]), &mbs[i], kDecisionBytes);
      if (mbs[i].type == MbType::PL0_16x16 && i % 2 == 0) {
        decisions[i].type = MbType::PSkip;
        candidates++;
      }
      skips += mbs[i].type == MbType::PSkip;
    }
    const MbBitsView view{words.data(), lens.data(), kWords};
    std::vector<BitWriter> from_bits(slices), from_levels(slices);
    std::vector<SliceOut> outs_bits(slices), outs_levels(slices);
    for (int s = 0; s < slices; s++) {
      const int first = mb_w * mb_h * s / slices, end = mb_w * mb_h * (s + 1) / slices;
      outs_bits[size_t(s)] = SliceOut{first, end, &from_bits[size_t(s)]};
      outs_levels[size_t(s)] = SliceOut{first, end, &from_levels[size_t(s)]};
    }
    MbCounts counts_bits, counts_levels;
    write_slices_data(mbs.data(), mb_w, mb_h, outs_levels.data(), slices, p_slice, refs, 4, nullptr, &counts_levels);
    write_slices_data(decisions.data(), mb_w, mb_h, outs_bits.data(), slices, p_slice, refs, 4, nullptr, &counts_bits,
                      &view);
    for (int s = 0; s < slices; s++)
      EXPECT_EQ(from_bits[size_t(s)].bytes(), from_levels[size_t(s)].bytes()) << "frame " << f << ", slice " << s;
    EXPECT_EQ(0, std::memcmp(&counts_bits, &counts_levels, sizeof counts_bits)) << "frame " << f;
  }
  EXPECT_GT(candidates, 0) << "no coded skip candidate stood in";
  EXPECT_GT(skips, 0) << "no P_Skip macroblock";
}

}  // namespace
}  // namespace gvc::h264
