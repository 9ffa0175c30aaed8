// cuda_probe.h: whether the element tests run where a CUDA device and driver are present
#pragma once

#if GVC_TEST_CUDA
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#endif

// True when GStreamer's CUDA library finds a driver and opens device 0 (the elements' auto
// backend then picks CUDA). Always false in builds without CUDA.
inline bool cuda_device_present() {
#if GVC_TEST_CUDA
  if (!gst_cuda_load_library()) return false;
  GstCudaContext* ctx = gst_cuda_context_new(0);
  if (!ctx) return false;
  gst_object_unref(ctx);
  return true;
#else
  return false;
#endif
}
