// cudactx.cpp: CUDA-context glue shared by the elements (plane copies through libgstcuda)
#include "gst/cudactx.h"

GST_DEBUG_CATEGORY_EXTERN (gvc_cuda_ctx_debug);
#define GST_CAT_DEFAULT gvc_cuda_ctx_debug

gboolean
gvc_cuda_copy_2d (void *dst, gsize dst_pitch, gboolean dst_on_device,
    const void *src, gsize src_pitch, gboolean src_on_device, gsize width_bytes,
    gsize height)
{
  CUDA_MEMCPY2D p = { };

  if (src_on_device) {
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = (CUdeviceptr) src;
  } else {
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = src;
  }
  p.srcPitch = src_pitch;
  if (dst_on_device) {
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = (CUdeviceptr) dst;
  } else {
    p.dstMemoryType = CU_MEMORYTYPE_HOST;
    p.dstHost = dst;
  }
  p.dstPitch = dst_pitch;
  p.WidthInBytes = width_bytes;
  p.Height = height;

  return gst_cuda_result (CuMemcpy2D (&p));
}

gint
gvc_cuda_context_device_id (GstCudaContext * context)
{
  guint id = 0;

  g_object_get (context, "cuda-device-id", &id, NULL);
  return (gint) id;
}
