// gvccudahevcdec.h: the cudahevcdec element: HEVC Main and Main10 decoder (CPU engine for now)
#pragma once

#include <gst/gst.h>
#include <gst/video/gstvideodecoder.h>

G_BEGIN_DECLS

#define GVC_TYPE_CUDA_HEVC_DEC (gvc_cuda_hevc_dec_get_type ())
G_DECLARE_FINAL_TYPE (GvcCudaHevcDec, gvc_cuda_hevc_dec, GVC, CUDA_HEVC_DEC,
    GstVideoDecoder)

GST_ELEMENT_REGISTER_DECLARE (cudahevcdec);

G_END_DECLS
