// search_reference_test.cpp: the encoder's motion search reads each reference as it was before its loop filter
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/dsp/backend.h"
#include "common/dsp/me.h"
#include "common/h264enc/encoder.h"
#include "common/h264enc/frame_recon.h"
#include "tests/h264/cpu_backend_with.h"
#include "tools/pan_frame.h"

namespace gvc::h264 {
namespace {

// What the test saw: per reconstruction (ReconJob::rec_id), its luma without the loop filter
// and with it; per motion search, the reference it was given.
struct Seen {
  std::map<uint64_t, std::vector<uint8_t>> unfiltered, filtered;
  std::vector<std::vector<uint8_t>> searched;
};

std::vector<uint8_t> rows_of(const PlaneView& v) {
  std::vector<uint8_t> out;
  for (int y = 0; y < v.height; y++) out.insert(out.end(), v.data + ptrdiff_t(y) * v.stride, v.data + ptrdiff_t(y) * v.stride + v.width);
  return out;
}

// The CPU reconstructor, which also reconstructs each job without the loop filter first (into
// pictures of its own): what the motion search of the next frames must read.
class Watching final : public FrameReconstructor {
 public:
  explicit Watching(Seen& seen) : seen_(seen) {}
  const char* name() const override { return "cpu"; }
  Status decide(const DecideJob& job) override { return inner_->decide(job); }
  Status run(const ReconJob& job) override {
    ReconJob plain = job;
    Picture rec;
    rec.alloc(job.rec->mb_width, job.rec->mb_height);
    std::vector<Macroblock> mbs(job.mbs, job.mbs + size_t(job.mb_width) * size_t(job.mb_height));
    plain.rec = &rec;
    plain.rec_luma = nullptr;
    plain.rec_search = nullptr;
    plain.mbs = mbs.data();
    plain.deblock = false;
    Status st = make_cpu_reconstructor()->run(plain);
    if (!st.ok()) return st;
    seen_.unfiltered[job.rec_id] = rows_of(rec.view(0));
    st = inner_->run(job);
    if (st.ok()) seen_.filtered[job.rec_id] = rows_of(job.rec->view(0));
    return st;
  }

 private:
  Seen& seen_;
  std::unique_ptr<FrameReconstructor> inner_ = make_cpu_reconstructor();
};

class RecordingSearch final : public MotionSearch {
 public:
  explicit RecordingSearch(Seen& seen) : seen_(seen) {}
  Status run(const PlaneView& cur, const PlaneView& ref, const MeParams& p, MbPartitionField& out) override {
    seen_.searched.push_back(rows_of(ref));
    return inner_->run(cur, ref, p, out);
  }
  Status select_blocks(const MbPartitionField& parts, BlockSize size, MvBlockField& out) override {
    return inner_->select_blocks(parts, size, out);
  }

 private:
  Seen& seen_;
  std::unique_ptr<MotionSearch> inner_ = make_cpu_motion_search();
};

// A picture with edges and texture: the loop filter changes samples at QP 36.
uint8_t texture(int x, int y) { return uint8_t((x * 7 + y * 13 + ((x / 9) ^ (y / 5)) * 37) & 255); }

void encode(bool deblock, Seen& seen) {
  CpuBackendWith backend([&] { return std::make_unique<Watching>(seen); },
                         [&] { return std::make_unique<RecordingSearch>(seen); });
  EncoderParams p;
  p.width = 96;
  p.height = 64;
  p.rc.qp = 36;
  p.deblock.enabled = deblock;
  Encoder enc;
  ASSERT_TRUE(enc.init(p, &backend).ok());
  for (int f = 0; f < 4; f++) {
    const std::vector<uint8_t> frame = bench::pan_frame(texture, p.width, p.height, f);
    EncodedFrame out;
    ASSERT_TRUE(enc.encode(bench::i420_frame_in(frame.data(), p.width, p.height), false, out).ok()) << "frame " << f;
  }
}

TEST(H264SearchReference, TheSearchReadsTheReferenceBeforeItsLoopFilter) {
  Seen seen;
  encode(true, seen);
  // One reference: frame f's search reads frame f - 1's reconstruction (ids 1, 2, 3).
  ASSERT_EQ(seen.searched.size(), 3u);
  int filter_changed = 0;
  for (uint64_t id = 1; id <= 3; id++) {
    ASSERT_EQ(seen.unfiltered.count(id), 1u);
    EXPECT_EQ(seen.searched[id - 1], seen.unfiltered[id]) << "reference " << id;
    filter_changed += seen.filtered[id] != seen.unfiltered[id];
  }
  EXPECT_EQ(filter_changed, 3) << "the loop filter changed no reference: the test shows nothing";
}

TEST(H264SearchReference, WithoutTheLoopFilterTheSearchReadsTheReconstruction) {
  Seen seen;
  encode(false, seen);
  ASSERT_EQ(seen.searched.size(), 3u);
  for (uint64_t id = 1; id <= 3; id++) EXPECT_EQ(seen.searched[id - 1], seen.filtered[id]) << "reference " << id;
}

}  // namespace
}  // namespace gvc::h264
