// backend.h (gpu): the CUDA backend: the kernels of gpu/ behind gvc::Backend
//
// No CUDA header is needed to use it. Link gvc_gpu_dep (built only when meson finds CUDA).
#pragma once

#include <memory>

#include "common/dsp/backend.h"
#include "common/util/status.h"

namespace gvc {

// The CUDA backend on device `device_id`, or nullptr with a readable reason in *why (when
// `why` is not null) when there is no usable device or driver. Never aborts: the CUDA runtime
// is linked statically and finds the driver at run time, so a machine without one only makes
// this return nullptr.
//
// Contexts: when the calling thread has a CUDA context current (GStreamer:
// gst_cuda_context_push), the backend uses that context as it is and never calls
// cudaSetDevice or cudaDeviceReset; `device_id` must then be that context's device (or -1,
// "the current context's device"). Every later call on the backend (run, allocate, copy,
// destruction) must then be made with that same context current, since its stream and memory
// belong to it. When no context is current, the backend selects `device_id` (its primary
// context) with cudaSetDevice at creation and at the start of each call.
//
// Views and fields given to its MotionSearch and IntraPrune may be in host or device memory
// (their `loc`); host inputs are uploaded, host outputs copied back. run() and select_blocks()
// return when the results are complete, in either memory.
std::unique_ptr<Backend> make_cuda_backend(int device_id, Status* why);

}  // namespace gvc
