/* gvcmvmeta.h: GvcMvMeta, a motion-vector field attached to a video buffer (public API) */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#ifndef GVC_MV_API
#  if defined(BUILDING_GVC_MV) && defined(__GNUC__)
#    define GVC_MV_API __attribute__ ((visibility ("default")))
#  else
#    define GVC_MV_API
#  endif
#endif

/**
 * GvcMvCost:
 * @mvx: horizontal vector in quarter-pel units
 * @mvy: vertical vector in quarter-pel units
 * @cost: matching cost (SAD + lambda * vector bits) of the block
 *
 * One vector of the field. It points from the block of the current frame into
 * the reference frame: the block's content is found in the reference at
 * (x + mvx / 4, y + mvy / 4). 8 bytes, the record layout of the stored array.
 */
typedef struct {
  gint16 mvx;
  gint16 mvy;
  guint32 cost;
} GvcMvCost;

G_STATIC_ASSERT (sizeof (GvcMvCost) == 8);

/**
 * GvcMvDirection:
 * @GVC_MV_DIRECTION_PAST: the reference is an earlier frame (the previous one)
 * @GVC_MV_DIRECTION_FUTURE: the reference is a later frame
 */
typedef enum {
  GVC_MV_DIRECTION_PAST = -1,
  GVC_MV_DIRECTION_FUTURE = 1,
} GvcMvDirection;

/**
 * GvcAVMotionVector:
 *
 * The field layout of FFmpeg's AVMotionVector (libavutil/motion_vector.h), so
 * that records can be handed to code written for FFmpeg's side data.
 * @source: -1 when the reference is in the past, 1 in the future
 * @w, @h: block size
 * @src_x, @src_y: where the block comes from in the reference (dst + motion / scale)
 * @dst_x, @dst_y: the block centre in the current frame
 * @flags: always 0
 * @motion_x, @motion_y: the vector in 1/@motion_scale pel
 * @motion_scale: 4 (quarter-pel)
 */
typedef struct {
  gint32 source;
  guint8 w, h;
  gint16 src_x, src_y;
  gint16 dst_x, dst_y;
  guint64 flags;
  gint32 motion_x, motion_y;
  guint16 motion_scale;
} GvcAVMotionVector;

/**
 * GvcMvMeta:
 * @meta: parent #GstMeta
 * @block_width: width of a block in luma samples
 * @block_height: height of a block in luma samples
 * @cols: blocks per row (covers the frame width rounded up to 16)
 * @rows: block rows (covers the frame height rounded up to 16)
 * @stride: bytes between the starts of two rows of records in @memory
 * @ref_pts: PTS of the reference frame
 * @direction: where the reference lies in time
 * @memory: @rows rows of @cols #GvcMvCost records, row-major. A GstCudaMemory
 *   when the field was computed on the GPU (it is downloaded when mapped for
 *   the CPU), system memory otherwise. Read it with gvc_mv_meta_map().
 */
typedef struct {
  GstMeta meta;

  guint block_width;
  guint block_height;
  guint cols;
  guint rows;
  gsize stride;
  GstClockTime ref_pts;
  GvcMvDirection direction;
  GstMemory *memory;
} GvcMvMeta;

/**
 * GvcMvMap:
 * @vectors: the first record of row 0
 * @stride: bytes between two rows of records
 * @cols, @rows: field size
 *
 * A mapped field; use gvc_mv_map_at() to reach a record.
 */
typedef struct {
  const GvcMvCost *vectors;
  gsize stride;
  guint cols;
  guint rows;

  /*< private >*/
  GstMapInfo info;
  GstMemory *memory;
} GvcMvMap;

#define GVC_MV_META_API_TYPE (gvc_mv_meta_api_get_type ())
#define GVC_MV_META_INFO (gvc_mv_meta_get_info ())

GVC_MV_API GType gvc_mv_meta_api_get_type (void);
GVC_MV_API const GstMetaInfo *gvc_mv_meta_get_info (void);

/* Attaches a field to @buffer (which must be writable). Takes ownership of
 * @memory, which must hold at least (@rows - 1) * @stride + @cols * 8 bytes. */
GVC_MV_API GvcMvMeta *gvc_mv_meta_add (GstBuffer * buffer, guint block_width,
    guint block_height, guint cols, guint rows, gsize stride,
    GstClockTime ref_pts, GvcMvDirection direction, GstMemory * memory);

/* The field on @buffer, or NULL. */
GVC_MV_API GvcMvMeta *gvc_mv_meta_get (GstBuffer * buffer);

/* Maps the field for reading on the CPU (downloads it from the GPU if needed). */
GVC_MV_API gboolean gvc_mv_meta_map (GvcMvMeta * meta, GvcMvMap * map);
GVC_MV_API void gvc_mv_meta_unmap (GvcMvMap * map);

/* TRUE when the field is held in GPU memory (a GstCudaMemory). */
GVC_MV_API gboolean gvc_mv_meta_is_on_gpu (GvcMvMeta * meta);

/* Exports the field as @cols * @rows records in FFmpeg's AVMotionVector layout,
 * row-major; free with g_free(). Returns NULL (and 0) if it cannot be mapped. */
GVC_MV_API GvcAVMotionVector *gvc_mv_meta_export_av (GvcMvMeta * meta,
    gsize * n_vectors);

static inline const GvcMvCost *
gvc_mv_map_at (const GvcMvMap * map, guint col, guint row)
{
  return (const GvcMvCost *) ((const guint8 *) map->vectors +
      row * map->stride) + col;
}

G_END_DECLS
