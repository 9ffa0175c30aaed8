// decide_prep_test.cpp: decisions made with what can be computed before the wavefront (intra_prep.h's intra search, satd_cache.h's SATDs, inter_preselect.h's pre-selections) equal decisions made without
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/dsp/backend.h"
#include "common/h264enc/encoder.h"
#include "common/h264enc/frame_recon.h"
#include "tests/h264/cpu_backend_with.h"
#include "oracle.h"

namespace gvc::h264 {
namespace {

struct Counts {
  int mbs = 0, differing = 0;
  int differing_with_zeroed_cache = 0;  // decisions with every cached SATD set to 0
  int differing_with_other_presel = 0;  // decisions with every pre-selection changed
  int prep_used = 0;        // macroblocks whose neighbours let the prepared search stand
  int prep_used_i4 = 0;     // of these, decided Intra_4x4
  int searched_again = 0;   // macroblocks whose decided neighbours differ from the search's guess
  int i_mbs = 0, i_prep_used = 0;  // in I slices: macroblocks, and those the prepared search served
  int prep_differing = 0;   // served ones whose search against the decided neighbours differs
  int late_inputs_waits = 0;     // decisions whose inputs past the first rows came later: their waits
  int decided_before_inputs = 0;  // macroblocks past those rows decided before the wait ended
  int differing_with_late_inputs = 0;
  // decisions with the ME partitions past me_partitions_read replaced (none may change: the
  // CUDA backend brings only the others to the host), and with those before it replaced
  int differing_with_unread_me_changed = 0, differing_with_read_me_changed = 0;
  std::string first_diff;
};

bool same_prep(const MbIntraPrep& a, const MbIntraPrep& b) {
  return a.i16_cost == b.i16_cost && a.i4_cost == b.i4_cost && a.i16_mode == b.i16_mode &&
         a.chroma_mode == b.chroma_mode && std::memcmp(a.i4_mode, b.i4_mode, sizeof a.i4_mode) == 0 &&
         std::memcmp(a.edge_modes, b.edge_modes, sizeof a.edge_modes) == 0;
}

bool same_decision(const Macroblock& a, const Macroblock& b) {
  bool same = a.type == b.type && a.slice_id == b.slice_id && a.i16_mode == b.i16_mode &&
              a.chroma_mode == b.chroma_mode && a.cbp == b.cbp;
  same = same && std::memcmp(a.i4_mode, b.i4_mode, sizeof a.i4_mode) == 0;
  same = same && std::memcmp(a.ref_idx, b.ref_idx, sizeof a.ref_idx) == 0;
  same = same && std::memcmp(a.sub_mb_type, b.sub_mb_type, sizeof a.sub_mb_type) == 0;
  same = same && std::memcmp(a.mv, b.mv, sizeof a.mv) == 0 && std::memcmp(a.mvd, b.mvd, sizeof a.mvd) == 0;
  return same;
}

// The CPU reconstructor, deciding every frame with prepare_intra_cpu's and prepare_satd_cpu's
// results (the pre-selections too), without them, with a wrong SATD cache and with other
// pre-selections; the encoder goes on with the decisions made without.
class CheckingReconstructor final : public FrameReconstructor {
 public:
  explicit CheckingReconstructor(Counts& counts) : counts_(counts) {}
  const char* name() const override { return "cpu-checking"; }

  Status decide(const DecideJob& job) override {
    const size_t n = size_t(job.mb_width) * size_t(job.mb_height);
    std::vector<MbIntraPrep> prep(n);
    prepare_intra_cpu(job, prep.data());
    std::vector<MbSatdRef> satd(n * size_t(job.num_refs));
    std::vector<Preselection> presel(n);
    if (job.num_refs) prepare_satd_cpu(job, satd.data(), presel.data());
    std::vector<Macroblock> with(n);
    DecideJob j = job;
    j.mbs = with.data();
    j.intra_prep = prep.data();
    j.satd = job.num_refs ? satd.data() : nullptr;
    j.presel = job.num_refs ? presel.data() : nullptr;
    Status st = cpu_->decide(j);
    if (!st.ok()) return st;
    // As the CUDA backend decides: with the inputs of only the first third of the rows there at
    // the start (its SATD caches in bands), no macroblock past them is decided before
    // wait_inputs() has returned, which is called once; and with the references' half samples
    // computed from their full-sample planes. The decisions are the same.
    std::vector<Macroblock> late(n);
    {
      DecideJob l = j;
      l.mbs = late.data();
      l.refs_full_only = true;
      l.inputs_rows = job.mb_height / 3;
      const size_t first = size_t(l.inputs_rows) * size_t(job.mb_width);
      for (size_t i = first; i < n; i++) late[i].slice_id = 0xFFFF;  // no slice has this id
      l.wait_inputs = [&] {
        counts_.late_inputs_waits++;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the other threads go on meanwhile
        for (size_t i = first; i < n; i++) counts_.decided_before_inputs += late[i].slice_id != 0xFFFF;
      };
      st = cpu_->decide(l);
      if (!st.ok()) return st;
      counts_.late_inputs_waits -= 1;  // one expected per decision
    }
    // With other pre-selections (P_L0_16x8 tried where it was not, and the other way round)
    // the decisions change: the pre-selections are read.
    std::vector<Macroblock> other(n);
    if (job.num_refs) {
      DecideJob o = j;
      std::vector<Preselection> flipped = presel;
      for (Preselection& s : flipped) s = Preselection{!s.try16x8, false, false, {}};
      o.presel = flipped.data();
      o.mbs = other.data();
      st = cpu_->decide(o);
      if (!st.ok()) return st;
    }
    // With wrong SATDs in the cache the decisions change: the cache is read.
    std::vector<Macroblock> zeroed(n);
    if (job.num_refs) {
      for (MbSatdRef& c : satd) {
        for (auto& g : c.grid)
          for (auto& v : g) v = v == kSatdMiss ? v : 0;
      }
      j.mbs = zeroed.data();
      st = cpu_->decide(j);
      if (!st.ok()) return st;
    }
    st = cpu_->decide(job);
    if (!st.ok()) return st;
    // The ME partitions the decision does not read, then those it reads, replaced by nonsense.
    std::vector<Macroblock> unread(n), read(n);
    if (job.num_refs) {
      const int parts = me_partitions_read(job.analysis.flags);
      for (const bool past : {true, false}) {
        std::vector<std::vector<MbPartitions>> fields(size_t(job.num_refs));
        std::vector<MbPartitionField> views(size_t(job.num_refs));
        for (int r = 0; r < job.num_refs; r++) {
          fields[size_t(r)].assign(job.me[r].data, job.me[r].data + n);
          for (MbPartitions& m : fields[size_t(r)])
            for (int k = past ? parts : 0; k < (past ? kNumPartitions : parts); k++) m.part[k] = MvCost{-36, 52, 3};
          views[size_t(r)] = job.me[r];
          views[size_t(r)].data = fields[size_t(r)].data();
        }
        DecideJob u = job;
        u.me = views.data();
        u.mbs = past ? unread.data() : read.data();
        st = cpu_->decide(u);
        if (!st.ok()) return st;
      }
    }
    const MbAnalysis a = frame_analysis(job);
    IntraPrepScratch scratch;
    for (size_t i = 0; i < n; i++) {
      const int x = int(i) % job.mb_width, y = int(i) / job.mb_width;
      const MbMap map{job.mbs, job.mb_width, job.mb_height, job.slice_of_mb[i]};
      counts_.mbs++;
      counts_.i_mbs += job.num_refs == 0;
      if (intra_prep_holds(map, x, y, prep[i])) {
        counts_.prep_used++;
        counts_.i_prep_used += job.num_refs == 0;
        counts_.prep_used_i4 += job.mbs[i].type == MbType::I4x4 && job.num_refs > 0;
        // where it holds, the search against the decided neighbours gives the same result
        MbAnalysis t = a;
        t.map = map;
        t.mx = x;
        t.my = y;
        t.intra_cand = job.intra_cand ? &job.intra_cand[i] : nullptr;
        MbIntraPrep again;
        prepare_intra(t, scratch, again);
        if (!same_prep(again, prep[i]) && !counts_.prep_differing++)
          counts_.first_diff = "macroblock " + std::to_string(x) + "," + std::to_string(y) +
                               ": the prepared search differs from the search against the decided neighbours";
      } else {
        counts_.searched_again++;
      }
      if (job.num_refs && !same_decision(zeroed[i], job.mbs[i])) counts_.differing_with_zeroed_cache++;
      if (job.num_refs && !same_decision(other[i], job.mbs[i])) counts_.differing_with_other_presel++;
      if (job.num_refs && !same_decision(unread[i], job.mbs[i])) counts_.differing_with_unread_me_changed++;
      if (job.num_refs && !same_decision(read[i], job.mbs[i])) counts_.differing_with_read_me_changed++;
      counts_.differing_with_late_inputs += !same_decision(with[i], late[i]);
      if (!same_decision(with[i], job.mbs[i]) && !counts_.differing++)
        counts_.first_diff = "macroblock " + std::to_string(x) + "," + std::to_string(y) + ": type " +
                             std::to_string(int(with[i].type)) + " with, " + std::to_string(int(job.mbs[i].type)) +
                             " without";
    }
    return Status();
  }
  Status run(const ReconJob& job) override { return cpu_->run(job); }

 private:
  Counts& counts_;
  std::unique_ptr<FrameReconstructor> cpu_ = make_cpu_reconstructor();
};


struct Case {
  int qp, slices;
  IntraPruneMethod prune;
  int refs;
  bool fast = false;  // speed-preset fast's analysis (16x16, 16x8, 8x16; 5 ME partitions read)
};

// The clip's first frames at 352x288: an IDR (Intra_4x4 next to Intra_4x4 nearly everywhere)
// and P frames (intra macroblocks, some Intra_4x4, among inter ones; every partition shape),
// in one or three slices (neighbours across a slice edge are not available), with and without
// intra pruning, one to three references, and with the fast preset's shapes.
TEST(DecidePrep, DecisionsWithThePreparedSearchesEqualTheSearch) {
  const std::string ffmpeg = test::find_ffmpeg();
  ASSERT_FALSE(ffmpeg.empty()) << "ffmpeg is not installed (scripts/test.sh installs it)";
  const std::string clip = test::find_test_clip();
  ASSERT_FALSE(clip.empty()) << "test clip missing: install opencv-doc (vtest.avi) or set GVC_TEST_CLIP";
  test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const int w = 352, h = 288, frames = 4;
  const std::string path = dir.path() + "/src.yuv";
  const auto r = test::run_command({ffmpeg, "-nostdin", "-v", "error", "-i", clip, "-frames:v", std::to_string(frames),
                                    "-vf", "scale=352:288", "-pix_fmt", "yuv420p", "-f", "rawvideo", "-y", path});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  std::vector<uint8_t> src;
  ASSERT_TRUE(test::read_file(path, src));
  const size_t frame_size = size_t(w) * h * 3 / 2;
  ASSERT_EQ(src.size(), frame_size * frames);

  Counts total;
  for (const Case c : {Case{20, 1, IntraPruneMethod::None, 1}, Case{30, 3, IntraPruneMethod::Kirsch, 3},
                       Case{38, 1, IntraPruneMethod::Sobel, 2}, Case{26, 1, IntraPruneMethod::None, 2, true}}) {
    Counts counts;
    CpuBackendWith backend([&] { return std::make_unique<CheckingReconstructor>(counts); });
    EncoderParams p;
    p.width = w;
    p.height = h;
    p.rc.qp = c.qp;
    p.slices = c.slices;
    p.analyse.intra_prune = c.prune;
    p.ref_frames = c.refs;
    if (c.fast) apply_speed_preset(SpeedPreset::Fast, p);
    Encoder enc;
    ASSERT_TRUE(enc.init(p, &backend).ok());
    for (int i = 0; i < frames; i++) {
      FrameIn in;
      in.plane[0] = src.data() + frame_size * size_t(i);
      in.plane[1] = in.plane[0] + size_t(w) * h;
      in.plane[2] = in.plane[1] + size_t(w / 2) * (h / 2);
      in.stride[0] = w;
      in.stride[1] = in.stride[2] = w / 2;
      EncodedFrame out;
      ASSERT_TRUE(enc.encode(in, false, out).ok());
    }
    EXPECT_EQ(counts.differing, 0) << "qp " << c.qp << ": " << counts.differing << " of " << counts.mbs
                                   << " macroblocks decided differently, first " << counts.first_diff;
    EXPECT_GT(counts.differing_with_zeroed_cache, 0) << "qp " << c.qp << ": the SATD cache is not read";
    EXPECT_GT(counts.differing_with_other_presel, 0) << "qp " << c.qp << ": the pre-selections are not read";
    EXPECT_EQ(counts.prep_differing, 0) << "qp " << c.qp << ": " << counts.first_diff;
    EXPECT_EQ(counts.late_inputs_waits, 0) << "qp " << c.qp << ": wait_inputs() not called once per decision";
    EXPECT_EQ(counts.decided_before_inputs, 0) << "qp " << c.qp << ": macroblocks decided before their inputs";
    EXPECT_EQ(counts.differing_with_late_inputs, 0) << "qp " << c.qp << ": decisions changed by late inputs";
    EXPECT_EQ(counts.differing_with_unread_me_changed, 0)
        << "qp " << c.qp << ": decisions read ME partitions past me_partitions_read";
    EXPECT_GT(counts.differing_with_read_me_changed, 0) << "qp " << c.qp << ": the ME partitions are not read";
    total.prep_used += counts.prep_used;
    total.prep_used_i4 += counts.prep_used_i4;
    total.searched_again += counts.searched_again;
    total.mbs += counts.mbs;
    total.i_mbs += counts.i_mbs;
    total.i_prep_used += counts.i_prep_used;
  }
  // Both paths of decide_mb ran, and the prepared search chose Intra_4x4 in P frames.
  EXPECT_GT(total.prep_used, 0);
  EXPECT_GT(total.searched_again, 0);
  EXPECT_GT(total.prep_used_i4, 0);
  RecordProperty("prep_used", total.prep_used);
  RecordProperty("prep_used_i4", total.prep_used_i4);
  RecordProperty("searched_again", total.searched_again);
  // the I slices' passes against the last pass's choices serve most of their macroblocks
  EXPECT_GT(total.i_prep_used * 2, total.i_mbs) << total.i_prep_used << " of " << total.i_mbs;
  std::printf("prepared searches used: %d of %d macroblocks (I slices: %d of %d), %d searched again\n",
              total.prep_used, total.mbs, total.i_prep_used, total.i_mbs, total.searched_again);
}

// me_partition_rect is the inverse of me_partition_index over the 41 partitions.
TEST(DecidePrep, PartitionRectsRoundTrip) {
  for (int idx = 0; idx < kNumPartitions; idx++) {
    int x, y, w, h;
    me_partition_rect(idx, &x, &y, &w, &h);
    const PartitionGeometry g = partition_geometry(idx);
    EXPECT_EQ(4 * x, g.x) << idx;
    EXPECT_EQ(4 * y, g.y) << idx;
    EXPECT_EQ(4 * w, g.w) << idx;
    EXPECT_EQ(4 * h, g.h) << idx;
    EXPECT_EQ(me_partition_index(x, y, w, h), idx);
  }
}

// The slot the decision looks a partition up in (satd_slot_of) is the one satd_slots gives it,
// for no pre-selection and every one preselect() can make: each shape alone, and every
// sub_mb_type of each quadrant.
TEST(DecidePrep, SlotOfEqualsTheSlots) {
  std::vector<Preselection> all(1);
  all[0].try16x8 = true;
  all.push_back(Preselection{});
  all.back().try8x16 = true;
  all.push_back(Preselection{});  // P_L0_16x16 alone
  for (int code = 0; code < 256; code++) {
    Preselection s;
    s.try8x8 = true;
    for (int q = 0; q < 4; q++) s.sub[q] = uint8_t(kSubP8x8 + ((code >> (2 * q)) & 3));
    all.push_back(s);
  }
  for (size_t k = 0; k <= all.size(); k++) {
    const Preselection* sel = k < all.size() ? &all[k] : nullptr;
    const SatdSlots table = satd_slots(sel);
    for (int part = 0; part < kNumPartitions; part++) {
      const SatdSlot s = satd_slot_of(sel, part);
      ASSERT_EQ(s.big, table.big_of[part]) << "pre-selection " << k << ", partition " << part;
      ASSERT_EQ(s.small, table.small_of[part]) << "pre-selection " << k << ", partition " << part;
    }
  }
}

}  // namespace
}  // namespace gvc::h264
