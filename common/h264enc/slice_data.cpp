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

// Macroblocks [first, end) of one slice; skip_before P_Skip macroblocks of the slice come
// just before `first` (mb_skip_run counts them with the piece's own leading ones).
struct Piece {
  int slice = 0;
  int first = 0, end = 0;
  int skip_before = 0;
  bool last = false;  // the slice's last piece: it writes the final mb_skip_run
  bool has_pcm = false;
  BitWriter bw;
};

// Writes the piece into `bw`, which starts `offset` bits into a byte (what the
// pcm_alignment_zero_bits count from).
void write_piece(Piece& pc, const Macroblock* mbs, int mb_width, int mb_height, bool p_slice,
                 int num_ref_idx_active, int offset, BitWriter& bw) {
  const MbMap map{mbs, mb_width, mb_height, pc.slice};
  bw.put_bits(offset, 0);
  int skip_run = pc.skip_before;
  for (int addr = pc.first; addr < pc.end; addr++) {
    const Macroblock& mb = mbs[addr];
    if (mb.type == MbType::PSkip) {
      skip_run++;
      continue;
    }
    if (p_slice) {
      bw.put_ue(uint32_t(skip_run));  // mb_skip_run
      skip_run = 0;
    }
    if (mb.type == MbType::IPcm) pc.has_pcm = true;
    write_macroblock(bw, map, addr % mb_width, addr / mb_width, p_slice, num_ref_idx_active);
  }
  if (pc.last && skip_run) bw.put_ue(uint32_t(skip_run));
}

}  // namespace

void write_slices_data(const Macroblock* mbs, int mb_width, int mb_height, const SliceOut* slices,
                       int num_slices, bool p_slice, int num_ref_idx_active, int threads) {
  // Pieces end at row ends and slice ends; a piece's skip_before is the run of P_Skip
  // macroblocks the pieces before it in the slice leave open.
  std::vector<Piece> pieces;
  for (int s = 0; s < num_slices; s++) {
    int skip = 0;
    for (int a = slices[s].first_mb; a < slices[s].end_mb;) {
      Piece pc;
      pc.slice = s;
      pc.first = a;
      pc.end = std::min(slices[s].end_mb, (a / mb_width + 1) * mb_width);
      pc.skip_before = skip;
      pc.last = pc.end == slices[s].end_mb;
      for (int i = pc.first; i < pc.end; i++) skip = mbs[i].type == MbType::PSkip ? skip + 1 : 0;
      a = pc.end;
      pieces.push_back(std::move(pc));
    }
  }

  // Each piece is written into a writer of the thread's own and moved in at the end: the
  // pieces lie side by side, and a writer's fields change with every bit (false sharing made
  // 16 cores no faster than 2).
  auto write = [&](size_t i) {
    BitWriter bw;
    write_piece(pieces[i], mbs, mb_width, mb_height, p_slice, num_ref_idx_active, 0, bw);
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

  for (Piece& pc : pieces) {
    BitWriter& out = *slices[pc.slice].bw;
    const int offset = int(out.bit_count() & 7);
    if (!pc.has_pcm || offset == 0) {
      out.append(pc.bw);
      continue;
    }
    BitWriter again;
    write_piece(pc, mbs, mb_width, mb_height, p_slice, num_ref_idx_active, offset, again);
    out.append(again, size_t(offset));
  }
}

}  // namespace gvc::h264
