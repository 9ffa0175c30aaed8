// gvccudah264enc.h: the cudah264enc element: H.264 (Constrained Baseline, CAVLC) encoder
#pragma once

#include <gst/gst.h>
#include <gst/video/gstvideoencoder.h>

G_BEGIN_DECLS

#define GVC_TYPE_CUDA_H264_ENC (gvc_cuda_h264_enc_get_type ())
G_DECLARE_FINAL_TYPE (GvcCudaH264Enc, gvc_cuda_h264_enc, GVC, CUDA_H264_ENC,
    GstVideoEncoder)

typedef enum {
  GVC_H264_RC_CQP = 0,
  GVC_H264_RC_CBR = 1,
  GVC_H264_RC_VBR = 2,
} GvcH264RateControl;

typedef enum {
  GVC_H264_SPEED_FAST = 0,
  GVC_H264_SPEED_MEDIUM = 1,
  GVC_H264_SPEED_SLOW = 2,
} GvcH264SpeedPreset;

typedef enum {
  GVC_H264_TUNE_NONE = 0,
  GVC_H264_TUNE_ZEROLATENCY = 1,
} GvcH264Tune;

#define GVC_TYPE_H264_RATE_CONTROL (gvc_h264_rate_control_get_type ())
GType gvc_h264_rate_control_get_type (void);
#define GVC_TYPE_H264_SPEED_PRESET (gvc_h264_speed_preset_get_type ())
GType gvc_h264_speed_preset_get_type (void);
#define GVC_TYPE_H264_TUNE (gvc_h264_tune_get_type ())
GType gvc_h264_tune_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (cudah264enc);

G_END_DECLS
