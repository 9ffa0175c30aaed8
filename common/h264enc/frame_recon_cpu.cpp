// frame_recon_cpu.cpp: the CPU reconstruction stage: recon_mb.h in raster order, then the loop filter
#include "common/h264enc/frame_recon.h"
#include "common/h264enc/recon_mb.h"

namespace gvc::h264 {

namespace {

class CpuReconstructor final : public FrameReconstructor {
 public:
  const char* name() const override { return "cpu"; }

  Status run(const ReconJob& job) override {
    ReconRef refs[4];
    for (int r = 0; r < job.num_refs; r++) {
      const Picture& pic = job.refs[r]->pic;
      refs[r].luma = job.refs[r]->luma.view();
      refs[r].chroma[0] = pic.plane[1].data();
      refs[r].chroma[1] = pic.plane[2].data();
      refs[r].chroma_stride = pic.stride[1];
      refs[r].chroma_width = pic.width(1);
      refs[r].chroma_height = pic.height(1);
    }
    ReconPicture f;
    for (int p = 0; p < 3; p++) {
      f.src[p] = job.src->plane[p].data();
      f.src_stride[p] = job.src->stride[p];
      f.rec[p] = job.rec->plane[p].data();
      f.rec_stride[p] = job.rec->stride[p];
    }
    f.mbs = job.mbs;
    f.mb_width = job.mb_width;
    f.mb_height = job.mb_height;
    f.refs = refs;
    f.num_refs = job.num_refs;
    f.qp = job.qp;
    f.qpc = job.qpc;
    f.p_slice = job.p_slice;
    for (int my = 0; my < job.mb_height; my++)
      for (int mx = 0; mx < job.mb_width; mx++) reconstruct_mb(f, mx, my);
    if (job.deblock)
      deblock_picture(*job.rec, MbMap{job.mbs, job.mb_width, job.mb_height, -1}, job.deblock_params);
    return Status();
  }
};

}  // namespace

std::unique_ptr<FrameReconstructor> make_cpu_reconstructor() { return std::make_unique<CpuReconstructor>(); }

}  // namespace gvc::h264
