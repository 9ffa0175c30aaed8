// deblock.cpp: the in-loop deblocking filter of a whole picture on the CPU, in raster order
#include "common/h264enc/deblock.h"

namespace gvc::h264 {

void deblock_picture(Picture& pic, const MbMap& map, const DeblockParams& p) {
  DeblockPlanes planes;
  for (int c = 0; c < 3; c++) {
    planes.plane[c] = pic.plane[c].data();
    planes.stride[c] = pic.stride[c];
  }
  for (int my = 0; my < map.mb_height; my++)
    for (int mx = 0; mx < map.mb_width; mx++) deblock_mb(planes, map, mx, my, p);
}

}  // namespace gvc::h264
