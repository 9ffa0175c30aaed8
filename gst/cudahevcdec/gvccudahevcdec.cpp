// gvccudahevcdec.cpp: the cudahevcdec element: HEVC Main and Main10 decoder, reconstruction on the GPU or the CPU
/**
 * SECTION:element-cudahevcdec
 * @title: cudahevcdec
 *
 * Decodes HEVC Main and Main10 to NV12 or P010_10LE, with the conformance window
 * applied, in output order with the bumping latency the
 * stream asks for: each input buffer is a whole access unit, so its picture is
 * finished as soon as the buffer is decoded, and a stream without reordering
 * gets every picture out before the next buffer arrives. Parameter sets come
 * in-band (byte-stream, hev1) or from the hvcC codec_data (hvc1, hev1). The
 * engine (common/hevcdec) parses on the CPU; with backend=cuda, or auto where
 * a CUDA device is found, the sample reconstruction (inter and intra
 * prediction, inverse transforms) and the loop filters run on the GPU, with
 * the reference pictures kept there, in the CUDA context the pipeline shares
 * (nvcodec elements included). On the GPU the pictures leave in CUDA memory
 * (memory:CUDAMemory, from a GstCudaBufferPool) when downstream accepts it,
 * without a trip through the host; otherwise, and on the CPU, in system memory.
 * A GPU failure mid-stream is an error with backend=cuda or with CUDA memory
 * output (the pictures are on the GPU only); with auto and system memory the
 * decoder warns and goes on on the CPU, losing no picture.
 *
 * Corrupted input goes through GstVideoDecoder's max-errors policy: a warning
 * per error (an error once max-errors is exceeded), the damaged picture is
 * dropped, and decoding resumes at the next IRAP picture.
 *
 * The rank is marginal, below avdec_h265: the decoder is not yet faster, so
 * decodebin only picks it when asked to.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=in.mp4 ! qtdemux ! h265parse ! \
 *     cudahevcdec ! videoconvert ! autovideosink
 * ]| Plays the HEVC track of an MP4 file.
 * |[
 * gst-launch-1.0 filesrc location=in.hevc ! h265parse ! cudahevcdec ! \
 *     video/x-raw,format=P010_10LE ! filesink location=out.yuv
 * ]| Decodes a Main10 elementary stream to raw P010.
 * |[
 * gst-launch-1.0 filesrc location=in.hevc ! h265parse ! cudahevcdec ! \
 *     cudadownload ! videoconvert ! autovideosink
 * ]| Decodes on the GPU into CUDA memory, downloaded by nvcodec's cudadownload.
 */
#include "gst/cudahevcdec/gvccudahevcdec.h"

#include <gst/video/video.h>

#include <memory>
#include <string>
#include <vector>

#include "common/dsp/hevc_output.h"
#include "common/hevcdec/decoder.h"
#include "common/hevcdec/recon.h"
#include "gst/cudahevcdec/aumap.h"
#include "gst/backendsel.h"

#if GVC_CUDAMV_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

#include "gpu/hevc_recon.h"
#include "gst/cudactx.h"
#endif

GST_DEBUG_CATEGORY_STATIC (gvc_cuda_hevc_dec_debug);
#define GST_CAT_DEFAULT gvc_cuda_hevc_dec_debug

enum {
  PROP_0,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_ACTIVE_BACKEND,
  PROP_FRAME_THREADS,
};

#define DEFAULT_BACKEND GVC_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1
#define DEFAULT_FRAME_THREADS 16

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-h265, "
        "stream-format = (string) { byte-stream, hvc1, hev1 }, "
        "alignment = (string) au, "
        "profile = (string) { main, main-10, main-still-picture, main-intra, "
        "main-10-intra }"));

#define GVC_HEVC_DEC_SYSTEM_CAPS GST_VIDEO_CAPS_MAKE ("{ NV12, P010_10LE }")
#if GVC_CUDAMV_CUDA
#define GVC_HEVC_DEC_SRC_CAPS \
    GST_VIDEO_CAPS_MAKE_WITH_FEATURES (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, \
        "{ NV12, P010_10LE }") "; " GVC_HEVC_DEC_SYSTEM_CAPS
#else
#define GVC_HEVC_DEC_SRC_CAPS GVC_HEVC_DEC_SYSTEM_CAPS
#endif

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (GVC_HEVC_DEC_SRC_CAPS));

#if GVC_CUDAMV_CUDA
/* The GstCudaBufferPool the reconstructor's pictures (the DPB on the GPU) come from: one
 * buffer a picture, of 16-bit samples: the luma rows, then a chroma plane's rows with Cb in
 * the left half and Cr in the right (gvc_cuda_hevc_dec_alloc_picture). Its caps say RGBA,
 * a pixel holding two samples, because 1.22's GstCudaMemory allocates twice the rows of a
 * 4:2:0 format (I420_10LE, P016_LE: a third more memory than the picture, 40 MiB over a
 * 2160p DPB of 5), only as many for a packed one, and has no GRAY16_LE. A picture
 * holds its buffer mapped until the reconstructor lets it go, which returns it to the pool. */
struct GvcDpbPool {
  GstBufferPool *pool = nullptr;
  int width = 0, height = 0;

  void reset () {
    if (pool) {
      gst_buffer_pool_set_active (pool, FALSE);  /* buffers still held free on return */
      gst_object_unref (pool);
    }
    pool = nullptr;
  }
  ~GvcDpbPool () { reset (); }
};
#endif

/* Decoding state, created in start () and destroyed in stop (). */
struct GvcHevcDecState {
  /* declared first, destroyed last: the engine points at it */
  std::unique_ptr<gvc::hevc::Reconstructor> recon;  /* the GPU's, or null: the CPU */
#if GVC_CUDAMV_CUDA
  gvc::cuda::HevcCudaReconstructor *cuda_recon = nullptr;  /* recon, when it is that */
  GvcDpbPool dpb_pool;                  /* its pictures' memory */
  bool allocator_warned = false;
#endif
  bool cuda_output = false;             /* the src caps are memory:CUDAMemory */
  std::unique_ptr<gvc::hevc::Decoder> engine;
  gvc::hevcdec::AuTracker tracker;
  gvc::hevcdec::FrameQueue queue;
  std::vector<uint8_t> codec_ps;        /* hvcC parameter sets, Annex B */
  bool send_codec_ps = false;
  int nal_length_size = 0;              /* 0: byte-stream */
  std::vector<uint8_t> au;              /* the access unit, Annex B */
  int max_num_reorder = -1;
  /* where the streaming thread's time goes (µs), logged at INFO when draining: the engine's
   * decode() of each access unit, take_frame() (waits for pictures), writing pictures out */
  struct {
    gint64 decode = 0, take = 0, output = 0;
    int access_units = 0, pictures = 0;
  } time;
  int latency_frames = -1;              /* the latency reported, in frames */
  int out_width = 0, out_height = 0, out_depth = 0;
  gvc::hevc::DecodedFrame picture;      /* the last one taken: its buffers are reused */
};

struct _GvcCudaHevcDec {
  GstVideoDecoder parent;

  GstVideoCodecState *input_state;
  GvcHevcDecState *state;

  /* the pipeline's CUDA context (a GstCudaContext) while the GPU is used */
  GstObject *context;

  /* properties */
  GvcBackendChoice backend;
  gint cuda_device_id;
  gchar *active_backend;
  guint frame_threads;
};

static void gvc_cuda_hevc_dec_update_latency (GvcCudaHevcDec * self,
    int max_num_reorder);

/* Makes the element's CUDA context current for a scope (nothing without one). */
#if GVC_CUDAMV_CUDA
#define GVC_HEVC_DEC_CONTEXT_SCOPE(self) \
  GvcCudaContextGuard context_guard_ (reinterpret_cast < GstCudaContext * >((self)->context))
#else
#define GVC_HEVC_DEC_CONTEXT_SCOPE(self) (void) (self)
#endif

#define gvc_cuda_hevc_dec_parent_class parent_class
G_DEFINE_TYPE (GvcCudaHevcDec, gvc_cuda_hevc_dec, GST_TYPE_VIDEO_DECODER);
GST_ELEMENT_REGISTER_DEFINE (cudahevcdec, "cudahevcdec", GST_RANK_MARGINAL,
    GVC_TYPE_CUDA_HEVC_DEC);

static void
gvc_cuda_hevc_dec_set_active_backend (GvcCudaHevcDec * self,
    const gchar * name)
{
  GST_OBJECT_LOCK (self);
  g_free (self->active_backend);
  self->active_backend = g_strdup (name);
  GST_OBJECT_UNLOCK (self);
}

static void
gvc_cuda_hevc_dec_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (object);

  switch (prop_id) {
    case PROP_BACKEND:
      self->backend = (GvcBackendChoice) g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      GST_OBJECT_LOCK (self);
      self->cuda_device_id = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_FRAME_THREADS:
      GST_OBJECT_LOCK (self);
      self->frame_threads = g_value_get_uint (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gvc_cuda_hevc_dec_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (object);

  switch (prop_id) {
    case PROP_BACKEND:
      g_value_set_enum (value, self->backend);
      break;
    case PROP_CUDA_DEVICE_ID:
      GST_OBJECT_LOCK (self);
      g_value_set_int (value, self->cuda_device_id);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_ACTIVE_BACKEND:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->active_backend);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_FRAME_THREADS:
      GST_OBJECT_LOCK (self);
      g_value_set_uint (value, self->frame_threads);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gvc_cuda_hevc_dec_finalize (GObject * object)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (object);

  g_free (self->active_backend);

  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* A new engine, primed with the parameter sets seen so far (a flush keeps them: after a
 * seek, the stream need not repeat them). */
static void
gvc_cuda_hevc_dec_reset_engine (GvcCudaHevcDec * self)
{
  GvcHevcDecState *s = self->state;

  GVC_HEVC_DEC_CONTEXT_SCOPE (self);
  s->picture = gvc::hevc::DecodedFrame ();  /* (its GPU memory, in the context) */
  s->engine.reset ();  /* its reconstruction thread done with every call */
#if GVC_CUDAMV_CUDA
  /* what the GPU held: the DPB's slots, the frames' copies of their own and scratch, and
   * the cores' buffers (the next engine's reconstructor drops the pictures) */
  if (s->cuda_recon && s->cuda_recon->picture_slots ())
    GST_INFO_OBJECT (self, "%s", s->cuda_recon->memory_summary ().c_str ());
#endif
  s->engine.reset (new gvc::hevc::Decoder ());
  s->engine->set_frame_threads ((int) self->frame_threads);
  s->engine->set_reconstructor (s->recon.get ());
  s->tracker.restart ();
  std::vector < uint8_t > ps = s->tracker.parameter_sets ();
  if (!ps.empty () && !s->engine->decode (ps.data (), ps.size ()))
    GST_WARNING_OBJECT (self, "Stored parameter sets: %s",
        s->engine->error ().c_str ());
}

#if GVC_CUDAMV_CUDA
/* PictureAllocator of the reconstructor: a buffer of the DPB pool, mapped for CUDA. */
static gvc::Status
gvc_cuda_hevc_dec_alloc_picture (GvcCudaHevcDec * self, int width, int height,
    gvc::cuda::PictureMemory & out)
{
  GvcDpbPool & dp = self->state->dpb_pool;
  GstCudaContext *context = reinterpret_cast < GstCudaContext * >(self->context);

  /* 4:2:0: the chroma planes side by side need the luma rows' width, plus one sample
   * where that width is odd */
  const int cw = (width + 1) / 2, ch = (height + 1) / 2;
  if (!dp.pool || dp.width != width || dp.height != height) {
    GstVideoInfo info;

    dp.reset ();
    gst_video_info_set_format (&info, GST_VIDEO_FORMAT_RGBA, cw, height + ch);
    GstCaps *caps = gst_video_info_to_caps (&info);
    gst_caps_set_features (caps, 0,
        gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, NULL));
    GstBufferPool *pool = gst_cuda_buffer_pool_new (context);
    GstStructure *config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, GST_VIDEO_INFO_SIZE (&info),
        0, 0);
    gst_caps_unref (caps);
    if (!gst_buffer_pool_set_config (pool, config)
        || !gst_buffer_pool_set_active (pool, TRUE)) {
      gst_object_unref (pool);
      return gvc::Status::error ("the DPB's GstCudaBufferPool (RGBA " +
          std::to_string (cw) + "x" + std::to_string (height + ch) +
          ") could not be set up");
    }
    dp.pool = pool;
    dp.width = width;
    dp.height = height;
    GST_INFO_OBJECT (self, "DPB pictures from a GstCudaBufferPool (RGBA %dx%d "
        "holding 16-bit samples: luma, then Cb and Cr side by side)", cw,
        height + ch);
  }

  GstBuffer *buf = NULL;
  if (gst_buffer_pool_acquire_buffer (dp.pool, &buf, NULL) != GST_FLOW_OK)
    return gvc::Status::error ("no buffer from the DPB's GstCudaBufferPool");
  GstMemory *mem = gst_buffer_peek_memory (buf, 0);
  GstMapInfo *map = new GstMapInfo;
  if (gst_buffer_n_memory (buf) != 1 || !gst_is_cuda_memory (mem)
      || !gst_memory_map (mem, map,
          (GstMapFlags) (GST_MAP_READWRITE | GST_MAP_CUDA))) {
    delete map;
    gst_buffer_unref (buf);
    return gvc::Status::error ("the DPB's GstCudaBufferPool gave no CUDA memory");
  }
  const GstVideoInfo *vi = &GST_CUDA_MEMORY_CAST (mem)->info;
  const ptrdiff_t stride = GST_VIDEO_INFO_PLANE_STRIDE (vi, 0) / 2;
  uint16_t *luma = reinterpret_cast < uint16_t * >(map->data +
      GST_VIDEO_INFO_PLANE_OFFSET (vi, 0));
  uint16_t *cb = luma + stride * height;
  out.plane[0] = { luma, stride, width, height };
  out.plane[1] = { cb, stride, cw, ch };
  out.plane[2] = { cb + cw, stride, cw, ch };
  out.bytes = map->size;
  out.owner = std::shared_ptr < void >(map, [buf, mem] (void *p) {
        GstMapInfo *m = static_cast < GstMapInfo * >(p);
        gst_memory_unmap (mem, m);
        delete m;
        gst_buffer_unref (buf);  /* back to the pool */
      });
  return gvc::Status ();
}
#endif

static gboolean
gvc_cuda_hevc_dec_start (GstVideoDecoder * decoder)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (decoder);

  GvcBackendChoice choice;
  gint device_id;

  GST_OBJECT_LOCK (self);
  choice = self->backend;
  device_id = self->cuda_device_id;
  GST_OBJECT_UNLOCK (self);

  /* the CUDA device and context as the other elements find them (or the CPU) */
#if GVC_CUDAMV_CUDA
  std::unique_ptr<gvc::Backend> backend = gvc_backend_open (GST_ELEMENT (self),
      choice, device_id, &self->context);
#else
  std::unique_ptr<gvc::Backend> backend = gvc_backend_open (GST_ELEMENT (self),
      choice, device_id, NULL);
#endif
  if (!backend)
    return FALSE;

  self->state = new GvcHevcDecState ();
#if GVC_CUDAMV_CUDA
  if (g_str_equal (backend->name (), "cuda")) {
    self->state->cuda_recon = new gvc::cuda::HevcCudaReconstructor (
        gvc_cuda_context_device_id (reinterpret_cast <
            GstCudaContext * >(self->context)));
    self->state->recon.reset (self->state->cuda_recon);
    self->state->cuda_recon->set_picture_allocator ([self] (int w, int h,
            gvc::cuda::PictureMemory & m) {
          return gvc_cuda_hevc_dec_alloc_picture (self, w, h, m);
        });
  }
  {
    /* the backend only chose the device: it goes now, in its context (a CUDA call without
     * a current context would make the runtime create the device's primary context, half
     * a gigabyte on an H100) */
    GVC_HEVC_DEC_CONTEXT_SCOPE (self);
    backend.reset ();
  }
#endif
  gvc_cuda_hevc_dec_reset_engine (self);
  gvc_cuda_hevc_dec_set_active_backend (self, self->state->recon ? "cuda" : "cpu");
  GST_INFO_OBJECT (self, "Reconstruction on the %s",
      self->state->recon ? "GPU" : "CPU");

  return TRUE;
}

#if GVC_CUDAMV_CUDA
static void
gvc_cuda_hevc_dec_set_context (GstElement * element, GstContext * context)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (element);
  gint device_id;

  GST_OBJECT_LOCK (self);
  device_id = self->cuda_device_id;
  GST_OBJECT_UNLOCK (self);

  gst_cuda_handle_set_context (element, context, device_id,
      reinterpret_cast < GstCudaContext ** >(&self->context));

  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}
#endif

/* Answers CUDA context queries from neighbours, so that the pipeline shares one context. */
static gboolean
gvc_cuda_hevc_dec_handle_context_query (GvcCudaHevcDec * self, GstQuery * query)
{
#if GVC_CUDAMV_CUDA
  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT &&
      gst_cuda_handle_context_query (GST_ELEMENT (self), query,
          reinterpret_cast < GstCudaContext * >(self->context)))
    return TRUE;
#else
  (void) self;
  (void) query;
#endif
  return FALSE;
}

static gboolean
gvc_cuda_hevc_dec_sink_query (GstVideoDecoder * decoder, GstQuery * query)
{
  if (gvc_cuda_hevc_dec_handle_context_query (GVC_CUDA_HEVC_DEC (decoder), query))
    return TRUE;
  return GST_VIDEO_DECODER_CLASS (parent_class)->sink_query (decoder, query);
}

static gboolean
gvc_cuda_hevc_dec_src_query (GstVideoDecoder * decoder, GstQuery * query)
{
  if (gvc_cuda_hevc_dec_handle_context_query (GVC_CUDA_HEVC_DEC (decoder), query))
    return TRUE;
  return GST_VIDEO_DECODER_CLASS (parent_class)->src_query (decoder, query);
}

static gboolean
gvc_cuda_hevc_dec_stop (GstVideoDecoder * decoder)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (decoder);

  g_clear_pointer (&self->input_state, gst_video_codec_state_unref);
  {
    GVC_HEVC_DEC_CONTEXT_SCOPE (self);  /* device memory is freed with the state */
    delete self->state;
    self->state = NULL;
  }
  gst_clear_object (&self->context);
  gvc_cuda_hevc_dec_set_active_backend (self, "none");

  return TRUE;
}

static gboolean
gvc_cuda_hevc_dec_set_format (GstVideoDecoder * decoder,
    GstVideoCodecState * state)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (decoder);
  GvcHevcDecState *s = self->state;
  GstStructure *st = gst_caps_get_structure (state->caps, 0);
  const gchar *format = gst_structure_get_string (st, "stream-format");

  GST_DEBUG_OBJECT (self, "Input caps %" GST_PTR_FORMAT, state->caps);

  s->codec_ps.clear ();
  s->nal_length_size = 0;
  if (format && (g_str_equal (format, "hvc1") || g_str_equal (format, "hev1"))) {
    GstMapInfo map;
    int nal_length_size = 0;

    if (!state->codec_data
        || !gst_buffer_map (state->codec_data, &map, GST_MAP_READ)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("The %s stream has no codec_data (hvcC).", format), (NULL));
      return FALSE;
    }
    const bool ok = gvc::hevcdec::parse_hvcc (map.data, map.size,
        nal_length_size, s->codec_ps);
    gst_buffer_unmap (state->codec_data, &map);
    if (!ok) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("The codec_data (hvcC) of the %s stream is malformed.", format),
          (NULL));
      return FALSE;
    }
    s->nal_length_size = nal_length_size;
    s->send_codec_ps = !s->codec_ps.empty ();
  }

  g_clear_pointer (&self->input_state, gst_video_codec_state_unref);
  self->input_state = gst_video_codec_state_ref (state);

  return TRUE;
}

/* What downstream takes, from one caps query: CUDA memory in some structure (nvcodec's
 * rule for choosing it), and nothing but CUDA memory. */
static void
gvc_cuda_hevc_dec_downstream_memory (GvcCudaHevcDec * self, gboolean * cuda,
    gboolean * only_cuda)
{
  GstCaps *allowed = gst_pad_get_allowed_caps (GST_VIDEO_DECODER_SRC_PAD (self));

  *cuda = *only_cuda = FALSE;
  if (!allowed)
    return;
#if GVC_CUDAMV_CUDA
  for (guint i = 0; i < gst_caps_get_size (allowed) && !*cuda; i++) {
    GstCapsFeatures *features = gst_caps_get_features (allowed, i);
    *cuda = features && gst_caps_features_contains (features,
        GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY);
  }
#endif
  GstCaps *sys = gst_caps_from_string (GVC_HEVC_DEC_SYSTEM_CAPS);
  *only_cuda = !gst_caps_is_empty (allowed) && !gst_caps_can_intersect (allowed, sys);
  gst_caps_unref (sys);
  gst_caps_unref (allowed);
}

/* The memory of the output caps, chosen at every negotiation (GstVideoDecoder renegotiates
 * by itself when downstream asks for it, in allocate_output_frame or finish_frame, which
 * takes the reconfigure flag): CUDA memory when the GPU reconstructs and downstream takes
 * it, else system memory. (Choosing it only in ensure_output missed a reconfigure the base
 * class had taken first: downstream's switch to system memory was never seen.) */
static gboolean
gvc_cuda_hevc_dec_negotiate (GstVideoDecoder * decoder)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (decoder);
  GvcHevcDecState *s = self->state;
  GstVideoCodecState *out = gst_video_decoder_get_output_state (decoder);

  if (s && out) {
    gboolean takes_cuda, only_cuda;
    gvc_cuda_hevc_dec_downstream_memory (self, &takes_cuda, &only_cuda);
    const gboolean cuda = s->recon && takes_cuda;
    if (!cuda && only_cuda) {
      gst_video_codec_state_unref (out);
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Downstream takes only CUDA memory, but the pictures are decoded on "
              "the CPU (backend=cpu, or no CUDA device)."), (NULL));
      return FALSE;
    }
    if (out->caps)
      gst_caps_unref (out->caps);
    out->caps = gst_video_info_to_caps (&out->info);
#if GVC_CUDAMV_CUDA
    if (cuda)
      gst_caps_set_features (out->caps, 0,
          gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, NULL));
    /* Later pictures stay on the GPU until they are copied into CUDA memory, and under
     * backend=cuda also into system memory (converted on the GPU, the reconstruction
     * behind the next picture's parse): a GPU failure ends the stream there anyway. Under
     * backend=auto, system memory keeps each picture on the host too, so that the CPU can
     * go on from there. */
    if (s->cuda_recon) {
      s->cuda_recon->set_keep_pictures (cuda || self->backend == GVC_BACKEND_CUDA);
      /* frame threads only while the pictures stay on the GPU */
      gvc_cuda_hevc_dec_update_latency (self, s->max_num_reorder);
    }
#endif
    if (cuda != s->cuda_output)
      GST_DEBUG_OBJECT (self, "Output in %s memory", cuda ? "CUDA" : "system");
    s->cuda_output = cuda;
  }
  if (out)
    gst_video_codec_state_unref (out);
  return GST_VIDEO_DECODER_CLASS (parent_class)->negotiate (decoder);
}

/* Output caps follow the pictures: NV12 for 8 bits, P010_10LE for 10, in the memory
 * gvc_cuda_hevc_dec_negotiate chooses. */
static gboolean
gvc_cuda_hevc_dec_ensure_output (GvcCudaHevcDec * self,
    const gvc::hevc::DecodedFrame & pic)
{
  GstVideoDecoder *decoder = GST_VIDEO_DECODER (self);
  GvcHevcDecState *s = self->state;
  GstVideoCodecState *out;
  GstVideoFormat fmt;

  if (pic.width == s->out_width && pic.height == s->out_height
      && pic.bit_depth == s->out_depth
      && !gst_pad_check_reconfigure (GST_VIDEO_DECODER_SRC_PAD (self)))
    return TRUE;

  fmt = pic.bit_depth > 8 ? GST_VIDEO_FORMAT_P010_10LE : GST_VIDEO_FORMAT_NV12;
  out = gst_video_decoder_set_output_state (decoder, fmt, pic.width,
      pic.height, self->input_state);
  gst_video_codec_state_unref (out);
  if (!gst_video_decoder_negotiate (decoder))  /* gvc_cuda_hevc_dec_negotiate */
    return FALSE;
  s->out_width = pic.width;
  s->out_height = pic.height;
  s->out_depth = pic.bit_depth;

  return TRUE;
}

#if GVC_CUDAMV_CUDA
/* CUDA memory out: a GstCudaBufferPool of the shared context (downstream's when it
 * offers one of that context), as nvcodec's decoders do. */
static gboolean
gvc_cuda_hevc_dec_ensure_cuda_pool (GvcCudaHevcDec * self, GstQuery * query)
{
  GstCudaContext *context = reinterpret_cast < GstCudaContext * >(self->context);
  GstCaps *caps = NULL;
  GstBufferPool *pool = NULL;
  GstVideoInfo info;
  guint size = 0, min = 0, max = 0;
  const guint n = gst_query_get_n_allocation_pools (query);

  gst_query_parse_allocation (query, &caps, NULL);
  if (!caps || !gst_video_info_from_caps (&info, caps) || !context)
    return FALSE;
  if (n > 0)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
  if (pool && (!GST_IS_CUDA_BUFFER_POOL (pool)
          || GST_CUDA_BUFFER_POOL (pool)->context != context))
    gst_clear_object (&pool);
  if (!pool)
    pool = gst_cuda_buffer_pool_new (context);

  GstStructure *config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_set_params (config, caps, GST_VIDEO_INFO_SIZE (&info),
      min, max);
  if (!gst_buffer_pool_set_config (pool, config)) {
    GST_ERROR_OBJECT (self, "The CUDA buffer pool refused its configuration");
    gst_object_unref (pool);
    return FALSE;
  }
  /* the pool pitches the rows: its size, not ours */
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
  gst_structure_free (config);
  if (n > 0)
    gst_query_set_nth_allocation_pool (query, 0, pool, size, min, max);
  else
    gst_query_add_allocation_pool (query, pool, size, min, max);
  gst_object_unref (pool);

  return TRUE;
}
#endif

static gboolean
gvc_cuda_hevc_dec_decide_allocation (GstVideoDecoder * decoder,
    GstQuery * query)
{
#if GVC_CUDAMV_CUDA
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (decoder);

  if (self->state && self->state->cuda_output
      && !gvc_cuda_hevc_dec_ensure_cuda_pool (self, query))
    return FALSE;
#endif
  return GST_VIDEO_DECODER_CLASS (parent_class)->decide_allocation (decoder,
      query);
}

/* Writes @pic into the mapped @vf: a copy on the GPU for a picture kept there (into CUDA
 * memory, or down to the host), else the CPU's conversion of its host planes. */
static gboolean
gvc_cuda_hevc_dec_write_picture (GvcCudaHevcDec * self,
    const gvc::hevc::DecodedFrame & pic, GstVideoFrame * vf)
{
  const gvc::SemiPlanarView dst {
    (uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (vf, 0),
    GST_VIDEO_FRAME_PLANE_STRIDE (vf, 0),
    (uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (vf, 1),
    GST_VIDEO_FRAME_PLANE_STRIDE (vf, 1)
  };

#if GVC_CUDAMV_CUDA
  if (pic.device) {
    GVC_HEVC_DEC_CONTEXT_SCOPE (self);
    const gvc::Status st = static_cast < const gvc::cuda::HevcDeviceFrame &
        >(*pic.device).copy_to (dst);
    if (!st.ok ()) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("Copying a decoded picture on the GPU failed: %s.",
              st.message ().c_str ()), (NULL));
      return FALSE;
    }
    return TRUE;
  }
#else
  (void) self;
#endif
  gvc::HevcPlane planes[3];
  for (int c = 0; c < 3; c++)
    planes[c] = { const_cast < uint16_t * >(pic.planes[c].data ()),
      pic.plane_width (c), pic.plane_width (c), pic.plane_height (c) };
  gvc::hevc_write_semi_planar (planes, 0, 0, pic.width, pic.height,
      pic.bit_depth, dst);
  return TRUE;
}

/* Frames whose picture will never come out (skipped, not output, or discarded). */
static void
gvc_cuda_hevc_dec_release (GvcCudaHevcDec * self,
    const std::vector < uint32_t > &frame_numbers)
{
  GstVideoDecoder *decoder = GST_VIDEO_DECODER (self);

  for (uint32_t n : frame_numbers) {
    GstVideoCodecFrame *frame = gst_video_decoder_get_frame (decoder, (int) n);
    if (frame) {
      GST_LOG_OBJECT (self, "No picture for frame %u", n);
      gst_video_decoder_release_frame (decoder, frame);
    }
  }
}

static GstFlowReturn
gvc_cuda_hevc_dec_output_one (GvcCudaHevcDec * self,
    const gvc::hevc::DecodedFrame & pic, GstVideoCodecFrame * frame)
{
  GstVideoDecoder *decoder = GST_VIDEO_DECODER (self);
  GstVideoFrame vf;
  GstFlowReturn ret;

  if (pic.bit_depth != 8 && pic.bit_depth != 10) {
    gst_video_decoder_release_frame (decoder, frame);
    GST_ELEMENT_ERROR (self, STREAM, NOT_IMPLEMENTED,
        ("Unsupported bit depth %d (Main and Main10 only).", pic.bit_depth),
        (NULL));
    return GST_FLOW_ERROR;
  }
  if (!gvc_cuda_hevc_dec_ensure_output (self, pic)) {
    gst_video_decoder_release_frame (decoder, frame);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  ret = gst_video_decoder_allocate_output_frame (decoder, frame);
  if (ret != GST_FLOW_OK) {
    gst_video_decoder_release_frame (decoder, frame);
    return ret;
  }
  GstVideoCodecState *out = gst_video_decoder_get_output_state (decoder);
  GstMapFlags flags = GST_MAP_WRITE;
#if GVC_CUDAMV_CUDA
  /* a picture on the GPU goes into CUDA memory there; one from the host (decoded before
   * CUDA memory was negotiated) is uploaded by GstCudaMemory */
  if (self->state->cuda_output && pic.device)
    flags = (GstMapFlags) (GST_MAP_WRITE | GST_MAP_CUDA);
#endif
  if (!gst_video_frame_map (&vf, &out->info, frame->output_buffer, flags)) {
    gst_video_codec_state_unref (out);
    gst_video_decoder_release_frame (decoder, frame);
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Could not map the output buffer."), (NULL));
    return GST_FLOW_ERROR;
  }
  gst_video_codec_state_unref (out);
  const gboolean written = gvc_cuda_hevc_dec_write_picture (self, pic, &vf);
  gst_video_frame_unmap (&vf);
  if (!written) {
    gst_video_decoder_release_frame (decoder, frame);
    return GST_FLOW_ERROR;
  }

  return gst_video_decoder_finish_frame (decoder, frame);
}

/* Pushes every picture the engine has ready, each with the frame of its access unit; with
 * `wait`, every picture its DPB has output, also those still being decoded (frame threads). */
static GstFlowReturn
gvc_cuda_hevc_dec_push_pictures (GvcCudaHevcDec * self, bool wait = false)
{
  GstVideoDecoder *decoder = GST_VIDEO_DECODER (self);
  GvcHevcDecState *s = self->state;
  GstFlowReturn ret = GST_FLOW_OK;
  gvc::hevc::DecodedFrame & pic = s->picture;

  for (;;) {
    const gint64 t0 = g_get_monotonic_time ();
    bool got;
    {
      /* the frame taken before is let go here: its GPU memory may go with it */
      GVC_HEVC_DEC_CONTEXT_SCOPE (self);
      got = s->engine->take_frame (pic, wait);
    }
    s->time.take += g_get_monotonic_time () - t0;
    if (!got)
      break;
    gvc::hevcdec::PendingFrame pending;
    std::vector < uint32_t > stale;
    const bool found = s->queue.match (pic.poc, pending, stale);

    gvc_cuda_hevc_dec_release (self, stale);
    if (!found) {
      GST_WARNING_OBJECT (self, "Picture POC %d has no frame; dropped",
          pic.poc);
      continue;
    }
    GstVideoCodecFrame *frame =
        gst_video_decoder_get_frame (decoder, (int) pending.frame_number);
    if (!frame)
      continue;
    if (pending.corrupt || pic.damaged) {
      GST_DEBUG_OBJECT (self, "Dropping damaged picture POC %d", pic.poc);
      gst_video_decoder_drop_frame (decoder, frame);
      continue;
    }
    if (ret != GST_FLOW_OK) {
      /* keep emptying the engine, but push nothing more */
      gst_video_decoder_release_frame (decoder, frame);
      continue;
    }
    GST_LOG_OBJECT (self, "Picture POC %d -> frame %u", pic.poc,
        pending.frame_number);
    const gint64 t1 = g_get_monotonic_time ();
    ret = gvc_cuda_hevc_dec_output_one (self, pic, frame);
    s->time.output += g_get_monotonic_time () - t1;
    s->time.pictures++;
  }

  return ret;
}

/* Latency: the DPB may hold max_num_reorder pictures (C.5.2.3); each picture is finished
 * with its own access unit (end_access_unit); with the GPU, frame-threads - 1 more pictures
 * may be in flight (the engine's set_frame_threads) when the pictures stay on it. */
static void
gvc_cuda_hevc_dec_update_latency (GvcCudaHevcDec * self, int max_num_reorder)
{
  GvcHevcDecState *s = self->state;
  const GstVideoInfo *info;
  GstClockTime latency;

  if (max_num_reorder < 0 || !self->input_state)
    return;
  s->max_num_reorder = max_num_reorder;
  const int in_flight = s->recon && s->recon->keeps_pictures ()?
      (int) self->frame_threads - 1 : 0;
  if (max_num_reorder + in_flight == s->latency_frames)
    return;
  info = &self->input_state->info;
  if (GST_VIDEO_INFO_FPS_N (info) <= 0 || GST_VIDEO_INFO_FPS_D (info) <= 0)
    return;
  s->latency_frames = max_num_reorder + in_flight;
  latency = gst_util_uint64_scale (s->latency_frames,
      GST_SECOND * GST_VIDEO_INFO_FPS_D (info), GST_VIDEO_INFO_FPS_N (info));
  GST_DEBUG_OBJECT (self, "Latency %" GST_TIME_FORMAT " (%d reordered, %d in "
      "flight)", GST_TIME_ARGS (latency), max_num_reorder, in_flight);
  gst_video_decoder_set_latency (GST_VIDEO_DECODER (self), latency, latency);
}

/* After the engine ran: FALSE (with the error posted) when the GPU failed under
 * backend=cuda. Under auto the decoder warns once and goes on on the CPU: the engine
 * has reconstructed the picture there already. */
static gboolean
gvc_cuda_hevc_dec_check_gpu (GvcCudaHevcDec * self)
{
  GvcHevcDecState *s = self->state;

#if GVC_CUDAMV_CUDA
  if (s->cuda_recon && !s->cuda_recon->allocator_error ().empty ()
      && !s->allocator_warned) {
    GST_WARNING_OBJECT (self, "DPB pictures from cudaMalloc instead: %s",
        s->cuda_recon->allocator_error ().c_str ());
    s->allocator_warned = true;
  }
#endif
  if (!s->recon || s->engine->reconstructor_error ().empty ())
    return TRUE;
  const std::string why = s->engine->reconstructor_error ();
  if (self->backend == GVC_BACKEND_CUDA) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("The GPU failed while decoding: %s.", why.c_str ()),
        ("backend=cuda; backend=auto would go on on the CPU."));
    return FALSE;
  }
  if (s->recon->keeps_pictures ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("The GPU failed while decoding: %s.", why.c_str ()),
        ("The output is in CUDA memory: the reference pictures were on the GPU only."));
    return FALSE;
  }
  GST_ELEMENT_WARNING (self, RESOURCE, FAILED,
      ("The GPU failed while decoding (%s): going on on the CPU.", why.c_str ()),
      (NULL));
  {
    GVC_HEVC_DEC_CONTEXT_SCOPE (self);
    s->engine->set_reconstructor (nullptr);
    s->picture = gvc::hevc::DecodedFrame ();
    s->recon.reset ();
#if GVC_CUDAMV_CUDA
    s->cuda_recon = nullptr;
#endif
  }
  gvc_cuda_hevc_dec_set_active_backend (self, "cpu");
  return TRUE;
}

static GstFlowReturn
gvc_cuda_hevc_dec_handle_frame (GstVideoDecoder * decoder,
    GstVideoCodecFrame * frame)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (decoder);
  GvcHevcDecState *s = self->state;
  GstFlowReturn ret = GST_FLOW_OK;
  GstMapInfo map;
  bool complete = true;

  /* The pictures ready so far go out before the next access unit: with frame threads the
   * reconstruction may be waiting for their frames to be taken before it reuses their slots
   * on the GPU (behind a real-time sink they would otherwise become copies of their own).
   * The access unit is decoded whatever that returns (downstream may be relinked or
   * renegotiated), which is returned at the end as the pushes after decoding are. */
  const GstFlowReturn early_ret = gvc_cuda_hevc_dec_push_pictures (self);
  if (!gst_buffer_map (frame->input_buffer, &map, GST_MAP_READ)) {
    gst_video_decoder_release_frame (decoder, frame);
    GST_ELEMENT_ERROR (self, RESOURCE, READ,
        ("Could not map the input buffer."), (NULL));
    return GST_FLOW_ERROR;
  }
  s->au.clear ();
  if (s->send_codec_ps) {
    s->au = s->codec_ps;
    s->send_codec_ps = false;
  }
  if (s->nal_length_size)
    complete = gvc::hevcdec::length_prefixed_to_annexb (map.data, map.size,
        s->nal_length_size, s->au);
  else
    s->au.insert (s->au.end (), map.data, map.data + map.size);
  gst_buffer_unmap (frame->input_buffer, &map);

  const gvc::hevcdec::AuInfo info =
      s->tracker.inspect (s->au.data (), s->au.size ());
  gvc_cuda_hevc_dec_update_latency (self, info.max_num_reorder);

  const uint32_t frame_number = frame->system_frame_number;
  const bool waits = info.has_picture && info.poc_known && !info.skipped;
  if (waits) {
    gvc::hevcdec::PendingFrame p;
    p.frame_number = frame_number;
    p.cvs = info.cvs;
    p.poc = info.poc;
    s->queue.push (p);
  }

  bool ok;
  {
    GVC_HEVC_DEC_CONTEXT_SCOPE (self);
    const gint64 t0 = g_get_monotonic_time ();
    ok = s->engine->decode (s->au.data (), s->au.size ());
    /* alignment=au: the buffer is the whole access unit, so its picture can be finished
     * (and output, if the DPB bumps it) now rather than when the next one starts */
    s->engine->end_access_unit ();
    s->time.decode += g_get_monotonic_time () - t0;
    s->time.access_units++;
  }
  if (!gvc_cuda_hevc_dec_check_gpu (self)) {
    if (waits)
      gst_video_codec_frame_unref (frame);
    else
      gst_video_decoder_release_frame (decoder, frame);
    return GST_FLOW_ERROR;
  }
  if (!ok || !complete) {
    const std::string why = ok ? "a NAL unit length runs past the buffer" :
        s->engine->error ();
    /* with frame threads the damaged pictures are earlier ones, found by their parse:
     * their frames come out flagged (DecodedFrame::damaged) and are dropped then, and the
     * engine waits for an IRAP picture only if none has started since */
    const bool earlier = !s->engine->take_damaged_pocs ().empty ();
    if (!earlier || s->engine->waiting_for_irap ())
      s->tracker.error ();
    if (waits && !earlier)
      s->queue.mark_corrupt (frame_number);
    GST_VIDEO_DECODER_ERROR (self, 1, STREAM, DECODE,
        ("Could not decode the HEVC stream: %s.", why.c_str ()),
        ("Frame %u; decoding resumes at the next IRAP picture.",
            frame_number), ret);
    /* below max-errors the base class only logs: tell the application too */
    if (ret == GST_FLOW_OK)
      GST_ELEMENT_WARNING (self, STREAM, DECODE,
          ("Could not decode the HEVC stream: %s.", why.c_str ()),
          ("Frame %u; the picture is dropped and decoding resumes at the next "
              "IRAP picture.", frame_number));
  }

  if (waits) {
    gst_video_codec_frame_unref (frame);
  } else {
    GST_LOG_OBJECT (self, "Frame %u has no picture to wait for%s",
        frame_number, info.skipped ? " (skipped)" : "");
    gst_video_decoder_release_frame (decoder, frame);
  }

  /* a new CVS output every picture of the previous one (C.5.2.2): those still being
   * decoded (frame threads) are waited for before the previous CVS's frames are let go */
  GstFlowReturn push_ret = gvc_cuda_hevc_dec_push_pictures (self, info.new_cvs);
  if (info.new_cvs) {
    /* every picture of the previous CVS is out or discarded by now (C.5.2.2) */
    std::vector < uint32_t > stale;
    s->queue.drop_before (info.cvs, stale);
    gvc_cuda_hevc_dec_release (self, stale);
  }

  if (ret != GST_FLOW_OK)
    return ret;
  return early_ret != GST_FLOW_OK ? early_ret : push_ret;
}

/* End of stream or drain: everything in the DPB comes out, and the next picture starts a
 * new coded video sequence. */
static GstFlowReturn
gvc_cuda_hevc_dec_drain (GstVideoDecoder * decoder)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (decoder);
  GvcHevcDecState *s = self->state;
  std::vector < uint32_t > stale;
  GstFlowReturn ret;

  if (!s)
    return GST_FLOW_OK;
  {
    GVC_HEVC_DEC_CONTEXT_SCOPE (self);
    s->engine->flush ();
  }
  if (!gvc_cuda_hevc_dec_check_gpu (self))
    return GST_FLOW_ERROR;
  ret = gvc_cuda_hevc_dec_push_pictures (self);
  s->queue.take_all (stale);
  gvc_cuda_hevc_dec_release (self, stale);
  if (s->time.access_units && s->time.pictures)
    GST_INFO_OBJECT (self, "%d access units, %d pictures out: decode() %.3f ms per "
        "access unit (%.3f waiting for a free lane), take_frame() %.3f ms and output "
        "%.3f ms per picture", s->time.access_units, s->time.pictures,
        1e-3 * s->time.decode / s->time.access_units,
        1e3 * s->engine->lane_wait_seconds () / s->time.access_units,
        1e-3 * s->time.take / s->time.pictures,
        1e-3 * s->time.output / s->time.pictures);
  s->time = {};
  gvc_cuda_hevc_dec_reset_engine (self);  /* (the old engine's calls all made) */
#if GVC_CUDAMV_CUDA
  if (s->cuda_recon)
    GST_INFO_OBJECT (self, "Reconstruction thread: %s",
        s->cuda_recon->host_times_summary ().c_str ());
#endif

  return ret;
}

static GstFlowReturn
gvc_cuda_hevc_dec_finish (GstVideoDecoder * decoder)
{
  return gvc_cuda_hevc_dec_drain (decoder);
}

static gboolean
gvc_cuda_hevc_dec_flush (GstVideoDecoder * decoder)
{
  GvcCudaHevcDec *self = GVC_CUDA_HEVC_DEC (decoder);
  GvcHevcDecState *s = self->state;

  if (!s)
    return TRUE;
  /* the base class discards its pending frames itself */
  s->queue.clear ();
  gvc_cuda_hevc_dec_reset_engine (self);
  s->send_codec_ps = !s->codec_ps.empty ();

  return TRUE;
}

static void
gvc_cuda_hevc_dec_class_init (GvcCudaHevcDecClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstVideoDecoderClass *decoder_class = GST_VIDEO_DECODER_CLASS (klass);

  gobject_class->set_property = gvc_cuda_hevc_dec_set_property;
  gobject_class->get_property = gvc_cuda_hevc_dec_get_property;
  gobject_class->finalize = gvc_cuda_hevc_dec_finalize;

  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where the pictures are reconstructed and filtered: cuda on the GPU "
          "(an error without one), auto on the GPU when there is one, else "
          "the CPU, cpu on the CPU",
          GVC_TYPE_BACKEND_CHOICE, DEFAULT_BACKEND,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      g_param_spec_int ("cuda-device-id", "CUDA device id",
          "CUDA device to use (-1 = any, or the one the pipeline shares)",
          -1, G_MAXINT, DEFAULT_CUDA_DEVICE_ID,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property (gobject_class, PROP_ACTIVE_BACKEND,
      g_param_spec_string ("active-backend", "Active backend",
          "The backend in use: \"cuda\", \"cpu\", or \"none\" when stopped",
          "none", (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property (gobject_class, PROP_FRAME_THREADS,
      g_param_spec_uint ("frame-threads", "Frame threads",
          "Pictures parsed at once while the GPU keeps them (output on the GPU); "
          "each adds a frame of latency (1: one picture at a time)",
          1, 32, DEFAULT_FRAME_THREADS,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_READY)));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "CUDA HEVC decoder", "Codec/Decoder/Video/Hardware",
      "HEVC Main and Main10 decoder, reconstruction and loop filters on the GPU",
      "GPU video coding project");

  decoder_class->start = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_start);
  decoder_class->stop = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_stop);
  decoder_class->set_format = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_set_format);
  decoder_class->handle_frame =
      GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_handle_frame);
  decoder_class->drain = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_drain);
  decoder_class->finish = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_finish);
  decoder_class->flush = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_flush);
  decoder_class->negotiate = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_negotiate);
  decoder_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_decide_allocation);
  decoder_class->sink_query = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_sink_query);
  decoder_class->src_query = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_src_query);
#if GVC_CUDAMV_CUDA
  element_class->set_context = GST_DEBUG_FUNCPTR (gvc_cuda_hevc_dec_set_context);
#endif

  GST_DEBUG_CATEGORY_INIT (gvc_cuda_hevc_dec_debug, "cudahevcdec", 0,
      "CUDA HEVC decoder");
}

static void
gvc_cuda_hevc_dec_init (GvcCudaHevcDec * self)
{
  GstVideoDecoder *decoder = GST_VIDEO_DECODER (self);

  self->backend = DEFAULT_BACKEND;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->frame_threads = DEFAULT_FRAME_THREADS;
  self->active_backend = g_strdup ("none");
  gst_video_decoder_set_packetized (decoder, TRUE);
  gst_video_decoder_set_needs_format (decoder, TRUE);
}
