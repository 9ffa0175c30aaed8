// cudactx.h: CUDA-context glue shared by the elements: a push/pop guard and plane copies
#pragma once

#include <gst/gst.h>
#include <gst/cuda/cuda-gst.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

#include <cstddef>

// Makes @context current on this thread for the guard's lifetime (gst_cuda_context_push/pop),
// so that runtime-API work of a backend lands in the context the pipeline shares.
class GvcCudaContextGuard {
 public:
  explicit GvcCudaContextGuard (GstCudaContext * context)
      : pushed_ (context && gst_cuda_context_push (context)) {}
  ~GvcCudaContextGuard () { if (pushed_) gst_cuda_context_pop (nullptr); }
  bool ok () const { return pushed_; }
  GvcCudaContextGuard (const GvcCudaContextGuard &) = delete;
  GvcCudaContextGuard & operator= (const GvcCudaContextGuard &) = delete;

 private:
  bool pushed_;
};

// Copies a @width_bytes x @height region between host or device memory ; waits
// for the copy. Needs a current context. Logs and returns FALSE on a CUDA error.
gboolean gvc_cuda_copy_2d (void *dst, gsize dst_pitch, gboolean dst_on_device,
    const void *src, gsize src_pitch, gboolean src_on_device, gsize width_bytes,
    gsize height);

// The device ordinal of @context.
gint gvc_cuda_context_device_id (GstCudaContext * context);
