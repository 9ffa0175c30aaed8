/* gvcmvmeta.c: GvcMvMeta registration, attach/map and the AVMotionVector export */
#include "gst/mvmeta/gvcmvmeta.h"

#include <string.h>

#include <gst/video/video.h>

/* GstCudaMemory's type name; compared by string so this library needs no CUDA. */
#define GVC_CUDA_MEMORY_TYPE_NAME "gst.cuda.memory"

GType
gvc_mv_meta_api_get_type (void)
{
  static GType type = 0;
  /* Vectors depend on the picture geometry, not on its pixel format. */
  static const gchar *tags[] = { GST_META_TAG_VIDEO_STR,
    GST_META_TAG_VIDEO_SIZE_STR, GST_META_TAG_VIDEO_ORIENTATION_STR, NULL
  };

  if (g_once_init_enter (&type)) {
    GType t = gst_meta_api_type_register ("GvcMvMetaAPI", tags);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gboolean
gvc_mv_meta_init (GstMeta * meta, G_GNUC_UNUSED gpointer params,
    G_GNUC_UNUSED GstBuffer * buffer)
{
  GvcMvMeta *m = (GvcMvMeta *) meta;

  m->block_width = m->block_height = 0;
  m->cols = m->rows = 0;
  m->stride = 0;
  m->ref_pts = GST_CLOCK_TIME_NONE;
  m->direction = GVC_MV_DIRECTION_PAST;
  m->memory = NULL;
  return TRUE;
}

static void
gvc_mv_meta_free (GstMeta * meta, G_GNUC_UNUSED GstBuffer * buffer)
{
  GvcMvMeta *m = (GvcMvMeta *) meta;

  if (m->memory)
    gst_memory_unref (m->memory);
  m->memory = NULL;
}

static gboolean
gvc_mv_meta_transform (GstBuffer * dest, GstMeta * meta,
    G_GNUC_UNUSED GstBuffer * buffer, GQuark type, G_GNUC_UNUSED gpointer data)
{
  GvcMvMeta *m = (GvcMvMeta *) meta;

  /* Only plain copies keep the field: scaling or cropping moves the blocks. */
  if (!GST_META_TRANSFORM_IS_COPY (type))
    return FALSE;

  return gvc_mv_meta_add (dest, m->block_width, m->block_height, m->cols,
      m->rows, m->stride, m->ref_pts, m->direction,
      gst_memory_ref (m->memory)) != NULL;
}

const GstMetaInfo *
gvc_mv_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter ((GstMetaInfo **) & info)) {
    const GstMetaInfo *i = gst_meta_register (GVC_MV_META_API_TYPE,
        "GvcMvMeta", sizeof (GvcMvMeta), gvc_mv_meta_init, gvc_mv_meta_free,
        gvc_mv_meta_transform);
    g_once_init_leave ((GstMetaInfo **) & info, (GstMetaInfo *) i);
  }
  return info;
}

GvcMvMeta *
gvc_mv_meta_add (GstBuffer * buffer, guint block_width, guint block_height,
    guint cols, guint rows, gsize stride, GstClockTime ref_pts,
    GvcMvDirection direction, GstMemory * memory)
{
  GvcMvMeta *m;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (memory != NULL, NULL);
  g_return_val_if_fail (cols > 0 && rows > 0, NULL);
  g_return_val_if_fail (stride >= cols * sizeof (GvcMvCost), NULL);

  if (gst_memory_get_sizes (memory, NULL, NULL) <
      (rows - 1) * stride + cols * sizeof (GvcMvCost)) {
    g_critical ("gvc_mv_meta_add: memory too small for %ux%u vectors", cols,
        rows);
    gst_memory_unref (memory);
    return NULL;
  }

  m = (GvcMvMeta *) gst_buffer_add_meta (buffer, GVC_MV_META_INFO, NULL);
  if (!m) {
    gst_memory_unref (memory);
    return NULL;
  }
  m->block_width = block_width;
  m->block_height = block_height;
  m->cols = cols;
  m->rows = rows;
  m->stride = stride;
  m->ref_pts = ref_pts;
  m->direction = direction;
  m->memory = memory;
  return m;
}

GvcMvMeta *
gvc_mv_meta_get (GstBuffer * buffer)
{
  return (GvcMvMeta *) gst_buffer_get_meta (buffer, GVC_MV_META_API_TYPE);
}

gboolean
gvc_mv_meta_map (GvcMvMeta * meta, GvcMvMap * map)
{
  g_return_val_if_fail (meta != NULL && meta->memory != NULL, FALSE);
  g_return_val_if_fail (map != NULL, FALSE);

  memset (map, 0, sizeof (*map));
  if (!gst_memory_map (meta->memory, &map->info, GST_MAP_READ))
    return FALSE;
  map->memory = gst_memory_ref (meta->memory);
  map->vectors = (const GvcMvCost *) map->info.data;
  map->stride = meta->stride;
  map->cols = meta->cols;
  map->rows = meta->rows;
  return TRUE;
}

void
gvc_mv_meta_unmap (GvcMvMap * map)
{
  g_return_if_fail (map != NULL && map->memory != NULL);

  gst_memory_unmap (map->memory, &map->info);
  gst_memory_unref (map->memory);
  memset (map, 0, sizeof (*map));
}

gboolean
gvc_mv_meta_is_on_gpu (GvcMvMeta * meta)
{
  g_return_val_if_fail (meta != NULL && meta->memory != NULL, FALSE);

  return gst_memory_is_type (meta->memory, GVC_CUDA_MEMORY_TYPE_NAME);
}

GvcAVMotionVector *
gvc_mv_meta_export_av (GvcMvMeta * meta, gsize * n_vectors)
{
  GvcMvMap map;
  GvcAVMotionVector *out;
  guint row, col;

  g_return_val_if_fail (meta != NULL, NULL);
  g_return_val_if_fail (n_vectors != NULL, NULL);

  *n_vectors = 0;
  if (!gvc_mv_meta_map (meta, &map))
    return NULL;

  out = g_new0 (GvcAVMotionVector, (gsize) map.cols * map.rows);
  for (row = 0; row < map.rows; row++) {
    for (col = 0; col < map.cols; col++) {
      const GvcMvCost *v = gvc_mv_map_at (&map, col, row);
      GvcAVMotionVector *av = &out[(gsize) row * map.cols + col];

      av->source = meta->direction == GVC_MV_DIRECTION_PAST ? -1 : 1;
      av->w = (guint8) meta->block_width;
      av->h = (guint8) meta->block_height;
      av->dst_x = (gint16) (col * meta->block_width + meta->block_width / 2);
      av->dst_y = (gint16) (row * meta->block_height + meta->block_height / 2);
      av->motion_x = v->mvx;
      av->motion_y = v->mvy;
      av->motion_scale = 4;
      /* FFmpeg's convention: src = dst + motion / scale (integer division). */
      av->src_x = (gint16) (av->dst_x + av->motion_x / av->motion_scale);
      av->src_y = (gint16) (av->dst_y + av->motion_y / av->motion_scale);
      av->flags = 0;
    }
  }
  *n_vectors = (gsize) map.cols * map.rows;
  gvc_mv_meta_unmap (&map);
  return out;
}
