// plugin.cpp: the gvc GStreamer plugin: registers cudamv (and, later, the codec elements)
#include "gvc-config.h"

#include <gst/gst.h>

#include "gst/cudah264enc/gvccudah264enc.h"
#include "gst/cudahevcdec/gvccudahevcdec.h"
#include "gst/cudamv/gvccudamv.h"

#if GVC_CUDAMV_CUDA
#include <gst/cuda/cuda-gst.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

GST_DEBUG_CATEGORY (gvc_cuda_ctx_debug);
#endif

static gboolean
plugin_init (GstPlugin * plugin)
{
#if GVC_CUDAMV_CUDA
  GST_DEBUG_CATEGORY_INIT (gvc_cuda_ctx_debug, "gvccudactx", 0,
      "gvc CUDA context glue");
  /* Registers GstCudaMemory's allocator; needs no driver. */
  gst_cuda_memory_init_once ();
#endif

  return GST_ELEMENT_REGISTER (cudamv, plugin) &&
      GST_ELEMENT_REGISTER (cudah264enc, plugin) &&
      GST_ELEMENT_REGISTER (cudahevcdec, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, gvc,
    "GPU video coding: CUDA motion estimation and codecs with CPU fallback",
    plugin_init, GVC_VERSION, "LGPL", GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
