// gvccudah264enc.cpp: the cudah264enc element: H.264 (Constrained Baseline, CAVLC) encoder
/**
 * SECTION:element-cudah264enc
 * @title: cudah264enc
 *
 * Encodes NV12 or I420 video to H.264 Constrained Baseline (or Baseline, when
 * downstream asks for it) with CAVLC: IDR and P frames with 1 to 4 reference
 * frames, every P partition down to 4x4, intra 16x16/4x4, I_PCM, slices and
 * the in-loop deblocking filter. Motion search (and the optional edge-direction
 * intra pruning) runs on the GPU when a CUDA device is present, else on the
 * CPU; both give the same bitstream. Rate control is constant QP, CBR or VBR
 * with a VBV model; the bitrate may change while playing.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert ! \
 *     cudah264enc rate-control=cbr bitrate=1000 ! h264parse ! mp4mux ! \
 *     filesink location=out.mp4
 * ]| Encodes a clip to MP4 at 1 Mbit/s.
 * |[
 * gst-launch-1.0 videotestsrc is-live=true ! video/x-raw,width=640,height=480 ! \
 *     cudah264enc tune=zerolatency rate-control=cbr bitrate=2000 aud=true ! \
 *     rtph264pay ! udpsink host=127.0.0.1 port=5000
 * ]| A live stream over RTP.
 * |[
 * gst-launch-1.0 filesrc location=in.mkv ! matroskademux ! h265parse ! nvh265dec ! \
 *     cudah264enc qp=24 recon-location=recon.yuv ! filesink location=out.h264
 * ]| Transcodes from CUDA memory and writes the reconstruction as raw I420.
 */
#include "gst/cudah264enc/gvccudah264enc.h"

#include <gst/video/video.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/bitstream/nal.h"
#include "common/dsp/backend.h"
#include "common/h264enc/encoder.h"
#include "common/h264enc/ratecontrol.h"
#include "gst/backendsel.h"

#if GVC_CUDAMV_CUDA
#include <gst/cuda/cuda-gst.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

#include "gst/cudactx.h"
#endif

GST_DEBUG_CATEGORY_STATIC (gvc_cuda_h264_enc_debug);
#define GST_CAT_DEFAULT gvc_cuda_h264_enc_debug

enum {
  PROP_0,
  PROP_RATE_CONTROL,
  PROP_QP,
  PROP_IP_FACTOR,
  PROP_BITRATE,
  PROP_MAX_BITRATE,
  PROP_VBV_BUFFER_SIZE,
  PROP_KEY_INT_MAX,
  PROP_REF_FRAMES,
  PROP_SLICES,
  PROP_AUD,
  PROP_SPEED_PRESET,
  PROP_INTRA_PRUNING,
  PROP_TUNE,
  PROP_RECON_LOCATION,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_ACTIVE_BACKEND,
};

#define DEFAULT_RATE_CONTROL GVC_H264_RC_CQP
#define DEFAULT_QP 26
#define DEFAULT_IP_FACTOR 1.4
#define DEFAULT_BITRATE 2048
#define DEFAULT_MAX_BITRATE 0
#define DEFAULT_VBV_BUFFER_SIZE 1000
#define DEFAULT_KEY_INT_MAX 250
#define DEFAULT_REF_FRAMES 1
#define DEFAULT_SLICES 1
#define DEFAULT_AUD FALSE
#define DEFAULT_SPEED_PRESET GVC_H264_SPEED_MEDIUM
#define DEFAULT_INTRA_PRUNING GVC_H264_INTRA_PRUNING_NONE
#define DEFAULT_TUNE GVC_H264_TUNE_NONE
#define DEFAULT_BACKEND GVC_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1

typedef enum {
  GVC_H264_INTRA_PRUNING_NONE = 0,
  GVC_H264_INTRA_PRUNING_KIRSCH = 1,
  GVC_H264_INTRA_PRUNING_SOBEL = 2,
} GvcH264IntraPruning;

#define GVC_TYPE_H264_INTRA_PRUNING (gvc_h264_intra_pruning_get_type ())
static GType gvc_h264_intra_pruning_get_type (void);

#define SYSMEM_CAPS GST_VIDEO_CAPS_MAKE ("{ NV12, I420 }")
#if GVC_CUDAMV_CUDA
#define SINK_CAPS \
    GST_VIDEO_CAPS_MAKE_WITH_FEATURES (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, \
        "{ NV12, I420 }") "; " SYSMEM_CAPS
#else
#define SINK_CAPS SYSMEM_CAPS
#endif
#define SRC_CAPS "video/x-h264, stream-format = (string) { byte-stream, avc }, " \
    "alignment = (string) au, " \
    "profile = (string) { constrained-baseline, baseline }"

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (SINK_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (SRC_CAPS));

namespace {

// Everything the streaming thread owns between start() and stop(). The encoder holds a
// pointer to the backend, so it is declared after it (destroyed first).
struct Engine {
  std::unique_ptr<gvc::Backend> backend;
  gvc::h264::Encoder encoder;
  gvc::h264::RateControl rc;
  bool configured = false;
  // An engine or backend call failed (an element error was posted): the engine's state is
  // unknown, so no frame is coded until the next set_format re-initialises it.
  bool failed = false;
  bool avc = false;             // stream-format=avc: 4-byte lengths instead of start codes
  bool force_idr = false;       // after a flush
  int rc_bitrate = 0, rc_max_bitrate = 0;   // what the rate control runs at
  int qp = 0;                   // the QP of the last frame coded
  GstVideoInfo info;            // the input, as negotiated
  std::vector<uint8_t> chroma;  // NV12 input: the deinterleaved Cb and Cr planes
  std::vector<uint8_t> recon;
  FILE *recon_file = nullptr;
  std::string recon_path;

  ~Engine () {
    if (recon_file)
      fclose (recon_file);
  }
};

}  // namespace

struct _GvcCudaH264Enc {
  GstVideoEncoder parent;

  /* properties, under the object lock */
  GvcH264RateControl rate_control;
  gint qp;
  gdouble ip_factor;
  guint bitrate;
  guint max_bitrate;
  guint vbv_buffer_size;
  guint key_int_max;
  gint ref_frames;
  gint slices;
  gboolean aud;
  GvcH264SpeedPreset speed_preset;
  GvcH264IntraPruning intra_pruning;
  GvcH264Tune tune;
  gchar *recon_location;
  GvcBackendChoice backend;
  gint device_id;
  gchar *active_backend;

  /* streaming state */
  Engine *engine;
#if GVC_CUDAMV_CUDA
  GstCudaContext *context;
#endif
};

#define gvc_cuda_h264_enc_parent_class parent_class
G_DEFINE_TYPE (GvcCudaH264Enc, gvc_cuda_h264_enc, GST_TYPE_VIDEO_ENCODER);
GST_ELEMENT_REGISTER_DEFINE (cudah264enc, "cudah264enc", GST_RANK_NONE,
    GVC_TYPE_CUDA_H264_ENC);

GType
gvc_h264_rate_control_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GVC_H264_RC_CQP, "Constant QP (the qp property)", "cqp"},
    {GVC_H264_RC_CBR, "Constant bitrate", "cbr"},
    {GVC_H264_RC_VBR, "Variable bitrate, capped by max-bitrate", "vbr"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GvcH264RateControl", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gvc_h264_speed_preset_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GVC_H264_SPEED_FAST,
        "Search range 8, 16x16, 16x8 and 8x16 (the shape the motion search "
        "prefers), no re-refinement", "fast"},
    {GVC_H264_SPEED_MEDIUM,
        "Search range 16, every partition down to 4x4 (the shape the motion "
        "search prefers), re-refinement", "medium"},
    {GVC_H264_SPEED_SLOW,
        "Search range 32, every partition down to 4x4, every shape re-costed, "
        "re-refinement", "slow"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GvcH264SpeedPreset", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gvc_h264_tune_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GVC_H264_TUNE_NONE, "No tuning", "none"},
    {GVC_H264_TUNE_ZEROLATENCY,
        "Zero latency: every frame is pushed before the next is accepted",
        "zerolatency"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GvcH264Tune", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GType
gvc_h264_intra_pruning_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GVC_H264_INTRA_PRUNING_NONE, "Full intra mode search", "none"},
    {GVC_H264_INTRA_PRUNING_KIRSCH,
        "Kirsch edge directions: 4 of 9 4x4 modes, 2 of 4 16x16/chroma modes",
        "kirsch"},
    {GVC_H264_INTRA_PRUNING_SOBEL, "Sobel edge directions (Pan et al.)",
        "sobel"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GvcH264IntraPruning", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static void
gvc_cuda_h264_enc_set_active_backend (GvcCudaH264Enc * self,
    const gchar * name)
{
  GST_OBJECT_LOCK (self);
  g_free (self->active_backend);
  self->active_backend = g_strdup (name);
  GST_OBJECT_UNLOCK (self);
}

static void
gvc_cuda_h264_enc_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_RATE_CONTROL:
      self->rate_control = (GvcH264RateControl) g_value_get_enum (value);
      break;
    case PROP_QP:
      self->qp = g_value_get_int (value);
      break;
    case PROP_IP_FACTOR:
      self->ip_factor = g_value_get_double (value);
      break;
    case PROP_BITRATE:
      self->bitrate = g_value_get_uint (value);
      break;
    case PROP_MAX_BITRATE:
      self->max_bitrate = g_value_get_uint (value);
      break;
    case PROP_VBV_BUFFER_SIZE:
      self->vbv_buffer_size = g_value_get_uint (value);
      break;
    case PROP_KEY_INT_MAX:
      self->key_int_max = g_value_get_uint (value);
      break;
    case PROP_REF_FRAMES:
      self->ref_frames = g_value_get_int (value);
      break;
    case PROP_SLICES:
      self->slices = g_value_get_int (value);
      break;
    case PROP_AUD:
      self->aud = g_value_get_boolean (value);
      break;
    case PROP_SPEED_PRESET:
      self->speed_preset = (GvcH264SpeedPreset) g_value_get_enum (value);
      break;
    case PROP_INTRA_PRUNING:
      self->intra_pruning = (GvcH264IntraPruning) g_value_get_enum (value);
      break;
    case PROP_TUNE:
      self->tune = (GvcH264Tune) g_value_get_enum (value);
      break;
    case PROP_RECON_LOCATION:
      g_free (self->recon_location);
      self->recon_location = g_value_dup_string (value);
      break;
    case PROP_BACKEND:
      self->backend = (GvcBackendChoice) g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      self->device_id = g_value_get_int (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gvc_cuda_h264_enc_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_RATE_CONTROL:
      g_value_set_enum (value, self->rate_control);
      break;
    case PROP_QP:
      g_value_set_int (value, self->qp);
      break;
    case PROP_IP_FACTOR:
      g_value_set_double (value, self->ip_factor);
      break;
    case PROP_BITRATE:
      g_value_set_uint (value, self->bitrate);
      break;
    case PROP_MAX_BITRATE:
      g_value_set_uint (value, self->max_bitrate);
      break;
    case PROP_VBV_BUFFER_SIZE:
      g_value_set_uint (value, self->vbv_buffer_size);
      break;
    case PROP_KEY_INT_MAX:
      g_value_set_uint (value, self->key_int_max);
      break;
    case PROP_REF_FRAMES:
      g_value_set_int (value, self->ref_frames);
      break;
    case PROP_SLICES:
      g_value_set_int (value, self->slices);
      break;
    case PROP_AUD:
      g_value_set_boolean (value, self->aud);
      break;
    case PROP_SPEED_PRESET:
      g_value_set_enum (value, self->speed_preset);
      break;
    case PROP_INTRA_PRUNING:
      g_value_set_enum (value, self->intra_pruning);
      break;
    case PROP_TUNE:
      g_value_set_enum (value, self->tune);
      break;
    case PROP_RECON_LOCATION:
      g_value_set_string (value, self->recon_location);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, self->backend);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->device_id);
      break;
    case PROP_ACTIVE_BACKEND:
      g_value_set_string (value, self->active_backend);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gvc_cuda_h264_enc_finalize (GObject * object)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (object);

  g_free (self->recon_location);
  g_free (self->active_backend);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

#if GVC_CUDAMV_CUDA
static void
gvc_cuda_h264_enc_set_context (GstElement * element, GstContext * context)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (element);
  gint device_id;

  GST_OBJECT_LOCK (self);
  device_id = self->device_id;
  GST_OBJECT_UNLOCK (self);

  gst_cuda_handle_set_context (element, context, device_id, &self->context);

  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}
#endif

static gboolean
gvc_cuda_h264_enc_handle_context_query (GvcCudaH264Enc * self,
    GstQuery * query)
{
#if GVC_CUDAMV_CUDA
  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT &&
      gst_cuda_handle_context_query (GST_ELEMENT (self), query, self->context))
    return TRUE;
#else
  (void) self;
  (void) query;
#endif
  return FALSE;
}

static gboolean
gvc_cuda_h264_enc_sink_query (GstVideoEncoder * enc, GstQuery * query)
{
  if (gvc_cuda_h264_enc_handle_context_query (GVC_CUDA_H264_ENC (enc), query))
    return TRUE;
  return GST_VIDEO_ENCODER_CLASS (parent_class)->sink_query (enc, query);
}

static gboolean
gvc_cuda_h264_enc_src_query (GstVideoEncoder * enc, GstQuery * query)
{
  if (gvc_cuda_h264_enc_handle_context_query (GVC_CUDA_H264_ENC (enc), query))
    return TRUE;
  return GST_VIDEO_ENCODER_CLASS (parent_class)->src_query (enc, query);
}

/* Picks and creates the backend, as cudamv does: the CUDA backend needs a GstCudaContext,
 * shared with the rest of the pipeline through GstContext when one exists. */
static gboolean
gvc_cuda_h264_enc_start (GstVideoEncoder * enc)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (enc);
  GvcBackendChoice choice;
  gint device_id;
  std::unique_ptr<gvc::Backend> backend;

  GST_OBJECT_LOCK (self);
  choice = self->backend;
  device_id = self->device_id;
  GST_OBJECT_UNLOCK (self);

#if GVC_CUDAMV_CUDA
  backend = gvc_backend_open (GST_ELEMENT (self), choice, device_id,
      reinterpret_cast < GstObject ** >(&self->context));
#else
  backend = gvc_backend_open (GST_ELEMENT (self), choice, device_id, NULL);
#endif
  if (!backend)
    return FALSE;

  self->engine = new Engine ();
  self->engine->backend = std::move (backend);
  gvc_cuda_h264_enc_set_active_backend (self, self->engine->backend->name ());
  GST_INFO_OBJECT (self, "Using the %s backend",
      self->engine->backend->name ());

  return TRUE;
}

static gboolean
gvc_cuda_h264_enc_stop (GstVideoEncoder * enc)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (enc);

  if (self->engine) {
#if GVC_CUDAMV_CUDA
    GvcCudaContextGuard guard (self->context);
#endif
    delete self->engine;
    self->engine = nullptr;
  }
#if GVC_CUDAMV_CUDA
  gst_clear_object (&self->context);
#endif
  gvc_cuda_h264_enc_set_active_backend (self, "none");

  return TRUE;
}

/* "3.1" for level_idc 31 (Table A-1; level 1b is never chosen). */
static std::string
level_string (int level_idc)
{
  std::string s = std::to_string (level_idc / 10);
  if (level_idc % 10)
    s += "." + std::to_string (level_idc % 10);
  return s;
}

/* Picks stream-format and profile from what downstream accepts: byte-stream before avc,
 * constrained-baseline before baseline. FALSE when downstream takes neither profile. */
static gboolean
gvc_cuda_h264_enc_choose_output (GvcCudaH264Enc * self, gboolean * avc,
    gboolean * constrained)
{
  GstCaps *allowed = gst_pad_get_allowed_caps (GST_VIDEO_ENCODER_SRC_PAD (self));
  gboolean found = FALSE;

  if (!allowed || gst_caps_is_any (allowed)) {
    *avc = FALSE;
    *constrained = TRUE;
    found = TRUE;
  }
  for (int f = 0; f < 2 && !found; f++) {
    for (int p = 0; p < 2 && !found; p++) {
      GstCaps *want = gst_caps_new_simple ("video/x-h264",
          "stream-format", G_TYPE_STRING, f ? "avc" : "byte-stream",
          "alignment", G_TYPE_STRING, "au",
          "profile", G_TYPE_STRING, p ? "baseline" : "constrained-baseline",
          NULL);
      if (gst_caps_can_intersect (allowed, want)) {
        *avc = f == 1;
        *constrained = p == 0;
        found = TRUE;
      }
      gst_caps_unref (want);
    }
  }
  if (!found)
    GST_DEBUG_OBJECT (self, "downstream allows %" GST_PTR_FORMAT, allowed);
  if (allowed)
    gst_caps_unref (allowed);
  return found;
}

/* The AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.2.4.1) for stream-format=avc. */
static GstBuffer *
make_codec_data (const std::vector<uint8_t> &sps, const std::vector<uint8_t> &pps)
{
  std::vector<uint8_t> c;

  c.push_back (1);              /* configurationVersion */
  c.push_back (sps[1]);         /* AVCProfileIndication */
  c.push_back (sps[2]);         /* profile_compatibility */
  c.push_back (sps[3]);         /* AVCLevelIndication */
  c.push_back (0xff);           /* lengthSizeMinusOne = 3 */
  c.push_back (0xe1);           /* one SPS */
  c.push_back (uint8_t (sps.size () >> 8));
  c.push_back (uint8_t (sps.size ()));
  c.insert (c.end (), sps.begin (), sps.end ());
  c.push_back (1);              /* one PPS */
  c.push_back (uint8_t (pps.size () >> 8));
  c.push_back (uint8_t (pps.size ()));
  c.insert (c.end (), pps.begin (), pps.end ());
  return gst_buffer_new_memdup (c.data (), c.size ());
}

/* Maps the properties onto the engine's parameters. Called with the object lock held. */
static void
fill_params (GvcCudaH264Enc * self, gvc::h264::EncoderParams & p)
{
  p.rc.qp = self->qp;
  p.ref_frames = self->ref_frames;
  p.slices = self->slices;
  p.keyint_max = (int) MIN (self->key_int_max, (guint) G_MAXINT);
  p.aud = self->aud;
  switch (self->speed_preset) {
    case GVC_H264_SPEED_FAST:
      gvc::h264::apply_speed_preset (gvc::h264::SpeedPreset::Fast, p);
      break;
    case GVC_H264_SPEED_MEDIUM:
      gvc::h264::apply_speed_preset (gvc::h264::SpeedPreset::Medium, p);
      break;
    case GVC_H264_SPEED_SLOW:
      gvc::h264::apply_speed_preset (gvc::h264::SpeedPreset::Slow, p);
      break;
  }
  switch (self->intra_pruning) {
    case GVC_H264_INTRA_PRUNING_KIRSCH:
      p.analyse.intra_prune = gvc::IntraPruneMethod::Kirsch;
      break;
    case GVC_H264_INTRA_PRUNING_SOBEL:
      p.analyse.intra_prune = gvc::IntraPruneMethod::Sobel;
      break;
    default:
      p.analyse.intra_prune = gvc::IntraPruneMethod::None;
      break;
  }
}

static GstFlowReturn gvc_cuda_h264_enc_push_held (GvcCudaH264Enc * self);

static gboolean
gvc_cuda_h264_enc_set_format (GstVideoEncoder * enc, GstVideoCodecState * state)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (enc);
  Engine *e = self->engine;
  const GstVideoInfo *info = &state->info;
  const gint width = GST_VIDEO_INFO_WIDTH (info);
  const gint height = GST_VIDEO_INFO_HEIGHT (info);
  GstVideoFormat format = GST_VIDEO_INFO_FORMAT (info);
  gvc::h264::EncoderParams params;
  gvc::h264::RateControlParams rcp;
  gboolean avc, constrained;

  if (!e)
    return FALSE;
  if (format != GST_VIDEO_FORMAT_NV12 && format != GST_VIDEO_FORMAT_I420) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("cudah264enc accepts NV12 or I420 video only, not %s.",
            gst_video_format_to_string (format)), (NULL));
    return FALSE;
  }
  if (GST_VIDEO_INFO_IS_INTERLACED (info)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("cudah264enc encodes progressive video only, not %s video.",
            gst_video_interlace_mode_to_string (GST_VIDEO_INFO_INTERLACE_MODE
                (info))), ("Deinterlace first (deinterlace)."));
    return FALSE;
  }
  if (width % 2 || height % 2) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("cudah264enc cannot encode %dx%d video: 4:2:0 H.264 needs an even "
            "width and height.", width, height),
            ("Scale or crop to an even size first (videoscale, videocrop)."));
    return FALSE;
  }
  if (width < 16 || height < 16 || width > 4096 || height > 4096) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("cudah264enc cannot encode %dx%d video: the size must be between "
            "16x16 and 4096x4096.", width, height), (NULL));
    return FALSE;
  }
  if (!gvc_cuda_h264_enc_choose_output (self, &avc, &constrained)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Downstream accepts no H.264 that cudah264enc produces: it makes "
            "the constrained-baseline or baseline profile, stream-format "
            "byte-stream or avc, alignment=au."), (NULL));
    return FALSE;
  }

  GST_OBJECT_LOCK (self);
  fill_params (self, params);
  rcp.mode = self->rate_control == GVC_H264_RC_CBR ? gvc::h264::RcMode::Cbr :
      self->rate_control == GVC_H264_RC_VBR ? gvc::h264::RcMode::Vbr :
      gvc::h264::RcMode::Cqp;
  rcp.qp = self->qp;
  rcp.ip_factor = self->ip_factor;
  rcp.bitrate_kbps = (int) self->bitrate;
  rcp.max_bitrate_kbps = (int) self->max_bitrate;
  rcp.vbv_buffer_ms = (int) self->vbv_buffer_size;
  GST_OBJECT_UNLOCK (self);

  params.width = width;
  params.height = height;
  params.constrained = constrained;
  if (GST_VIDEO_INFO_FPS_N (info) > 0 && GST_VIDEO_INFO_FPS_D (info) > 0)
    params.fps = (double) GST_VIDEO_INFO_FPS_N (info) /
        GST_VIDEO_INFO_FPS_D (info);
  /* A rough clamp keeps many macroblocks per slice; the engine needs at least one. */
  params.slices = MIN (params.slices,
      ((width + 15) / 16) * ((height + 15) / 16));
  rcp.fps = params.fps;
  if (rcp.mode != gvc::h264::RcMode::Cqp) {
    /* The first frame's QP: about what 0.1 bit per pixel takes on ordinary content. */
    double bpp = rcp.bitrate_kbps * 1000.0 / (rcp.fps * width * height);
    rcp.qp = CLAMP ((int) (30 - 6 * std::log2 (bpp / 0.1)), 12, 46);
    params.rc.qp = rcp.qp;
  }

  /* The frame the pipeline still holds goes out first, under the caps it was coded for
   * (downstream's flow return is for the next frames to see). */
  if (e->configured) {
    GstFlowReturn held = gvc_cuda_h264_enc_push_held (self);
    if (held != GST_FLOW_OK)
      GST_DEBUG_OBJECT (self, "held frame pushed: %s", gst_flow_get_name (held));
  }
  GST_OBJECT_LOCK (self);
  const bool pipelined = self->tune != GVC_H264_TUNE_ZEROLATENCY;
  GST_OBJECT_UNLOCK (self);
  {
#if GVC_CUDAMV_CUDA
    GvcCudaContextGuard guard (self->context);
#endif
    /* A new size starts afresh: init() makes the next frame an IDR with new SPS/PPS. */
    gvc::Status st = e->encoder.init (params, e->backend.get ());
    if (st.ok ())
      st = e->encoder.set_pipelined (pipelined);
    /* the CPU times in the LOG lines cost a sum over the process's threads per stage */
    e->encoder.set_cpu_times (gst_debug_category_get_threshold (GST_CAT_DEFAULT) >=
        GST_LEVEL_LOG);
    if (!st.ok ()) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("cudah264enc cannot encode this stream: %s.", st.message ().c_str ()),
          (NULL));
      e->configured = false;
      return FALSE;
    }
  }
  e->rc.init (rcp);
  e->rc_bitrate = rcp.bitrate_kbps;
  e->rc_max_bitrate = rcp.max_bitrate_kbps;
  e->qp = params.rc.qp;
  e->avc = avc;
  e->info = *info;
  e->force_idr = false;
  e->failed = false;
  e->configured = true;

  GstCaps *caps = gst_caps_new_simple ("video/x-h264",
      "stream-format", G_TYPE_STRING, avc ? "avc" : "byte-stream",
      "alignment", G_TYPE_STRING, "au",
      "profile", G_TYPE_STRING, constrained ? "constrained-baseline" :
      "baseline",
      "level", G_TYPE_STRING, level_string (e->encoder.level_idc ()).c_str (),
      NULL);
  GstVideoCodecState *out = gst_video_encoder_set_output_state (enc, caps,
      state);
  if (avc) {
    std::vector<uint8_t> sps, pps;
    e->encoder.parameter_sets (sps, pps);
    out->codec_data = make_codec_data (sps, pps);
  }
  gst_video_codec_state_unref (out);

  /* tune=zerolatency: every frame is coded and pushed within its handle_frame. Otherwise
   * the frame-level pipeline holds one frame: its slices are coded while the next frame is
   * analysed, and it is pushed by the next handle_frame (or at EOS). */
  GstClockTime latency = 0;
  if (pipelined && GST_VIDEO_INFO_FPS_N (info) > 0)
    latency = gst_util_uint64_scale (GST_SECOND, GST_VIDEO_INFO_FPS_D (info),
        GST_VIDEO_INFO_FPS_N (info));
  gst_video_encoder_set_latency (enc, latency, latency);

  return gst_video_encoder_negotiate (enc);
}

static gboolean
gvc_cuda_h264_enc_propose_allocation (GstVideoEncoder * enc, GstQuery * query)
{
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  return GST_VIDEO_ENCODER_CLASS (parent_class)->propose_allocation (enc,
      query);
}

/* Writes the reconstruction of the last frame to recon-location, opening (truncating) the
 * file at the first frame after start or when the location changed. */
static gboolean
gvc_cuda_h264_enc_write_recon (GvcCudaH264Enc * self)
{
  Engine *e = self->engine;
  gchar *location;

  GST_OBJECT_LOCK (self);
  location = g_strdup (self->recon_location);
  GST_OBJECT_UNLOCK (self);

  if (!location || !*location) {
    g_free (location);
    return TRUE;
  }
  if (!e->recon_file || e->recon_path != location) {
    if (e->recon_file)
      fclose (e->recon_file);
    e->recon_path = location;
    e->recon_file = fopen (location, "wb");
    if (!e->recon_file) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
          ("Could not open the reconstruction file \"%s\" for writing: %s.",
              location, g_strerror (errno)), (NULL));
      g_free (location);
      return FALSE;
    }
  }
  g_free (location);
  {
#if GVC_CUDAMV_CUDA
    GvcCudaContextGuard guard (self->context);  /* the reconstruction may still be on the GPU */
#endif
    e->encoder.recon_i420 (e->recon);
  }
  if (fwrite (e->recon.data (), 1, e->recon.size (), e->recon_file) !=
      e->recon.size () || fflush (e->recon_file) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not write the reconstruction to \"%s\": %s.",
            e->recon_path.c_str (), g_strerror (errno)), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* One access unit as a buffer: Annex-B as it is, or for avc each NAL unit behind its
 * 4-byte big-endian length. */
static GstBuffer *
make_output (const std::vector<uint8_t> &annexb, bool avc)
{
  if (!avc)
    return gst_buffer_new_memdup (annexb.data (), annexb.size ());

  std::vector<uint8_t> out;
  out.reserve (annexb.size ());
  for (const auto & nal : gvc::split_annexb (annexb.data (), annexb.size ())) {
    const uint32_t n = (uint32_t) nal.size ();
    const uint8_t len[4] = { uint8_t (n >> 24), uint8_t (n >> 16),
      uint8_t (n >> 8), uint8_t (n) };
    out.insert (out.end (), len, len + 4);
    out.insert (out.end (), nal.begin (), nal.end ());
  }
  return gst_buffer_new_memdup (out.data (), out.size ());
}

/* Finishes the oldest frame still pending in the base class with the access unit `out`
 * (its frame: the pipeline gives them in order), accounting for its size in the rate
 * control. */
static GstFlowReturn
gvc_cuda_h264_enc_finish_oldest (GvcCudaH264Enc * self,
    const gvc::h264::EncodedFrame & out)
{
  GstVideoEncoder *enc = GST_VIDEO_ENCODER (self);
  Engine *e = self->engine;

  e->rc.update (out.idr, out.qp, (int64_t) out.annexb.size () * 8);  /* cqp: nothing */
  GstVideoCodecFrame *frame = gst_video_encoder_get_oldest_frame (enc);
  if (!frame) {
    GST_WARNING_OBJECT (self, "An access unit without a frame: dropped");
    return GST_FLOW_OK;
  }
  GST_LOG_OBJECT (self, "frame %u: %s qp %d, %zu bytes; ms: wait %.2f, analysis %.2f, "
      "decision %.2f, reconstruction %.2f, entropy %.2f; core-ms: decision %.2f, "
      "entropy %.2f", frame->system_frame_number, out.idr ? "IDR" : "P", out.qp,
      out.annexb.size (), out.times.wait, out.times.analysis,
      out.times.decision, out.times.recon, out.times.entropy,
      out.times.cpu.decision, out.times.cpu.entropy);
  frame->output_buffer = make_output (out.annexb, e->avc);
  if (out.idr)
    GST_VIDEO_CODEC_FRAME_SET_SYNC_POINT (frame);
  else
    GST_VIDEO_CODEC_FRAME_UNSET_SYNC_POINT (frame);
  return gst_video_encoder_finish_frame (enc, frame);  /* takes get_oldest_frame's reference */
}

/* The encoder's drain() with the CUDA context pushed: the last frame's macroblocks may
 * still be on the GPU. */
static gvc::Status
gvc_cuda_h264_enc_drain (GvcCudaH264Enc * self, gvc::h264::EncodedFrame & out)
{
#if GVC_CUDAMV_CUDA
  GvcCudaContextGuard guard (self->context);
#endif
  return self->engine->encoder.drain (out);
}

/* Pushes the access unit the pipeline holds, if any (EOS, new caps). */
static GstFlowReturn
gvc_cuda_h264_enc_push_held (GvcCudaH264Enc * self)
{
  Engine *e = self->engine;
  gvc::h264::EncodedFrame out;

  if (!e || !e->configured || e->failed)
    return GST_FLOW_OK;
  const gvc::Status st = gvc_cuda_h264_enc_drain (self, out);
  if (!st.ok ()) {
    GST_ELEMENT_ERROR (self, LIBRARY, ENCODE,
        ("Encoding the last frame failed: %s.", st.message ().c_str ()),
        ("%s backend", e->backend->name ()));
    e->failed = true;
    return GST_FLOW_ERROR;
  }
  return out.present ? gvc_cuda_h264_enc_finish_oldest (self, out) : GST_FLOW_OK;
}

static GstFlowReturn
gvc_cuda_h264_enc_handle_frame (GstVideoEncoder * enc,
    GstVideoCodecFrame * frame)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (enc);
  Engine *e = self->engine;
  GstVideoFrame vframe;
  gvc::h264::FrameIn in;
  gvc::h264::EncodedFrame out;
  gboolean cqp;
  gint qp, bitrate, max_bitrate;
  gvc::Status st;

  if (!e || !e->configured) {
    gst_video_encoder_finish_frame (enc, frame);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (e->failed) {
    /* The error was posted when the engine failed. */
    gst_video_encoder_finish_frame (enc, frame);
    return GST_FLOW_ERROR;
  }

  GST_OBJECT_LOCK (self);
  cqp = self->rate_control == GVC_H264_RC_CQP;
  qp = self->qp;
  bitrate = (gint) self->bitrate;
  max_bitrate = (gint) self->max_bitrate;
  GST_OBJECT_UNLOCK (self);

  /* Bitrate changes (while playing) count from this frame on. */
  if (!cqp && (bitrate != e->rc_bitrate || max_bitrate != e->rc_max_bitrate)) {
    GST_INFO_OBJECT (self, "bitrate %d -> %d kbit/s", e->rc_bitrate, bitrate);
    e->rc.set_bitrate (bitrate, max_bitrate);
    e->rc_bitrate = bitrate;
    e->rc_max_bitrate = max_bitrate;
  }

  /* CUDA memory of this element's context goes to the engine as it is when the engine runs
   * on that GPU (nothing downloaded); any other memory is mapped on the host. */
  bool on_device = false;
  GstMapFlags map_flags = GST_MAP_READ;
  GstVideoInfo map_info = e->info;
#if GVC_CUDAMV_CUDA
  {
    GstMemory *mem = gst_buffer_n_memory (frame->input_buffer) == 1 ?
        gst_buffer_peek_memory (frame->input_buffer, 0) : NULL;
    on_device = self->context && mem && gst_is_cuda_memory (mem)
        && GST_CUDA_MEMORY_CAST (mem)->context == self->context
        && e->backend->location () == gvc::MemoryLocation::Device;
    if (on_device)
      map_flags = (GstMapFlags) (GST_MAP_READ | GST_MAP_CUDA);
    /* GstCudaMemory carries its own layout (pitched planes): without a GstVideoMeta on the
     * buffer, the caps' default strides would read it sheared. */
    if (mem && gst_is_cuda_memory (mem)
        && !gst_buffer_get_video_meta (frame->input_buffer)) {
      const GstVideoInfo *own = &GST_CUDA_MEMORY_CAST (mem)->info;
      /* (a memory allocated larger than the caps' frame, e.g. 1088 rows for 1080, holds it
       * at its top left) */
      if (GST_VIDEO_INFO_FORMAT (own) != GST_VIDEO_INFO_FORMAT (&map_info)
          || GST_VIDEO_INFO_WIDTH (own) < GST_VIDEO_INFO_WIDTH (&map_info)
          || GST_VIDEO_INFO_HEIGHT (own) < GST_VIDEO_INFO_HEIGHT (&map_info)) {
        GST_WARNING_OBJECT (self, "CUDA memory of a %s %dx%d layout for %s %dx%d caps "
            "and no video meta: read with the caps' default layout",
            gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (own)),
            GST_VIDEO_INFO_WIDTH (own), GST_VIDEO_INFO_HEIGHT (own),
            gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&map_info)),
            GST_VIDEO_INFO_WIDTH (&map_info), GST_VIDEO_INFO_HEIGHT (&map_info));
      } else {
        for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES (own); p++) {
          GST_VIDEO_INFO_PLANE_STRIDE (&map_info, p) =
              GST_VIDEO_INFO_PLANE_STRIDE (own, p);
          GST_VIDEO_INFO_PLANE_OFFSET (&map_info, p) =
              GST_VIDEO_INFO_PLANE_OFFSET (own, p);
        }
        GST_VIDEO_INFO_SIZE (&map_info) = GST_VIDEO_INFO_SIZE (own);
      }
    }
  }
#endif
  if (!gst_video_frame_map (&vframe, &map_info, frame->input_buffer, map_flags)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not map the input frame for reading."), (NULL));
    gst_video_encoder_finish_frame (enc, frame);
    return GST_FLOW_ERROR;
  }
  in.plane[0] = (const uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (&vframe, 0);
  in.stride[0] = GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, 0);
  GST_LOG_OBJECT (self, "frame %u: %s memory, %s, strides %d %d, plane 1 at +%td",
      frame->system_frame_number, on_device ? "CUDA" : "system",
      gst_video_format_to_string (GST_VIDEO_FRAME_FORMAT (&vframe)),
      GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, 0),
      GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, 1),
      (const uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (&vframe, 1) - in.plane[0]);
  if (on_device) {
    in.loc = gvc::MemoryLocation::Device;
    in.nv12 = GST_VIDEO_FRAME_FORMAT (&vframe) == GST_VIDEO_FORMAT_NV12;
    for (guint p = 1; p < GST_VIDEO_FRAME_N_PLANES (&vframe); p++) {
      in.plane[p] = (const uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (&vframe, p);
      in.stride[p] = GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, p);
    }
  } else if (GST_VIDEO_FRAME_FORMAT (&vframe) == GST_VIDEO_FORMAT_NV12) {
    const int cw = GST_VIDEO_FRAME_WIDTH (&vframe) / 2;
    const int ch = GST_VIDEO_FRAME_HEIGHT (&vframe) / 2;
    const uint8_t *uv = (const uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (&vframe, 1);
    const int uv_stride = GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, 1);

    e->chroma.resize (size_t (2) * cw * ch);
    uint8_t *cb = e->chroma.data (), *cr = cb + size_t (cw) * ch;
    for (int y = 0; y < ch; y++) {
      const uint8_t *s = uv + size_t (y) * uv_stride;
      for (int x = 0; x < cw; x++) {
        cb[size_t (y) * cw + x] = s[2 * x];
        cr[size_t (y) * cw + x] = s[2 * x + 1];
      }
    }
    in.plane[1] = cb;
    in.plane[2] = cr;
    in.stride[1] = in.stride[2] = cw;
  } else {
    for (int p = 1; p < 3; p++) {
      in.plane[p] = (const uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (&vframe, p);
      in.stride[p] = GST_VIDEO_FRAME_PLANE_STRIDE (&vframe, p);
    }
  }

  const bool force = e->force_idr ||
      GST_VIDEO_CODEC_FRAME_IS_FORCE_KEYFRAME (frame);
  const bool idr = force || e->encoder.idr_due ();
  if (cqp)
    e->rc.set_qp (qp);
  e->qp = e->rc.frame_qp (idr);
  st = e->encoder.set_qp (e->qp);
  if (st.ok ()) {
#if GVC_CUDAMV_CUDA
    GvcCudaContextGuard guard (self->context);
#endif
    st = e->encoder.encode (in, force, out);
  }
  gst_video_frame_unmap (&vframe);
  if (!st.ok ()) {
    /* the frame before was coded whole: it goes out before the error */
    gvc_cuda_h264_enc_push_held (self);
    GST_ELEMENT_ERROR (self, LIBRARY, ENCODE,
        ("Encoding a frame failed: %s.", st.message ().c_str ()),
        ("%s backend, frame %u", e->backend->name (),
            frame->system_frame_number));
    e->failed = true;
    gst_video_encoder_finish_frame (enc, frame);
    return GST_FLOW_ERROR;
  }
  e->force_idr = false;

  if (!gvc_cuda_h264_enc_write_recon (self)) {
    /* The stream ends here: the frame before (pipelined) goes out, this one is dropped. */
    if (out.present && e->encoder.pipelined ())
      gvc_cuda_h264_enc_finish_oldest (self, out);
    gvc::h264::EncodedFrame dropped;
    (void) gvc_cuda_h264_enc_drain (self, dropped);
    e->failed = true;
    gst_video_encoder_finish_frame (enc, frame);
    return GST_FLOW_ERROR;
  }

  /* Pipelined, `out` is the frame before (none after the first), and this one is held
   * at its predicted size until its own comes out. */
  GstFlowReturn ret = out.present ?
      gvc_cuda_h264_enc_finish_oldest (self, out) : GST_FLOW_OK;
  if (e->encoder.pipelined ())
    e->rc.planned (idr, e->qp);  /* cqp: nothing */
  /* handle_frame's reference (the base class keeps its own until the frame is finished) */
  gst_video_codec_frame_unref (frame);
  return ret;
}

static gboolean
gvc_cuda_h264_enc_flush (GstVideoEncoder * enc)
{
  GvcCudaH264Enc *self = GVC_CUDA_H264_ENC (enc);

  /* What follows a flush may not follow what came before it: start with an IDR. The
   * frame the pipeline holds is dropped with the base class's pending frames. */
  if (self->engine) {
    gvc::h264::EncodedFrame dropped;
    (void) gvc_cuda_h264_enc_drain (self, dropped);
    self->engine->rc.cancel_planned ();  /* it will never be sent */
    self->engine->force_idr = true;
  }
  return TRUE;
}

static GstFlowReturn
gvc_cuda_h264_enc_finish (GstVideoEncoder * enc)
{
  /* At EOS: the frame the pipeline holds (none with tune=zerolatency). */
  return gvc_cuda_h264_enc_push_held (GVC_CUDA_H264_ENC (enc));
}

static void
gvc_cuda_h264_enc_class_init (GvcCudaH264EncClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstVideoEncoderClass *encoder_class = GST_VIDEO_ENCODER_CLASS (klass);
  const GParamFlags rw_playing = (GParamFlags) (G_PARAM_READWRITE |
      G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  const GParamFlags rw_ready = (GParamFlags) (G_PARAM_READWRITE |
      G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);

  gobject_class->set_property = gvc_cuda_h264_enc_set_property;
  gobject_class->get_property = gvc_cuda_h264_enc_get_property;
  gobject_class->finalize = gvc_cuda_h264_enc_finalize;

  g_object_class_install_property (gobject_class, PROP_RATE_CONTROL,
      g_param_spec_enum ("rate-control", "Rate control",
          "Rate control mode", GVC_TYPE_H264_RATE_CONTROL,
          DEFAULT_RATE_CONTROL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_QP,
      g_param_spec_int ("qp", "QP",
          "Quantizer of P frames with rate-control=cqp; IDR frames are coded "
          "round(6*log2(ip-factor)) finer (effective from the next frame)",
          0, 51, DEFAULT_QP, rw_playing));
  g_object_class_install_property (gobject_class, PROP_IP_FACTOR,
      g_param_spec_double ("ip-factor", "I/P factor",
          "Quantizer step ratio of P to I frames, as x264's ip-factor "
          "(--ipratio): IDR QP = P QP - round(6*log2(ip-factor)), clipped to "
          "0..51, in every rate-control mode (1.4: 3 QP finer)",
          0.5, 4.0, DEFAULT_IP_FACTOR, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BITRATE,
      g_param_spec_uint ("bitrate", "Bitrate",
          "Bitrate in kbit/s for rate-control=cbr|vbr (effective from the next "
          "frame)", 1, 2000 * 1024, DEFAULT_BITRATE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_MAX_BITRATE,
      g_param_spec_uint ("max-bitrate", "Maximum bitrate",
          "VBV fill rate in kbit/s for rate-control=vbr (0 = 1.5 x bitrate)",
          0, 2000 * 1024, DEFAULT_MAX_BITRATE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_VBV_BUFFER_SIZE,
      g_param_spec_uint ("vbv-buffer-size", "VBV buffer size",
          "VBV (decoder buffer) size in milliseconds at the fill rate",
          10, 10000, DEFAULT_VBV_BUFFER_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_KEY_INT_MAX,
      g_param_spec_uint ("key-int-max", "Key-frame interval",
          "Maximum distance between IDR frames, in frames", 1, G_MAXINT,
          DEFAULT_KEY_INT_MAX, rw_ready));
  g_object_class_install_property (gobject_class, PROP_REF_FRAMES,
      g_param_spec_int ("ref-frames", "Reference frames",
          "Reference frames of P frames", 1, 4, DEFAULT_REF_FRAMES, rw_ready));
  g_object_class_install_property (gobject_class, PROP_SLICES,
      g_param_spec_int ("slices", "Slices",
          "Slices per frame (at most one per macroblock)", 1, 256,
          DEFAULT_SLICES, rw_ready));
  g_object_class_install_property (gobject_class, PROP_AUD,
      g_param_spec_boolean ("aud", "AUD",
          "Start every access unit with an access unit delimiter",
          DEFAULT_AUD, rw_ready));
  g_object_class_install_property (gobject_class, PROP_SPEED_PRESET,
      g_param_spec_enum ("speed-preset", "Speed preset",
          "Motion search range, partitions and refinement",
          GVC_TYPE_H264_SPEED_PRESET, DEFAULT_SPEED_PRESET, rw_ready));
  g_object_class_install_property (gobject_class, PROP_INTRA_PRUNING,
      g_param_spec_enum ("intra-pruning", "Intra pruning",
          "Intra modes tried: all, or the edge-direction candidates",
          GVC_TYPE_H264_INTRA_PRUNING, DEFAULT_INTRA_PRUNING, rw_ready));
  g_object_class_install_property (gobject_class, PROP_TUNE,
      g_param_spec_enum ("tune", "Tune",
          "zerolatency: hold no frame back (otherwise one frame is held: its slices are coded while the next frame is analysed)",
          GVC_TYPE_H264_TUNE, DEFAULT_TUNE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_RECON_LOCATION,
      g_param_spec_string ("recon-location", "Reconstruction location",
          "Write the reconstructed frames (what a decoder outputs) to this "
          "file as raw I420, like x264 --dump-yuv", NULL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where the analysis runs", GVC_TYPE_BACKEND_CHOICE, DEFAULT_BACKEND,
          rw_ready));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      g_param_spec_int ("cuda-device-id", "CUDA device id",
          "CUDA device to use (-1 = any, or the one the pipeline shares)",
          -1, G_MAXINT, DEFAULT_CUDA_DEVICE_ID, rw_ready));
  g_object_class_install_property (gobject_class, PROP_ACTIVE_BACKEND,
      g_param_spec_string ("active-backend", "Active backend",
          "The backend in use: \"cuda\", \"cpu\", or \"none\" when stopped",
          "none", (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "CUDA H.264 encoder", "Codec/Encoder/Video/Hardware",
      "H.264 Constrained Baseline encoder with GPU analysis and a CPU fallback",
      "GPU video coding project");

#if GVC_CUDAMV_CUDA
  element_class->set_context =
      GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_set_context);
#endif

  encoder_class->start = GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_start);
  encoder_class->stop = GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_stop);
  encoder_class->set_format = GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_set_format);
  encoder_class->handle_frame =
      GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_handle_frame);
  encoder_class->flush = GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_flush);
  encoder_class->finish = GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_finish);
  encoder_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_propose_allocation);
  encoder_class->sink_query = GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_sink_query);
  encoder_class->src_query = GST_DEBUG_FUNCPTR (gvc_cuda_h264_enc_src_query);

  gst_type_mark_as_plugin_api (GVC_TYPE_H264_RATE_CONTROL,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GVC_TYPE_H264_SPEED_PRESET,
      (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GVC_TYPE_H264_TUNE, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GVC_TYPE_H264_INTRA_PRUNING,
      (GstPluginAPIFlags) 0);

  GST_DEBUG_CATEGORY_INIT (gvc_cuda_h264_enc_debug, "cudah264enc", 0,
      "CUDA H.264 encoder");
}

static void
gvc_cuda_h264_enc_init (GvcCudaH264Enc * self)
{
  self->rate_control = DEFAULT_RATE_CONTROL;
  self->qp = DEFAULT_QP;
  self->ip_factor = DEFAULT_IP_FACTOR;
  self->bitrate = DEFAULT_BITRATE;
  self->max_bitrate = DEFAULT_MAX_BITRATE;
  self->vbv_buffer_size = DEFAULT_VBV_BUFFER_SIZE;
  self->key_int_max = DEFAULT_KEY_INT_MAX;
  self->ref_frames = DEFAULT_REF_FRAMES;
  self->slices = DEFAULT_SLICES;
  self->aud = DEFAULT_AUD;
  self->speed_preset = DEFAULT_SPEED_PRESET;
  self->intra_pruning = DEFAULT_INTRA_PRUNING;
  self->tune = DEFAULT_TUNE;
  self->recon_location = NULL;
  self->backend = DEFAULT_BACKEND;
  self->device_id = DEFAULT_CUDA_DEVICE_ID;
  self->active_backend = g_strdup ("none");
}
