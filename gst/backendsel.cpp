// backendsel.cpp: the backend=auto|cuda|cpu choice shared by the elements, and opening it
#include "gst/backendsel.h"

#include <cstdlib>
#include <string>

#include "common/h264enc/frame_recon.h"

#if GVC_CUDAMV_CUDA
#include "gpu/backend.h"
#include "gst/cudactx.h"
#endif

GType
gvc_backend_choice_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GVC_BACKEND_AUTO, "CUDA when a device is present, else the CPU", "auto"},
    {GVC_BACKEND_CUDA, "CUDA (fails to start without a device)", "cuda"},
    {GVC_BACKEND_CPU, "CPU reference implementation", "cpu"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GvcBackendChoice", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

namespace {

/* The test hook GVC_TEST_BACKEND_FAIL_AFTER (see backendsel.h): a backend that forwards to
 * another until it has made its quota of calls, then fails every call as a GPU that has
 * failed mid-stream would. Calls: kernel runs (motion search, block selection, intra
 * pruning, H.264 reconstruction), copies, synchronizations and allocations. */
struct FaultBudget {
  long left;

  gvc::Status take (const char *what) {
    if (left > 0) {
      left--;
      return gvc::Status ();
    }
    return gvc::Status::error (std::string ("injected backend failure in ") + what +
        " (test hook GVC_TEST_BACKEND_FAIL_AFTER)");
  }
};

class FaultyMotionSearch final : public gvc::MotionSearch {
 public:
  FaultyMotionSearch (std::unique_ptr<gvc::MotionSearch> inner,
      std::shared_ptr<FaultBudget> budget)
      : inner_ (std::move (inner)), budget_ (std::move (budget)) {}

  gvc::Status run (const gvc::PlaneView & cur, const gvc::PlaneView & ref,
      const gvc::MeParams & params, gvc::MbPartitionField & out) override {
    gvc::Status st = budget_->take ("the motion search");
    return st.ok () ? inner_->run (cur, ref, params, out) : st;
  }
  gvc::Status select_blocks (const gvc::MbPartitionField & parts,
      gvc::BlockSize size, gvc::MvBlockField & out) override {
    gvc::Status st = budget_->take ("the block selection");
    return st.ok () ? inner_->select_blocks (parts, size, out) : st;
  }

 private:
  std::unique_ptr<gvc::MotionSearch> inner_;
  std::shared_ptr<FaultBudget> budget_;
};

class FaultyIntraPrune final : public gvc::IntraPrune {
 public:
  FaultyIntraPrune (std::unique_ptr<gvc::IntraPrune> inner,
      std::shared_ptr<FaultBudget> budget)
      : inner_ (std::move (inner)), budget_ (std::move (budget)) {}

  gvc::Status run (const gvc::PlaneView & y, const gvc::PlaneView & u,
      const gvc::PlaneView & v, gvc::IntraPruneMethod method,
      gvc::IntraCandidateField & out) override {
    gvc::Status st = budget_->take ("the intra pruning");
    return st.ok () ? inner_->run (y, u, v, method, out) : st;
  }

 private:
  std::unique_ptr<gvc::IntraPrune> inner_;
  std::shared_ptr<FaultBudget> budget_;
};

class FaultyReconstructor final : public gvc::h264::FrameReconstructor {
 public:
  FaultyReconstructor (std::unique_ptr<gvc::h264::FrameReconstructor> inner,
      std::shared_ptr<FaultBudget> budget)
      : inner_ (std::move (inner)), budget_ (std::move (budget)) {}

  const char *name () const override { return inner_->name (); }
  gvc::Status decide (const gvc::h264::DecideJob & job) override {
    gvc::Status st = budget_->take ("the H.264 mode decision");
    return st.ok () ? inner_->decide (job) : st;
  }
  gvc::Status run (const gvc::h264::ReconJob & job) override {
    gvc::Status st = budget_->take ("the H.264 reconstruction");
    return st.ok () ? inner_->run (job) : st;
  }
  /* the rest goes through as it is: the inner reconstructor's contract (rows handed over
   * later, host copies completed by finish()) must hold through the wrapper */
  gvc::Status upload_source (const gvc::h264::Picture & src,
      gvc::PlaneView out[3]) override {
    return inner_->upload_source (src, out);
  }
  gvc::Status load_device_source (const gvc::h264::FrameIn & in, int width,
      int height, gvc::h264::Picture & src, gvc::PlaneView out[3]) override {
    return inner_->load_device_source (in, width, height, src, out);
  }
  gvc::PlaneView reference_luma (const gvc::h264::RefPicture & ref) override {
    return inner_->reference_luma (ref);
  }
  gvc::MbPartitions *motion_results (int r, int mb_count) override {
    return inner_->motion_results (r, mb_count);
  }
  gvc::Status start_intra_search (const gvc::h264::DecideJob & job) override {
    return inner_->start_intra_search (job);
  }
  double last_prepare_ms () const override { return inner_->last_prepare_ms (); }
  RunTimes last_run_times () const override { return inner_->last_run_times (); }
  gvc::Status wait_rows (int rows) override { return inner_->wait_rows (rows); }
  bool rows_later () const override { return inner_->rows_later (); }
  const gvc::h264::MbBitsView *mb_bits () const override { return inner_->mb_bits (); }
  gvc::Status finish () override { return inner_->finish (); }
  gvc::Status finish_for_analysis () override {
    return inner_->finish_for_analysis ();
  }
  const gvc::MvCost *me_predictors (int mb_width, int mb_height) override {
    return inner_->me_predictors (mb_width, mb_height);
  }
  bool pin_host_memory (void *p, size_t bytes) override {
    return inner_->pin_host_memory (p, bytes);
  }
  void unpin_host_memory (void *p) override { inner_->unpin_host_memory (p); }

 private:
  std::unique_ptr<gvc::h264::FrameReconstructor> inner_;
  std::shared_ptr<FaultBudget> budget_;
};

class FaultyBackend final : public gvc::Backend {
 public:
  FaultyBackend (std::unique_ptr<gvc::Backend> inner, long calls)
      : inner_ (std::move (inner)), budget_ (std::make_shared<FaultBudget> ()) {
    budget_->left = calls;
  }

  const char *name () const override { return inner_->name (); }
  gvc::MemoryLocation location () const override { return inner_->location (); }
  std::unique_ptr<gvc::MotionSearch> motion_search () override {
    auto inner = inner_->motion_search ();
    if (!inner)
      return nullptr;
    return std::make_unique<FaultyMotionSearch> (std::move (inner), budget_);
  }
  std::unique_ptr<gvc::IntraPrune> intra_prune () override {
    auto inner = inner_->intra_prune ();
    if (!inner)
      return nullptr;
    return std::make_unique<FaultyIntraPrune> (std::move (inner), budget_);
  }
  std::unique_ptr<gvc::h264::FrameReconstructor> h264_reconstructor () override {
    auto inner = inner_->h264_reconstructor ();
    if (!inner)
      return nullptr;
    return std::make_unique<FaultyReconstructor> (std::move (inner), budget_);
  }
  void *allocate (size_t bytes) override {
    return budget_->take ("an allocation").ok () ? inner_->allocate (bytes) : nullptr;
  }
  void release (void *p) override { inner_->release (p); }
  gvc::Status copy (void *dst, gvc::MemoryLocation dst_loc, const void *src,
      gvc::MemoryLocation src_loc, size_t bytes) override {
    gvc::Status st = budget_->take ("a copy");
    return st.ok () ? inner_->copy (dst, dst_loc, src, src_loc, bytes) : st;
  }
  gvc::Status synchronize () override {
    gvc::Status st = budget_->take ("a synchronization");
    return st.ok () ? inner_->synchronize () : st;
  }

 private:
  std::unique_ptr<gvc::Backend> inner_;
  std::shared_ptr<FaultBudget> budget_;
};

/* Wraps @backend in a FaultyBackend when the test hook asks for it. */
std::unique_ptr<gvc::Backend>
apply_test_hook (GstElement * element, std::unique_ptr<gvc::Backend> backend)
{
  const gchar *env = g_getenv ("GVC_TEST_BACKEND_FAIL_AFTER");
  gchar *end = NULL;
  gint64 calls;

  if (!backend || !env || !*env)
    return backend;
  calls = g_ascii_strtoll (env, &end, 10);
  if (*end || calls < 0) {
    GST_WARNING_OBJECT (element, "GVC_TEST_BACKEND_FAIL_AFTER=%s is not a count: "
        "ignored", env);
    return backend;
  }
  GST_WARNING_OBJECT (element, "test hook: the %s backend fails after %"
      G_GINT64_FORMAT " calls", backend->name (), calls);
  return std::make_unique<FaultyBackend> (std::move (backend),
      (long) MIN (calls, (gint64) G_MAXLONG));
}

}  // namespace

#if GVC_CUDAMV_CUDA
/* The CUDA backend in the pipeline's context, or nullptr and the reason in @why. */
static std::unique_ptr<gvc::Backend>
open_cuda (GstElement * element, gint device_id, GstCudaContext ** context,
    std::string & why)
{
  std::unique_ptr<gvc::Backend> backend;

  /* libgstcuda asserts when the driver library is missing: look for it first. */
  if (!gst_cuda_load_library ()) {
    why = "the CUDA driver library (libcuda.so.1) was not found";
    return nullptr;
  }
  if (!gst_cuda_ensure_element_context (element, device_id, context)) {
    why = device_id < 0 ? std::string ("no CUDA device or driver was found") :
        "CUDA device " + std::to_string (device_id) +
        " could not be opened (no such device, or no driver)";
    return nullptr;
  }
  {
    GvcCudaContextGuard guard (*context);
    gvc::Status status;

    if (!guard.ok ()) {
      why = "the CUDA context could not be made current";
    } else {
      backend = gvc::make_cuda_backend (gvc_cuda_context_device_id (*context),
          &status);
      if (!backend)
        why = status.message ();
    }
  }
  if (!backend)
    gst_clear_object (context);
  return backend;
}
#endif

static std::unique_ptr<gvc::Backend>
open_backend (GstElement * element, GvcBackendChoice choice,
    gint device_id, GstObject ** cuda_context)
{
  GstElementFactory *factory = gst_element_get_factory (element);
  const gchar *name = factory ?
      gst_plugin_feature_get_name (GST_PLUGIN_FEATURE (factory)) :
      GST_ELEMENT_NAME (element);
  std::unique_ptr<gvc::Backend> backend;
  std::string why;

  if (choice == GVC_BACKEND_CPU)
    return gvc::make_cpu_backend ();

#if GVC_CUDAMV_CUDA
  if (cuda_context)
    backend = open_cuda (element, device_id,
        reinterpret_cast < GstCudaContext ** >(cuda_context), why);
  else
    why = "the element has no CUDA context to share";
#else
  (void) device_id;
  (void) cuda_context;
  why = "this build has no CUDA support";
#endif

  if (backend)
    return backend;
  if (choice == GVC_BACKEND_CUDA) {
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
        ("%s cannot use CUDA (backend=cuda): %s.", name, why.c_str ()),
        ("Use backend=auto or backend=cpu to run on the CPU."));
    return nullptr;
  }
  GST_INFO_OBJECT (element, "No CUDA (%s): using the CPU backend", why.c_str ());
  g_message ("%s: no CUDA (%s), falling back to the CPU backend", name,
      why.c_str ());
  return gvc::make_cpu_backend ();
}

std::unique_ptr<gvc::Backend>
gvc_backend_open (GstElement * element, GvcBackendChoice choice,
    gint device_id, GstObject ** cuda_context)
{
  return apply_test_hook (element, open_backend (element, choice, device_id,
          cuda_context));
}
