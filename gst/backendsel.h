// backendsel.h: the backend=auto|cuda|cpu choice shared by the elements, and opening it
#pragma once

#include <gst/gst.h>

#include <memory>

#include "common/dsp/backend.h"

G_BEGIN_DECLS

typedef enum {
  GVC_BACKEND_AUTO = 0,
  GVC_BACKEND_CUDA = 1,
  GVC_BACKEND_CPU = 2,
} GvcBackendChoice;

#define GVC_TYPE_BACKEND_CHOICE (gvc_backend_choice_get_type ())
GType gvc_backend_choice_get_type (void);

G_END_DECLS

/* Opens the backend @element's `backend` property asks for. With auto or cuda it first
 * obtains the pipeline's CUDA context (gst_cuda_ensure_element_context, device @device_id,
 * -1 for any) into *@cuda_context, a `GstCudaContext *` field of the element, and creates
 * the CUDA backend inside it. auto falls back to the CPU with a log line; cuda posts a
 * GST_ELEMENT_ERROR that says why and returns nullptr. @cuda_context may be NULL in builds
 * without GStreamer's CUDA library.
 *
 * Test hook: with the environment variable GVC_TEST_BACKEND_FAIL_AFTER=N (a count) set when
 * the element starts, the backend's first N calls (kernel runs, copies, synchronizations,
 * allocations) succeed and every later one fails with a status, as a GPU that fails
 * mid-stream would; the element tests use it on the CPU to check that such a failure ends in
 * a GST_ELEMENT_ERROR. It is meant for tests only. */
std::unique_ptr<gvc::Backend> gvc_backend_open (GstElement * element,
    GvcBackendChoice choice, gint device_id, GstObject ** cuda_context);
