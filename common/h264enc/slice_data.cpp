// slice_data.cpp: slice_data() of CAVLC slices in pieces of a macroblock row on all cores, joined bit for bit
#include "common/h264enc/slice_data.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "common/h264enc/cavlc.h"
#include "common/util/parallel.h"

namespace gvc::h264 {

namespace {

// Macroblocks [first, end) of one slice. The piece's bits leave out the mb_skip_run before its
// first coded macroblock: that run may start in the pieces before, so the join writes it.
struct Piece {
  int slice = 0;
  int first = 0, end = 0;
  bool last = false;  // the slice's last piece: the final mb_skip_run follows it
  // Set by write_piece: P_Skip macroblocks before the first coded one (all of the piece's when
  // none is coded) and after the last.
  bool coded = false;
  int lead_skip = 0, trail_skip = 0;
  bool has_pcm = false;
  MbCounts counts;
  BitWriter bw;
};

// The first `len` bits of words, most significant first.
void put_words(BitWriter& bw, const uint32_t* words, int len) {
  for (; len >= 32; len -= 32) bw.put_bits(32, *words++);
  if (len > 0) bw.put_bits(len, *words >> (32 - len));
}

// Writes the piece into `bw`, which starts `offset` bits into a byte (what the
// pcm_alignment_zero_bits count from); with `bits`, the coded macroblocks' bits from there.
void write_piece(Piece& pc, const Macroblock* mbs, int mb_width, int mb_height, bool p_slice,
                 int num_ref_idx_active, int offset, BitWriter& bw, const MbBitsView* bits = nullptr) {
  const MbMap map{mbs, mb_width, mb_height, pc.slice};
  bw.put_bits(offset, 0);
  int skip_run = 0;
  bool coded = false, has_pcm = false;
  MbCounts& n = pc.counts;
  n = MbCounts();
  for (int addr = pc.first; addr < pc.end; addr++) {
    const Macroblock& mb = mbs[addr];
    // With bits, `mbs` hold the decisions: a P_Skip candidate the reconstruction coded
    // (finish_skip_candidate) is P_L0_16x16 there, and has bits (a coded macroblock has some).
    const MbType type = !bits ? mb.type
                        : bits->lens[addr] == 0 ? MbType::PSkip
                        : mb.type == MbType::PSkip ? MbType::PL0_16x16
                                                   : mb.type;
    n.mb_type[int(type)]++;
    if (!is_intra(type))
      for (int i = 0; i < 4; i++) n.ref_idx[mb.ref_idx[i]]++;
    if (type == MbType::P8x8)
      for (int i = 0; i < 4; i++) n.sub_mb_type[mb.sub_mb_type[i]]++;
    if (type == MbType::PSkip) {
      skip_run++;
      continue;
    }
    if (!coded)
      pc.lead_skip = skip_run;
    else if (p_slice)
      bw.put_ue(uint32_t(skip_run));  // mb_skip_run
    skip_run = 0;
    coded = true;
    has_pcm |= type == MbType::IPcm;
    if (bits)
      put_words(bw, bits->words + size_t(addr) * size_t(bits->words_per_mb), bits->lens[addr]);
    else
      write_macroblock(bw, map, addr % mb_width, addr / mb_width, p_slice, num_ref_idx_active);
  }
  if (!coded) pc.lead_skip = skip_run;
  pc.trail_skip = skip_run;
  pc.coded = coded;
  pc.has_pcm = has_pcm;
}

}  // namespace

void write_slices_data(const Macroblock* mbs, int mb_width, int mb_height, const SliceOut* slices,
                       int num_slices, bool p_slice, int num_ref_idx_active, int threads,
                       const Progress* rows_ready, MbCounts* counts, const MbBitsView* bits) {
  if (counts) *counts = MbCounts();
  // Pieces end at row ends and slice ends.
  std::vector<Piece> pieces;
  for (int s = 0; s < num_slices; s++) {
    for (int a = slices[s].first_mb; a < slices[s].end_mb;) {
      Piece pc;
      pc.slice = s;
      pc.first = a;
      pc.end = std::min(slices[s].end_mb, (a / mb_width + 1) * mb_width);
      pc.last = pc.end == slices[s].end_mb;
      a = pc.end;
      pieces.push_back(std::move(pc));
    }
  }

  // Each piece is written into a writer of the thread's own and moved in at the end: the
  // pieces lie side by side, and a writer's fields change with every bit (false sharing made
  // 16 cores no faster than 2).
  auto write = [&](size_t i) {
    if (rows_ready) rows_ready->wait_for((pieces[i].end - 1) / mb_width + 1);  // its row (pieces start in order)
    BitWriter bw;
    write_piece(pieces[i], mbs, mb_width, mb_height, p_slice, num_ref_idx_active, 0, bw,
                bits && bits->words ? bits : nullptr);
    pieces[i].bw = std::move(bw);
  };
  if (threads > 0) {  // exactly this many threads of their own (tests)
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < pieces.size(); i = next++) write(i);
    };
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; t++) workers.emplace_back(work);
    work();
    for (auto& w : workers) w.join();
  } else {
    parallel_for(int(pieces.size()), [&](int i) { write(size_t(i)); });
  }

  // The join: `skip_run` is the run of P_Skip macroblocks of the slice not coded yet.
  int skip_run = 0;
  for (size_t i = 0; i < pieces.size(); i++) {
    Piece& pc = pieces[i];
    BitWriter& out = *slices[pc.slice].bw;
    if (i == 0 || pieces[i - 1].slice != pc.slice) skip_run = 0;
    if (!pc.coded) {
      skip_run += pc.lead_skip;
    } else {
      if (p_slice) out.put_ue(uint32_t(skip_run + pc.lead_skip));  // mb_skip_run
      const int offset = int(out.bit_count() & 7);
      if (!pc.has_pcm || offset == 0) {
        out.append(pc.bw);
      } else {  // its pcm_alignment_zero_bits depend on where it lands
        BitWriter again;
        write_piece(pc, mbs, mb_width, mb_height, p_slice, num_ref_idx_active, offset, again);
        out.append(again, size_t(offset));
      }
      skip_run = pc.trail_skip;
    }
    if (pc.last && skip_run) out.put_ue(uint32_t(skip_run));
    if (counts) *counts += pc.counts;
  }
}

}  // namespace gvc::h264
