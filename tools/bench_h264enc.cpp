// bench_h264enc.cpp: encoding speed of the H.264 engine on the CPU or CUDA backend, per stage, on a panning real picture
//
// Usage: bench-h264enc [--backend cpu|cuda] [--size WxH] [--frames N] [--qp QP] [--refs N]
//                      [--write-raw FILE] [--pipelined 1] [--keyint N] [--preset fast|medium|slow]
// The frames are a window panning over the painting in $GVC_ELEPHANTS (raw 4096x2304 luma,
// tools/gpu-host-test.sh --make-content), chroma from other parts of it. --write-raw also
// writes them as I420, for the x264enc runs of tools/bench-h264enc.sh. Prints the median of
// each stage (EncodedFrame::times) and the frames per second of the whole run. --pipelined 1
// codes each frame's slices behind the next frame (Encoder::set_pipelined). --keyint N puts an
// IDR every N frames (EncoderParams::keyint_max) and prints the median of those after the
// first by stage, as a P frame's. --preset: cudah264enc's speed-preset (the engine's defaults
// without it: medium's shapes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "common/h264enc/encoder.h"
#include "tools/pan_frame.h"
#if GVC_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "gpu/backend.h"
#endif

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int usage() {
  std::fprintf(stderr, "usage: bench-h264enc [--backend cpu|cuda] [--size WxH] [--frames N] [--qp QP] "
                       "[--refs N] [--write-raw FILE] [--pipelined 1] [--keyint N] [--device-input 1] "
                       "[--preset fast|medium|slow]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend_name = "cuda", raw_path;
  int w = 1920, h = 1080, frames = 30, qp = 26, refs = 1, keyint = 0;
  bool pipelined = false, device_input = false;
  std::optional<gvc::h264::SpeedPreset> preset;  // the engine's defaults without one
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) return usage();
    if (a == "--backend") backend_name = v;
    else if (a == "--size") { if (std::sscanf(v, "%dx%d", &w, &h) != 2) return usage(); }
    else if (a == "--frames") frames = std::atoi(v);
    else if (a == "--qp") qp = std::atoi(v);
    else if (a == "--refs") refs = std::atoi(v);
    else if (a == "--write-raw") raw_path = v;
    else if (a == "--pipelined") pipelined = std::atoi(v) != 0;
    else if (a == "--keyint") keyint = std::atoi(v);
    else if (a == "--device-input") device_input = std::atoi(v) != 0;
    else if (a == "--preset" && gvc::h264::parse_speed_preset(v, &preset.emplace())) {}
    else return usage();
    i++;
  }
  const char* path = std::getenv("GVC_ELEPHANTS");
  std::vector<uint8_t> pic(size_t(4096) * 2304);
  std::ifstream f(path ? path : "", std::ios::binary);
  if (!f || !f.read(reinterpret_cast<char*>(pic.data()), std::streamsize(pic.size()))) {
    std::fprintf(stderr, "bench-h264enc: GVC_ELEPHANTS must name the raw 4096x2304 luma file\n");
    return 1;
  }
  if (w < 16 || h < 16 || w % 2 || h % 2 || w + 2 * frames > 4096 || h + frames > 2304) {
    std::fprintf(stderr, "bench-h264enc: size and frame count must fit the painting\n");
    return 1;
  }
  auto px = [&](int x, int y) { return pic[size_t(y) * 4096 + size_t(x)]; };
  std::vector<std::vector<uint8_t>> clip(static_cast<size_t>(frames));
  for (int i = 0; i < frames; i++) clip[size_t(i)] = gvc::bench::pan_frame(px, w, h, i);
  if (!raw_path.empty()) {
    std::ofstream out(raw_path, std::ios::binary);
    for (const auto& fr : clip) out.write(reinterpret_cast<const char*>(fr.data()), std::streamsize(fr.size()));
    if (!out) {
      std::fprintf(stderr, "bench-h264enc: cannot write %s\n", raw_path.c_str());
      return 1;
    }
  }

  std::unique_ptr<gvc::Backend> backend;
  [[maybe_unused]] size_t free_before = 0;  // device memory once the context exists (CUDA backend)
  if (backend_name == "cuda") {
#if GVC_HAVE_CUDA
    size_t total_mem = 0;
    cudaFree(nullptr);
    cudaMemGetInfo(&free_before, &total_mem);
    gvc::Status why;
    backend = gvc::make_cuda_backend(0, &why);
    if (!backend) {
      std::fprintf(stderr, "bench-h264enc: %s\n", why.message().c_str());
      return 1;
    }
#else
    std::fprintf(stderr, "bench-h264enc: built without CUDA\n");
    return 1;
#endif
  } else if (backend_name != "cpu") {
    return usage();
  }
  // --device-input: the clip in device memory (the backend's), as cudaupload hands frames to
  // cudah264enc: the encoder copies each frame on the device and downloads the copy its CPU
  // decision reads, instead of copying and uploading host frames.
  std::vector<void*> device_clip;
  if (device_input) {
    if (!backend) {
      std::fprintf(stderr, "bench-h264enc: --device-input needs --backend cuda\n");
      return 1;
    }
    for (const auto& fr : clip) {
      void* d = backend->allocate(fr.size());
      if (!d || !backend->copy(d, gvc::MemoryLocation::Device, fr.data(), gvc::MemoryLocation::Host, fr.size()).ok()) {
        std::fprintf(stderr, "bench-h264enc: cannot put the clip in device memory\n");
        return 1;
      }
      device_clip.push_back(d);
    }
  }
  gvc::h264::EncoderParams p;
  p.width = w;
  p.height = h;
  p.rc.qp = qp;
  p.ref_frames = refs;
  if (keyint > 0) p.keyint_max = keyint;
  if (preset) gvc::h264::apply_speed_preset(*preset, p);
  gvc::h264::Encoder enc;
  gvc::Status st = enc.init(p, backend.get());
  if (st.ok()) st = enc.set_pipelined(pipelined);
  enc.set_cpu_times(true);
  if (!st.ok()) {
    std::fprintf(stderr, "bench-h264enc: %s\n", st.message().c_str());
    return 1;
  }
  std::vector<double> total, wait, analysis, analysis_upload, decision, prep, recon, entropy, reference, up, inter, intra, dbk, planes, down;
  std::vector<double> cpu_wait, cpu_analysis, cpu_decision, cpu_recon, cpu_entropy;  // process CPU time
  // the IDR frames after the first (--keyint): what an I frame costs once running
  std::vector<double> i_total, i_analysis, i_decision, i_recon, i_intra, i_dbk, i_entropy, i_cpu_decision;
  int idrs = 0;
  bool idr_parts_next = false;  // a frame's recon_parts are the frame before's (the IDR's)
  size_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < frames; i++) {
    const std::vector<uint8_t>& fr = clip[size_t(i)];
    const uint8_t* base = device_input ? static_cast<const uint8_t*>(device_clip[size_t(i)]) : fr.data();
    gvc::h264::FrameIn in = gvc::bench::i420_frame_in(base, w, h);
    in.loc = device_input ? gvc::MemoryLocation::Device : gvc::MemoryLocation::Host;
    gvc::h264::EncodedFrame out;
    const auto t0 = std::chrono::steady_clock::now();
    st = enc.encode(in, false, out);
    if (!st.ok()) {
      std::fprintf(stderr, "bench-h264enc: frame %d: %s\n", i, st.message().c_str());
      return 1;
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    bytes += out.annexb.size();
    if (out.present && idr_parts_next) {
      i_intra.push_back(out.times.recon_parts.intra);
      i_dbk.push_back(out.times.recon_parts.deblock);
      idr_parts_next = false;
    }
    if (out.present && out.idr && idrs++ > 0) {
      i_total.push_back(ms);
      i_analysis.push_back(out.times.analysis);
      i_decision.push_back(out.times.decision);
      i_recon.push_back(out.times.recon);
      i_entropy.push_back(out.times.entropy);
      i_cpu_decision.push_back(out.times.cpu.decision);
      idr_parts_next = true;
    }
    // the IDR and the first use of the device stay out of the medians (pipelined, `out` is the
    // frame before: the first call has none, the second gives the IDR)
    if (!out.present || out.idr) continue;
    total.push_back(ms);
    wait.push_back(out.times.wait);
    analysis.push_back(out.times.analysis);
    analysis_upload.push_back(out.times.analysis_upload);
    decision.push_back(out.times.decision);
    prep.push_back(out.times.decision_prep);
    recon.push_back(out.times.recon);
    up.push_back(out.times.recon_parts.upload);
    inter.push_back(out.times.recon_parts.inter);
    intra.push_back(out.times.recon_parts.intra);
    dbk.push_back(out.times.recon_parts.deblock);
    planes.push_back(out.times.recon_parts.planes);
    down.push_back(out.times.recon_parts.download);
    entropy.push_back(out.times.entropy);
    reference.push_back(out.times.reference);
    cpu_wait.push_back(out.times.cpu.wait);
    cpu_analysis.push_back(out.times.cpu.analysis);
    cpu_decision.push_back(out.times.cpu.decision);
    cpu_recon.push_back(out.times.cpu.recon);
    cpu_entropy.push_back(out.times.cpu.entropy);
  }
  {
    gvc::h264::EncodedFrame last;
    st = enc.drain(last);
    if (!st.ok()) {
      std::fprintf(stderr, "bench-h264enc: the last frame: %s\n", st.message().c_str());
      return 1;
    }
    bytes += last.annexb.size();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("bench-h264enc %dx%d qp %d refs %d backend %s (reconstruction: %s), %d frames%s%s\n", w, h, qp,
              refs, backend_name.c_str(), enc.reconstructor_name(), frames,
              device_input ? " from device memory" : "",
              pipelined ? ", pipelined (entropy coding behind the next frame; a P frame's time is its encode() call)" : "");
  std::printf("  median P frame %.2f ms: source copy, upload and wait for the last reference %.2f, analysis %.2f "
              "(of which loading device input %.2f), decision %.2f (of "
              "which %.2f preparing on the GPU), reconstruction %.2f, entropy %.2f, dpb update %.2f\n",
              median(total), median(wait), median(analysis), median(analysis_upload), median(decision), median(prep), median(recon),
              median(entropy), median(reference));
  if (!i_total.empty())
    std::printf("  median IDR frame after the first (%zu of them) %.2f ms: analysis %.2f, decision %.2f (CPU "
                "%.2f core-ms), reconstruction %.2f (GPU events: intra %.2f, loop filter %.2f), entropy %.2f\n",
                i_total.size(), median(i_total), median(i_analysis), median(i_decision), median(i_cpu_decision),
                median(i_recon), median(i_intra), median(i_dbk), median(i_entropy));
  if (median(inter) > 0)
    std::printf("  reconstruction (GPU events): uploads %.2f, inter %.2f, intra %.2f, loop filter %.2f, "
                "reference planes %.2f, downloads %.2f\n",
                median(up), median(inter), median(intra), median(dbk), median(planes), median(down));
  if (!pipelined)  // pipelined, the entropy coding's CPU time would count in the next frame's stages too
    std::printf("  CPU time of the process, median core-ms per P frame: wait %.2f, analysis %.2f, decision %.2f, "
                "reconstruction %.2f, entropy %.2f\n",
                median(cpu_wait), median(cpu_analysis), median(cpu_decision), median(cpu_recon), median(cpu_entropy));
  std::printf("  %.2f fps over the run, %.1f kbit/frame\n", frames / secs, bytes * 8.0 / 1000 / frames);
#if GVC_HAVE_CUDA
  if (free_before) {  // what the encoder holds on the device, and the local memory its kernels reserve
    size_t free_after = 0, total_mem = 0, stack = 0;
    cudaDeviceSynchronize();
    cudaMemGetInfo(&free_after, &total_mem);
    cudaDeviceGetLimit(&stack, cudaLimitStackSize);
    cudaDeviceProp prop{};
    int dev = 0;
    cudaGetDevice(&dev);
    cudaGetDeviceProperties(&prop, dev);
    std::printf("  GPU memory: %.1f MiB since the context was made; per-thread stack limit %zu bytes "
                "(x %d threads/SM x %d SMs = %.1f MiB of local memory)\n",
                double(free_before - free_after) / (1 << 20), stack, prop.maxThreadsPerMultiProcessor,
                prop.multiProcessorCount,
                double(stack) * prop.maxThreadsPerMultiProcessor * prop.multiProcessorCount / (1 << 20));
  }
#endif
  for (void* d : device_clip) backend->release(d);
  return 0;
}
