// recon.cpp: the recorded sample reconstruction of a picture, run on the CPU
#include "common/hevcdec/recon.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace gvc::hevc {

void PictureRecon::clear() {
  refs.clear();
  pbs.clear();
  inter_tus.clear();
  intra_tus.clear();
  intra.clear();
  levels.clear();
  n_level_rows = 0;
  level_blocks.clear();
  dense_levels = 0;
  pcm.clear();
  pcm_samples.clear();
  loop_filters_planned = false;
  prepared_ready = false;
}

size_t PictureRecon::level_count() const {
  size_t n = levels.size();
  for (size_t i = 0; i < n_level_rows; ++i) n += level_rows[i].size();
  return n;
}

void PictureRecon::copy_levels(int16_t* to) const {
  if (!levels.empty()) std::memcpy(to, levels.data(), levels.size() * sizeof(int16_t));
  to += levels.size();
  for (size_t i = 0; i < n_level_rows; ++i) {
    const std::vector<int16_t>& row = level_rows[i];
    if (!row.empty()) std::memcpy(to, row.data(), row.size() * sizeof(int16_t));
    to += row.size();
  }
}

void PictureRecon::expand_levels(int16_t* to) const {
  std::memset(to, 0, size_t(dense_levels) * sizeof(int16_t));
  const uint32_t* blocks = level_blocks.data();
  auto scatter = [&](const std::vector<int16_t>& packed) {
    hevc_scatter_level_blocks(blocks, packed.size() / 16, packed.data(), to);
    blocks += packed.size() / 16;
  };
  scatter(levels);
  for (size_t i = 0; i < n_level_rows; ++i) scatter(level_rows[i]);
}

void PictureRecon::flatten_levels() {
  for (size_t i = 0; i < n_level_rows; ++i) levels.insert(levels.end(), level_rows[i].begin(), level_rows[i].end());
  n_level_rows = 0;
}

uint8_t PictureRecon::ref_index(const Picture* p) {
  for (size_t i = 0; i < refs.size(); ++i)
    if (refs[i] == p) return uint8_t(i);
  refs.push_back(p);
  return uint8_t(refs.size() - 1);
}

// 8.4.4.1 with pcm_flag: the samples as coded
void write_pcm_blocks(const PictureRecon& r, Picture& pic) {
  for (const PcmBlock& b : r.pcm) {
    const uint16_t* s = r.pcm_samples.data() + b.offset;
    for (int c = 0; c < 3; ++c) {
      const int n = (1 << b.log2_size) >> (c ? 1 : 0);
      const int x0 = c ? b.x / 2 : b.x, y0 = c ? b.y / 2 : b.y;
      const HevcPlane& p = pic.plane[c];
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x, ++s)
          if (x0 + x < p.width && y0 + y < p.height) p.at(x0 + x, y0 + y) = *s;
    }
  }
}

HevcMcBatch mc_batch(const PicParams& pp, const PictureRecon& r, const HevcPlane (*refs)[3]) {
  HevcMcBatch b;
  b.refs = refs;
  b.n_refs = int(r.refs.size());
  b.pbs = r.pbs.data();
  b.n_pbs = int(r.pbs.size());
  b.bit_depth_y = pp.bit_depth_y;
  b.bit_depth_c = pp.bit_depth_c;
  return b;
}

void reconstruct_picture(const PicParams& pp, const PictureRecon& r, Picture& pic) {
  write_pcm_blocks(r, pic);
  const std::unique_ptr<int16_t[]> dense(new int16_t[std::max<size_t>(r.dense_levels, 1)]);
  r.expand_levels(dense.get());
  const int16_t* levels = dense.get();
  if (!r.pbs.empty()) {
    std::unique_ptr<HevcPlane[][3]> refs(new HevcPlane[r.refs.size()][3]);
    for (size_t i = 0; i < r.refs.size(); ++i)
      for (int c = 0; c < 3; ++c) refs[i][c] = r.refs[i]->plane[c];
    HevcMc::run(mc_batch(pp, r, refs.get()), pic.plane);
  }
  HevcResidual::run(r.inter_tus, levels, pic.plane, pp.bit_depth_y, pp.bit_depth_c);
  HevcIntraRefs refs;
  for (const HevcIntraBlock& b : r.intra) {
    const HevcPlane& plane = pic.plane[b.c_idx];
    hevc_gather_intra_refs(b, plane, refs);
    HevcIntraParams prm;
    prm.log2_size = b.log2_size;
    prm.c_idx = b.c_idx;
    prm.mode = b.mode;
    prm.bit_depth = b.c_idx ? pp.bit_depth_c : pp.bit_depth_y;
    prm.strong_intra_smoothing = pp.sps->strong_intra_smoothing_enabled_flag;
    hevc_intra_predict(refs, prm, plane, b.x, b.y);
    if (b.tu >= 0) HevcResidual::run_one(r.intra_tus[size_t(b.tu)], levels, plane, prm.bit_depth);
  }
}

}  // namespace gvc::hevc
