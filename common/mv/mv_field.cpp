// mv_field.cpp: geometry of the 41 H.264 macroblock partitions
#include "common/mv/mv_field.h"

namespace gvc {

PartitionGeometry partition_geometry(int i) {
  if (i == kPart16x16) return {0, 0, 16, 16};
  if (i < kPart8x16) return {0, uint8_t(8 * (i - kPart16x8)), 16, 8};
  if (i < kPart8x8) return {uint8_t(8 * (i - kPart8x16)), 0, 8, 16};
  if (i < kPart8x4) {
    int k = i - kPart8x8;
    return {uint8_t(8 * (k & 1)), uint8_t(8 * (k >> 1)), 8, 8};
  }
  if (i < kPart4x8) {
    int k = (i - kPart8x4) >> 1, j = (i - kPart8x4) & 1;
    return {uint8_t(8 * (k & 1)), uint8_t(8 * (k >> 1) + 4 * j), 8, 4};
  }
  if (i < kPart4x4) {
    int k = (i - kPart4x8) >> 1, j = (i - kPart4x8) & 1;
    return {uint8_t(8 * (k & 1) + 4 * j), uint8_t(8 * (k >> 1)), 4, 8};
  }
  int k = (i - kPart4x4) >> 2, s = (i - kPart4x4) & 3;
  return {uint8_t(8 * (k & 1) + 4 * (s & 1)), uint8_t(8 * (k >> 1) + 4 * (s >> 1)), 4, 4};
}

}  // namespace gvc
