// gvccudamv.h: the cudamv element: full-search block motion estimation, GvcMvMeta on every buffer
#pragma once

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GVC_TYPE_CUDA_MV (gvc_cuda_mv_get_type ())
G_DECLARE_FINAL_TYPE (GvcCudaMv, gvc_cuda_mv, GVC, CUDA_MV, GstBaseTransform)

/* Which block field the meta carries (maps onto gvc::BlockSize). */
typedef enum {
  GVC_MV_BLOCK_16X16 = 0,
  GVC_MV_BLOCK_8X8 = 1,
  GVC_MV_BLOCK_4X4 = 2,
  GVC_MV_BLOCK_AUTO = 3,
} GvcMvBlockSize;

typedef enum {
  GVC_MV_SUBPEL_NONE = 0,
  GVC_MV_SUBPEL_HALF = 1,
  GVC_MV_SUBPEL_QUARTER = 2,
} GvcMvSubpel;

#define GVC_TYPE_MV_BLOCK_SIZE (gvc_mv_block_size_get_type ())
GType gvc_mv_block_size_get_type (void);
#define GVC_TYPE_MV_SUBPEL (gvc_mv_subpel_get_type ())
GType gvc_mv_subpel_get_type (void);

GST_ELEMENT_REGISTER_DECLARE (cudamv);

G_END_DECLS
