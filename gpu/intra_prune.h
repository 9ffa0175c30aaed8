// intra_prune.h (gpu): CUDA intra-mode pruning on device planes, asynchronous on a stream
//
// gpu/backend.cpp wraps this in gvc::IntraPrune (host/device staging, synchronisation); the
// benchmark and checkgpu call it directly with planes resident on the GPU.
#pragma once

#include <cuda_runtime_api.h>

#include "common/dsp/intra_prune.h"
#include "gpu/device.h"
#include "gpu/me.h"  // DevicePlane

namespace gvc {
namespace cuda {

// Candidates of every macroblock of the 4:2:0 picture (y, u, v), exactly as
// common/dsp/intra_prune.h defines them. `out`: device memory, mb_count(y.width) x
// mb_count(y.height) records. Shapes are not checked here (intra_prune_check_args does that).
// Asynchronous on `stream`.
Status intra_prune(const DevicePlane& y, const DevicePlane& u, const DevicePlane& v,
                   IntraPruneMethod method, IntraMbCandidates* out, cudaStream_t stream);

}  // namespace cuda
}  // namespace gvc
