// gvccudamv.cpp: the cudamv element: full-search block motion estimation, GvcMvMeta on every buffer
/**
 * SECTION:element-cudamv
 * @title: cudamv
 *
 * Full-search block motion estimation (H.264 partitions, integer search plus
 * half/quarter-pel refinement) against the previous frame, on the GPU when a
 * CUDA device is present and on the CPU otherwise. From the second buffer on,
 * every buffer carries a #GvcMvMeta: one vector and cost per block, kept in GPU
 * memory when computed there. Pixels pass through untouched unless draw=true,
 * which draws the vectors as arrows onto the luma plane.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=vtest.avi ! decodebin ! videoconvert ! \
 *     cudamv draw=true block-size=8x8 ! videoconvert ! autovideosink
 * ]| Shows the motion vectors of a clip.
 * |[
 * gst-launch-1.0 -m videotestsrc pattern=ball num-buffers=30 ! \
 *     video/x-raw,width=320,height=240 ! cudamv post-messages=true ! fakesink
 * ]| Prints one "cudamv" element message per frame with motion statistics.
 * |[
 * gst-launch-1.0 filesrc location=clip.mkv ! matroskademux ! h265parse ! nvh265dec ! \
 *     cudamv ! cudadownload ! videoconvert ! autovideosink
 * ]| Runs on CUDA memory straight from the NVIDIA decoder, with no copy to the host.
 */
#include "gst/cudamv/gvccudamv.h"
#include "gst/backendsel.h"

#include <gst/video/video.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/dsp/backend.h"
#include "common/dsp/me.h"
#include "gst/cudamv/mvdraw.h"
#include "gst/mvmeta/gvcmvmeta.h"

#if GVC_CUDAMV_CUDA
#include <gst/cuda/cuda-gst.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

#include "gst/cudactx.h"
#endif

GST_DEBUG_CATEGORY_STATIC (gvc_cuda_mv_debug);
#define GST_CAT_DEFAULT gvc_cuda_mv_debug

enum {
  PROP_0,
  PROP_BLOCK_SIZE,
  PROP_SEARCH_RANGE,
  PROP_SUBPEL,
  PROP_LAMBDA,
  PROP_DRAW,
  PROP_POST_MESSAGES,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_ACTIVE_BACKEND,
};

#define DEFAULT_BLOCK_SIZE GVC_MV_BLOCK_16X16
#define DEFAULT_SEARCH_RANGE 16
#define DEFAULT_SUBPEL GVC_MV_SUBPEL_QUARTER
#define DEFAULT_LAMBDA 0
#define DEFAULT_DRAW FALSE
#define DEFAULT_POST_MESSAGES FALSE
#define DEFAULT_BACKEND GVC_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1

#define SYSMEM_CAPS GST_VIDEO_CAPS_MAKE ("{ NV12, I420 }")
#if GVC_CUDAMV_CUDA
#define TEMPLATE_CAPS \
    GST_VIDEO_CAPS_MAKE_WITH_FEATURES (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, \
        "{ NV12, I420 }") "; " SYSMEM_CAPS
#else
#define TEMPLATE_CAPS SYSMEM_CAPS
#endif

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (TEMPLATE_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (TEMPLATE_CAPS));

namespace {

// Everything the streaming thread owns between start() and stop(). Backend memory (planes,
// partition results, the block field) lives where the backend wants it; with the CUDA
// backend it is allocated, used and released with the element's GstCudaContext pushed.
struct Engine {
  std::unique_ptr<gvc::Backend> backend;
  std::unique_ptr<gvc::MotionSearch> search;
  bool on_device = false;

  int width = 0, height = 0;
  uint8_t *planes[2] = { nullptr, nullptr };     // luma, pitch = width
  int cur = 0;                                   // index of the current frame's plane
  bool have_ref = false;
  GstClockTime ref_pts = GST_CLOCK_TIME_NONE;

  gvc::MbPartitionField parts;
  gvc::MvCost *field = nullptr;                  // block field in backend memory (device path)
  size_t field_capacity = 0;
  std::vector<gvc::MvCost> host_field;           // for drawing and statistics

  // Field memories given to metas, reused once no meta holds them any more (this list's is
  // then the only reference): a GPU allocation per frame would cost more than the search.
  static constexpr size_t kMaxRecycled = 8;
  std::vector<GstMemory *> recycled;
  int recycled_cols = 0, recycled_rows = 0;

  GstMemory *reuse_field (int cols, int rows) {
    if (cols != recycled_cols || rows != recycled_rows) {
      clear_recycled ();
      recycled_cols = cols;
      recycled_rows = rows;
    }
    for (GstMemory *m : recycled) {
      if (GST_MINI_OBJECT_REFCOUNT_VALUE (m) == 1)
        return gst_memory_ref (m);
    }
    return nullptr;
  }
  void keep_field (GstMemory *m) {
    if (recycled.size () < kMaxRecycled)
      recycled.push_back (gst_memory_ref (m));
  }
  void clear_recycled () {
    for (GstMemory *m : recycled)
      gst_memory_unref (m);
    recycled.clear ();
  }

  void release_buffers () {
    clear_recycled ();
    if (!backend)
      return;
    for (auto & p : planes) {
      if (p)
        backend->release (p);
      p = nullptr;
    }
    if (parts.data)
      backend->release (parts.data);
    parts.data = nullptr;
    if (field)
      backend->release (field);
    field = nullptr;
    field_capacity = 0;
    width = height = 0;
    have_ref = false;
  }
};

}  // namespace

struct _GvcCudaMv {
  GstBaseTransform parent;

  /* properties, under the object lock */
  GvcMvBlockSize block_size;
  gint search_range;
  GvcMvSubpel subpel;
  guint lambda;
  gboolean draw;
  gboolean post_messages;
  GvcBackendChoice backend;
  gint device_id;
  gchar *active_backend;

  /* streaming state */
  GstVideoInfo info;
  Engine *engine;
#if GVC_CUDAMV_CUDA
  GstCudaContext *context;
#endif
};

#define gvc_cuda_mv_parent_class parent_class
G_DEFINE_TYPE (GvcCudaMv, gvc_cuda_mv, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (cudamv, "cudamv", GST_RANK_NONE, GVC_TYPE_CUDA_MV);

GType
gvc_mv_block_size_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GVC_MV_BLOCK_16X16, "16x16 blocks (one per macroblock)", "16x16"},
    {GVC_MV_BLOCK_8X8, "8x8 blocks", "8x8"},
    {GVC_MV_BLOCK_4X4, "4x4 blocks", "4x4"},
    {GVC_MV_BLOCK_AUTO,
        "Partitioning of least cost per macroblock, as a 4x4 field", "auto"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GvcMvBlockSize", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gvc_mv_subpel_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GVC_MV_SUBPEL_NONE, "Integer vectors only", "none"},
    {GVC_MV_SUBPEL_HALF, "Half-pel refinement", "half"},
    {GVC_MV_SUBPEL_QUARTER, "Half- then quarter-pel refinement", "quarter"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GvcMvSubpel", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static void
gvc_cuda_mv_set_active_backend (GvcCudaMv * self, const gchar * name)
{
  GST_OBJECT_LOCK (self);
  g_free (self->active_backend);
  self->active_backend = g_strdup (name);
  GST_OBJECT_UNLOCK (self);
}

static void
gvc_cuda_mv_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GvcCudaMv *self = GVC_CUDA_MV (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_BLOCK_SIZE:
      self->block_size = (GvcMvBlockSize) g_value_get_enum (value);
      break;
    case PROP_SEARCH_RANGE:
      self->search_range = g_value_get_int (value);
      break;
    case PROP_SUBPEL:
      self->subpel = (GvcMvSubpel) g_value_get_enum (value);
      break;
    case PROP_LAMBDA:
      self->lambda = g_value_get_uint (value);
      break;
    case PROP_DRAW:
      self->draw = g_value_get_boolean (value);
      break;
    case PROP_POST_MESSAGES:
      self->post_messages = g_value_get_boolean (value);
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

  /* Drawing writes into the buffer: it leaves passthrough for in-place. This takes the
   * object lock itself. */
  if (prop_id == PROP_DRAW)
    gst_base_transform_set_passthrough (GST_BASE_TRANSFORM (self),
        !g_value_get_boolean (value));
}

static void
gvc_cuda_mv_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GvcCudaMv *self = GVC_CUDA_MV (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_BLOCK_SIZE:
      g_value_set_enum (value, self->block_size);
      break;
    case PROP_SEARCH_RANGE:
      g_value_set_int (value, self->search_range);
      break;
    case PROP_SUBPEL:
      g_value_set_enum (value, self->subpel);
      break;
    case PROP_LAMBDA:
      g_value_set_uint (value, self->lambda);
      break;
    case PROP_DRAW:
      g_value_set_boolean (value, self->draw);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
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
gvc_cuda_mv_finalize (GObject * object)
{
  GvcCudaMv *self = GVC_CUDA_MV (object);

  g_free (self->active_backend);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

#if GVC_CUDAMV_CUDA
static void
gvc_cuda_mv_set_context (GstElement * element, GstContext * context)
{
  GvcCudaMv *self = GVC_CUDA_MV (element);
  gint device_id;

  GST_OBJECT_LOCK (self);
  device_id = self->device_id;
  GST_OBJECT_UNLOCK (self);

  gst_cuda_handle_set_context (element, context, device_id, &self->context);

  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}
#endif

static gboolean
gvc_cuda_mv_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
#if GVC_CUDAMV_CUDA
  GvcCudaMv *self = GVC_CUDA_MV (trans);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT &&
      gst_cuda_handle_context_query (GST_ELEMENT (self), query, self->context))
    return TRUE;
#endif

  return GST_BASE_TRANSFORM_CLASS (parent_class)->query (trans, direction,
      query);
}

/* Picks and creates the backend. The CUDA backend needs a GstCudaContext, shared with the
 * rest of the pipeline through GstContext when one exists. */
static gboolean
gvc_cuda_mv_start (GstBaseTransform * trans)
{
  GvcCudaMv *self = GVC_CUDA_MV (trans);
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
  self->engine->on_device = backend->location () == gvc::MemoryLocation::Device;
  self->engine->search = backend->motion_search ();
  self->engine->backend = std::move (backend);
  gvc_cuda_mv_set_active_backend (self, self->engine->backend->name ());
  GST_INFO_OBJECT (self, "Using the %s backend",
      self->engine->backend->name ());

  return TRUE;
}

static gboolean
gvc_cuda_mv_stop (GstBaseTransform * trans)
{
  GvcCudaMv *self = GVC_CUDA_MV (trans);

  if (self->engine) {
#if GVC_CUDAMV_CUDA
    GvcCudaContextGuard guard (self->context);
#endif
    self->engine->release_buffers ();
    delete self->engine;
    self->engine = nullptr;
  }
#if GVC_CUDAMV_CUDA
  gst_clear_object (&self->context);
#endif
  gvc_cuda_mv_set_active_backend (self, "none");

  return TRUE;
}

/* Refuses, with a message a user understands, caps the search cannot work on. Unsupported
 * formats are also kept out by the pad templates; this says why at the CAPS event. */
static gboolean
gvc_cuda_mv_check_caps (GvcCudaMv * self, GstCaps * caps)
{
  GstVideoInfo info;
  GstStructure *s = gst_caps_get_structure (caps, 0);
  const gchar *format = gst_structure_get_string (s, "format");

  if (!format || (g_strcmp0 (format, "NV12") != 0 &&
          g_strcmp0 (format, "I420") != 0)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("cudamv accepts NV12 or I420 video only, not %s.",
            format ? format : gst_structure_get_name (s)),
        ("caps: %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  if (!gst_video_info_from_caps (&info, caps)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("cudamv could not parse the video caps."), ("caps: %" GST_PTR_FORMAT,
            caps));
    return FALSE;
  }
  if (GST_VIDEO_INFO_WIDTH (&info) % 2 || GST_VIDEO_INFO_HEIGHT (&info) % 2) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("cudamv needs an even frame width and height, got %dx%d.",
            GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info)),
        ("caps: %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  return TRUE;
}

/* Fixed raw-video caps of a format we cannot take still reach the CAPS event, where they
 * are refused with a message that says why; probes (unfixed caps) get the plain answer,
 * and caps queries offer NV12 and I420 only, so negotiation never picks another format. */
static gboolean
gvc_cuda_mv_accept_caps (GstBaseTransform * trans, GstPadDirection direction,
    GstCaps * caps)
{
  if (GST_BASE_TRANSFORM_CLASS (parent_class)->accept_caps (trans, direction,
          caps))
    return TRUE;

  return direction == GST_PAD_SINK && gst_caps_is_fixed (caps) &&
      gst_structure_has_name (gst_caps_get_structure (caps, 0), "video/x-raw");
}

static gboolean
gvc_cuda_mv_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GvcCudaMv *self = GVC_CUDA_MV (trans);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
      if (!gvc_cuda_mv_check_caps (self, caps)) {
        gst_event_unref (event);
        return FALSE;
      }
      break;
    }
    case GST_EVENT_FLUSH_STOP:
      /* After a seek the previous frame is no reference for the next one. */
      if (self->engine)
        self->engine->have_ref = false;
      break;
    default:
      break;
  }

  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

static gboolean
gvc_cuda_mv_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    G_GNUC_UNUSED GstCaps * outcaps)
{
  GvcCudaMv *self = GVC_CUDA_MV (trans);

  if (!gvc_cuda_mv_check_caps (self, incaps))
    return FALSE;
  gst_video_info_from_caps (&self->info, incaps);
  if (self->engine)
    self->engine->have_ref = false;

  return TRUE;
}

/* In passthrough the buffer may be shared; the meta needs a writable one. A shallow copy
 * shares the memory, so the pixels still are not copied. */
static GstFlowReturn
gvc_cuda_mv_prepare_output_buffer (GstBaseTransform * trans,
    GstBuffer * input, GstBuffer ** outbuf)
{
  if (gst_base_transform_is_passthrough (trans)) {
    *outbuf = gst_buffer_is_writable (input) ? input : gst_buffer_copy (input);
    return *outbuf ? GST_FLOW_OK : GST_FLOW_ERROR;
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->prepare_output_buffer (trans,
      input, outbuf);
}

static gvc::BlockSize
to_block_size (GvcMvBlockSize b)
{
  switch (b) {
    case GVC_MV_BLOCK_8X8:
      return gvc::BlockSize::B8x8;
    case GVC_MV_BLOCK_4X4:
      return gvc::BlockSize::B4x4;
    case GVC_MV_BLOCK_AUTO:
      return gvc::BlockSize::Auto;
    default:
      return gvc::BlockSize::B16x16;
  }
}

/* (Re)allocates the backend buffers for a frame size. */
static gboolean
gvc_cuda_mv_ensure_buffers (GvcCudaMv * self, int width, int height)
{
  Engine *e = self->engine;
  size_t plane_bytes = size_t (width) * height;
  int mb_cols = gvc::mb_count (width), mb_rows = gvc::mb_count (height);

  if (e->width == width && e->height == height && e->planes[0])
    return TRUE;

  e->release_buffers ();
  for (auto & p : e->planes) {
    p = static_cast < uint8_t * >(e->backend->allocate (plane_bytes));
    if (!p)
      return FALSE;
  }
  e->parts.mb_cols = mb_cols;
  e->parts.mb_rows = mb_rows;
  e->parts.loc = e->backend->location ();
  e->parts.data = static_cast < gvc::MbPartitions * >(e->backend->allocate
      (sizeof (gvc::MbPartitions) * mb_cols * mb_rows));
  if (!e->parts.data)
    return FALSE;
  e->width = width;
  e->height = height;
  e->have_ref = false;
  return TRUE;
}

/* Copies the luma plane of @buf into the current plane: a device-to-device copy for CUDA
 * memory of our context, one upload for system memory, a memcpy on the CPU backend. */
static gboolean
gvc_cuda_mv_load_luma (GvcCudaMv * self, GstBuffer * buf)
{
  Engine *e = self->engine;
  GstVideoFrame frame;
  uint8_t *dst = e->planes[e->cur];
  const int w = e->width, h = e->height;

#if GVC_CUDAMV_CUDA
  if (e->on_device) {
    GstMemory *mem = gst_buffer_peek_memory (buf, 0);
    gboolean on_gpu = gst_buffer_n_memory (buf) == 1 && gst_is_cuda_memory (mem)
        && GST_CUDA_MEMORY_CAST (mem)->context == self->context;
    GstMapFlags flags = (GstMapFlags) (on_gpu ? (GST_MAP_READ | GST_MAP_CUDA) :
        GST_MAP_READ);
    gboolean ok;

    if (!gst_video_frame_map (&frame, &self->info, buf, flags))
      return FALSE;
    ok = gvc_cuda_copy_2d (dst, w, TRUE, GST_VIDEO_FRAME_PLANE_DATA (&frame, 0),
        GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0), on_gpu, w, h);
    gst_video_frame_unmap (&frame);
    return ok;
  }
#endif

  if (!gst_video_frame_map (&frame, &self->info, buf, GST_MAP_READ))
    return FALSE;
  const uint8_t *src = (const uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (&frame, 0);
  gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);
  for (int y = 0; y < h; y++)
    memcpy (dst + size_t (y) * w, src + size_t (y) * stride, w);
  gst_video_frame_unmap (&frame);
  return TRUE;
}

/* Runs the search of the current plane against the reference and returns the block field
 * in a new GstMemory (GstCudaMemory on the CUDA backend) plus a host copy when asked. */
static GstMemory *
gvc_cuda_mv_search (GvcCudaMv * self, const gvc::MeParams & params,
    gvc::BlockSize size, int bw, int bh, int cols, int rows, gsize * stride,
    bool want_host)
{
  Engine *e = self->engine;
  const gvc::MemoryLocation loc = e->backend->location ();
  gvc::PlaneView cur { e->planes[e->cur], e->width, e->width, e->height, loc };
  gvc::PlaneView ref { e->planes[e->cur ^ 1], e->width, e->width, e->height,
      loc };
  const size_t n = size_t (cols) * rows;
  gvc::Status st = e->search->run (cur, ref, params, e->parts);

  if (!st.ok ()) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED,
        ("Motion search failed: %s", st.message ().c_str ()), (NULL));
    return NULL;
  }

  if (want_host)
    e->host_field.resize (n);

#if GVC_CUDAMV_CUDA
  if (e->on_device) {
    GstVideoInfo vinfo;
    GstMemory *mem;
    GstMapInfo map;
    gboolean ok;

    if (e->field_capacity < n) {
      if (e->field)
        e->backend->release (e->field);
      e->field = static_cast < gvc::MvCost * >(e->backend->allocate (n *
              sizeof (gvc::MvCost)));
      e->field_capacity = e->field ? n : 0;
      if (!e->field) {
        GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
            ("Out of GPU memory for the motion-vector field."), (NULL));
        return NULL;
      }
    }
    gvc::MvBlockField out { e->field, bw, bh, cols, rows, loc };
    st = e->search->select_blocks (e->parts, size, out);
    if (st.ok ())
      st = e->backend->synchronize ();
    if (!st.ok ()) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED,
          ("Block selection failed: %s", st.message ().c_str ()), (NULL));
      return NULL;
    }

    /* One row of records per picture row. GstCudaMemory (1.22) allocates only video
     * formats it knows, GRAY8 not among them: an RGBA picture of 2 * cols pixels is
     * cols * 8 bytes wide, one pitched row per row of blocks. */
    gst_video_info_set_format (&vinfo, GST_VIDEO_FORMAT_RGBA,
        cols * sizeof (gvc::MvCost) / 4, rows);
    mem = e->reuse_field (cols, rows);
    if (!mem) {
      /* 1.22 takes no NULL allocator: the one gst_cuda_memory_init_once() registered. */
      GstAllocator *allocator = gst_allocator_find (GST_CUDA_MEMORY_TYPE_NAME);
      mem = allocator ? gst_cuda_allocator_alloc (GST_CUDA_ALLOCATOR (allocator),
          self->context, &vinfo) : NULL;
      if (allocator)
        gst_object_unref (allocator);
      if (!mem) {
        GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
            ("Out of GPU memory for the motion-vector meta."), (NULL));
        return NULL;
      }
      e->keep_field (mem);
    }
    *stride = GST_VIDEO_INFO_PLANE_STRIDE (&GST_CUDA_MEMORY_CAST (mem)->info, 0);
    if (!gst_memory_map (mem, &map,
            (GstMapFlags) (GST_MAP_WRITE | GST_MAP_CUDA))) {
      gst_memory_unref (mem);
      return NULL;
    }
    ok = gvc_cuda_copy_2d (map.data, *stride, TRUE, e->field,
        cols * sizeof (gvc::MvCost), TRUE, cols * sizeof (gvc::MvCost), rows);
    gst_memory_unmap (mem, &map);
    if (ok && want_host)
      ok = e->backend->copy (e->host_field.data (), gvc::MemoryLocation::Host,
          e->field, loc, n * sizeof (gvc::MvCost)).ok ();
    if (!ok) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED,
          ("Copying the motion-vector field on the GPU failed."), (NULL));
      gst_memory_unref (mem);
      return NULL;
    }
    return mem;
  }
#endif

  GstMemory *mem = e->reuse_field (cols, rows);
  GstMapInfo map;

  if (!mem) {
    mem = gst_allocator_alloc (NULL, n * sizeof (gvc::MvCost), NULL);
    if (mem)
      e->keep_field (mem);
  }

  if (!mem || !gst_memory_map (mem, &map, GST_MAP_WRITE)) {
    if (mem)
      gst_memory_unref (mem);
    return NULL;
  }
  gvc::MvBlockField out { reinterpret_cast < gvc::MvCost * >(map.data), bw, bh,
      cols, rows, gvc::MemoryLocation::Host };
  st = e->search->select_blocks (e->parts, size, out);
  if (st.ok () && want_host)
    memcpy (e->host_field.data (), map.data, n * sizeof (gvc::MvCost));
  gst_memory_unmap (mem, &map);
  if (!st.ok ()) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED,
        ("Block selection failed: %s", st.message ().c_str ()), (NULL));
    gst_memory_unref (mem);
    return NULL;
  }
  *stride = cols * sizeof (gvc::MvCost);
  return mem;
}

static void
gvc_cuda_mv_post_stats (GvcCudaMv * self, GstBuffer * buf, int cols, int rows)
{
  gvc::MvStats stats = gvc::mv_stats (self->engine->host_field.data (),
      size_t (cols) * rows);
  GstStructure *s = gst_structure_new ("cudamv",
      "timestamp", G_TYPE_UINT64, GST_BUFFER_PTS (buf),
      "reference-timestamp", G_TYPE_UINT64, self->engine->ref_pts,
      "blocks", G_TYPE_UINT, (guint) (cols * rows),
      "mean-length", G_TYPE_DOUBLE, stats.mean_length,
      "max-length", G_TYPE_DOUBLE, stats.max_length,
      "moving-fraction", G_TYPE_DOUBLE, stats.moving_fraction,
      NULL);

  gst_element_post_message (GST_ELEMENT (self),
      gst_message_new_element (GST_OBJECT (self), s));
}

static gboolean
gvc_cuda_mv_draw (GvcCudaMv * self, GstBuffer * buf, int bw, int bh, int cols,
    int rows)
{
  GstVideoFrame frame;

  /* CUDA memory is mapped for the CPU here (downloaded and uploaded again): drawing is a
   * debugging aid, not the fast path. */
  if (!gst_video_frame_map (&frame, &self->info, buf, GST_MAP_WRITE))
    return FALSE;
  gvc::MutablePlaneView luma { (uint8_t *) GST_VIDEO_FRAME_PLANE_DATA (&frame, 0),
    GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0), GST_VIDEO_FRAME_WIDTH (&frame),
    GST_VIDEO_FRAME_HEIGHT (&frame), gvc::MemoryLocation::Host };
  gvc::draw_mv_arrows (luma, self->engine->host_field.data (), bw, bh, cols,
      rows);
  gst_video_frame_unmap (&frame);
  return TRUE;
}

static GstFlowReturn
gvc_cuda_mv_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GvcCudaMv *self = GVC_CUDA_MV (trans);
  Engine *e = self->engine;
  gvc::MeParams params;
  gvc::BlockSize size;
  gboolean draw, post;
  int bw, bh, cols, rows;
  GstMemory *field = NULL;
  gsize stride = 0;

  if (!e || GST_VIDEO_INFO_FORMAT (&self->info) == GST_VIDEO_FORMAT_UNKNOWN)
    return GST_FLOW_NOT_NEGOTIATED;

  GST_OBJECT_LOCK (self);
  params.range = self->search_range;
  params.lambda = self->lambda;
  params.subpel = (gvc::Subpel) self->subpel;
  size = to_block_size (self->block_size);
  draw = self->draw;
  post = self->post_messages;
  GST_OBJECT_UNLOCK (self);

  {
#if GVC_CUDAMV_CUDA
    GvcCudaContextGuard guard (e->on_device ? self->context : nullptr);
    if (e->on_device && !guard.ok ()) {
      GST_ELEMENT_ERROR (self, LIBRARY, FAILED,
          ("The CUDA context could not be made current."), (NULL));
      return GST_FLOW_ERROR;
    }
#endif
    if (!gvc_cuda_mv_ensure_buffers (self, GST_VIDEO_INFO_WIDTH (&self->info),
            GST_VIDEO_INFO_HEIGHT (&self->info))) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Out of memory for the motion search's frame buffers."), (NULL));
      return GST_FLOW_ERROR;
    }
    if (!gvc_cuda_mv_load_luma (self, buf)) {
      GST_ELEMENT_ERROR (self, RESOURCE, READ,
          ("Could not read the frame's luma plane."), (NULL));
      return GST_FLOW_ERROR;
    }

    if (e->have_ref) {
      gvc::block_field_dims (size, gvc::mb_count (e->width),
          gvc::mb_count (e->height), &bw, &bh, &cols, &rows);
      field = gvc_cuda_mv_search (self, params, size, bw, bh, cols, rows,
          &stride, draw || post);
      if (!field)
        return GST_FLOW_ERROR;
    }
  }

  if (field) {
    gvc_mv_meta_add (buf, bw, bh, cols, rows, stride, e->ref_pts,
        GVC_MV_DIRECTION_PAST, field);
    if (draw && !gvc_cuda_mv_draw (self, buf, bw, bh, cols, rows)) {
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("Could not map the frame to draw the vectors."), (NULL));
      return GST_FLOW_ERROR;
    }
    if (post)
      gvc_cuda_mv_post_stats (self, buf, cols, rows);
  }

  /* This frame (before drawing) is the next one's reference. */
  e->cur ^= 1;
  e->have_ref = true;
  e->ref_pts = GST_BUFFER_PTS (buf);

  return GST_FLOW_OK;
}

static void
gvc_cuda_mv_class_init (GvcCudaMvClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  const GParamFlags rw = (GParamFlags) (G_PARAM_READWRITE |
      G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  const GParamFlags rw_ready = (GParamFlags) (G_PARAM_READWRITE |
      G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);

  gobject_class->set_property = gvc_cuda_mv_set_property;
  gobject_class->get_property = gvc_cuda_mv_get_property;
  gobject_class->finalize = gvc_cuda_mv_finalize;

  g_object_class_install_property (gobject_class, PROP_BLOCK_SIZE,
      g_param_spec_enum ("block-size", "Block size",
          "Size of the blocks of the vector field in the meta",
          GVC_TYPE_MV_BLOCK_SIZE, DEFAULT_BLOCK_SIZE, rw));
  g_object_class_install_property (gobject_class, PROP_SEARCH_RANGE,
      g_param_spec_int ("search-range", "Search range",
          "Integer positions -range..range-1 are searched in x and y (pixels)",
          gvc::kMinSearchRange, gvc::kMaxSearchRange, DEFAULT_SEARCH_RANGE,
          rw));
  g_object_class_install_property (gobject_class, PROP_SUBPEL,
      g_param_spec_enum ("subpel", "Sub-pel refinement",
          "Refinement after the integer search", GVC_TYPE_MV_SUBPEL,
          DEFAULT_SUBPEL, rw));
  g_object_class_install_property (gobject_class, PROP_LAMBDA,
      g_param_spec_uint ("lambda", "Lambda",
          "Weight of the vector bits in the cost (SAD + lambda * bits)",
          0, 65535, DEFAULT_LAMBDA, rw));
  g_object_class_install_property (gobject_class, PROP_DRAW,
      g_param_spec_boolean ("draw", "Draw",
          "Draw the vectors as arrows onto the luma plane (in place)",
          DEFAULT_DRAW, rw));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post a \"cudamv\" element message per frame with the mean and "
          "maximum vector length (pixels) and the fraction of moving blocks",
          DEFAULT_POST_MESSAGES, rw));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where the search runs", GVC_TYPE_BACKEND_CHOICE, DEFAULT_BACKEND,
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
      "CUDA motion estimation", "Filter/Analyzer/Video",
      "Full-search block motion estimation; attaches a motion-vector meta",
      "GPU video coding project");

#if GVC_CUDAMV_CUDA
  element_class->set_context = GST_DEBUG_FUNCPTR (gvc_cuda_mv_set_context);
#endif

  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_ip_on_passthrough = TRUE;
  trans_class->start = GST_DEBUG_FUNCPTR (gvc_cuda_mv_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gvc_cuda_mv_stop);
  trans_class->query = GST_DEBUG_FUNCPTR (gvc_cuda_mv_query);
  trans_class->accept_caps = GST_DEBUG_FUNCPTR (gvc_cuda_mv_accept_caps);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gvc_cuda_mv_sink_event);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gvc_cuda_mv_set_caps);
  trans_class->prepare_output_buffer =
      GST_DEBUG_FUNCPTR (gvc_cuda_mv_prepare_output_buffer);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR (gvc_cuda_mv_transform_ip);

  gst_type_mark_as_plugin_api (GVC_TYPE_MV_BLOCK_SIZE, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GVC_TYPE_MV_SUBPEL, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GVC_TYPE_BACKEND_CHOICE, (GstPluginAPIFlags) 0);

  GST_DEBUG_CATEGORY_INIT (gvc_cuda_mv_debug, "cudamv", 0,
      "CUDA motion estimation");
}

static void
gvc_cuda_mv_init (GvcCudaMv * self)
{
  self->block_size = DEFAULT_BLOCK_SIZE;
  self->search_range = DEFAULT_SEARCH_RANGE;
  self->subpel = DEFAULT_SUBPEL;
  self->lambda = DEFAULT_LAMBDA;
  self->draw = DEFAULT_DRAW;
  self->post_messages = DEFAULT_POST_MESSAGES;
  self->backend = DEFAULT_BACKEND;
  self->device_id = DEFAULT_CUDA_DEVICE_ID;
  self->active_backend = g_strdup ("none");
  gst_video_info_init (&self->info);

  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
  gst_base_transform_set_passthrough (GST_BASE_TRANSFORM (self), TRUE);
}
