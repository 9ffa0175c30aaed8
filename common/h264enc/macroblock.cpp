// macroblock.cpp: residual coding and reconstruction of a macroblock's blocks (8.5)
#include "common/h264enc/macroblock.h"

#include <cstring>

#include "common/h264enc/tables.h"
#include "common/h264enc/transform.h"

namespace gvc::h264 {

static inline uint8_t clip1(int v) { return uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v)); }

// Residual of a 4x4 block at (x, y) of plane p.
static void diff4x4(const uint8_t* src, int ss, const uint8_t* pred, int ps, int16_t out[16]) {
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++) out[4 * y + x] = int16_t(src[y * ss + x] - pred[y * ps + x]);
}

// rec = Clip1(pred + idct(d)); returns the SSD against src.
static int64_t recon4x4(const int32_t d[16], const uint8_t* pred, int ps, const uint8_t* src,
                        int ss, uint8_t* rec, int rs) {
  int32_t r[16];
  idct4x4(d, r);
  int64_t ssd = 0;
  for (int y = 0; y < 4; y++) {
    for (int x = 0; x < 4; x++) {
      uint8_t v = clip1(pred[y * ps + x] + r[4 * y + x]);
      rec[y * rs + x] = v;
      int e = int(v) - src[y * ss + x];
      ssd += e * e;
    }
  }
  return ssd;
}

static int to_scan(const int16_t raster[16], int16_t scan[16], int start) {
  int n = 0;
  for (int i = start; i < 16; i++) {
    scan[i] = raster[kZigzag4x4[i]];
    n += scan[i] != 0;
  }
  if (start) scan[0] = 0;
  return n;
}

static void from_scan(const int16_t scan[16], int16_t raster[16]) {
  for (int i = 0; i < 16; i++) raster[kZigzag4x4[i]] = scan[i];
}

int64_t code_luma16x16(const MbPixels& px, const uint8_t pred[256], int qp, bool i16, Macroblock& mb) {
  int32_t coef[16][16];
  int16_t level[16];
  mb.cbp &= ~15;
  for (int blk = 0; blk < 16; blk++) {
    int x = 4 * kBlkX[blk], y = 4 * kBlkY[blk];
    int16_t res[16];
    diff4x4(px.src[0] + y * px.src_stride[0] + x, px.src_stride[0], pred + 16 * y + x, 16, res);
    fdct4x4(res, coef[blk]);
  }
  int32_t dcy[16] = {};
  if (i16) {
    // DC matrix in the blocks' spatial raster order, scanned in zig-zag like a 4x4 block.
    int32_t dc[16], dct[16];
    for (int blk = 0; blk < 16; blk++) dc[4 * kBlkY[blk] + kBlkX[blk]] = coef[blk][0];
    fdc_luma(dc, dct);
    int16_t dcl[16];
    quant_dc(dct, dcl, 16, qp, true);
    to_scan(dcl, mb.luma_dc, 0);
    int32_t dq[16];
    dequant_dc_luma(dcl, dq, qp);
    for (int blk = 0; blk < 16; blk++) dcy[blk] = dq[4 * kBlkY[blk] + kBlkX[blk]];
  }
  int ac_total = 0;
  for (int blk = 0; blk < 16; blk++) {
    quant4x4(coef[blk], level, qp, i16, i16 ? 1 : 0);
    int n = to_scan(level, mb.luma[blk], i16 ? 1 : 0);
    mb.total_coeff_luma[blk] = uint8_t(n);
    ac_total += n;
    if (!i16 && n) mb.cbp |= 1 << (blk >> 2);
  }
  if (i16 && ac_total) mb.cbp |= 15;
  int64_t ssd = 0;
  for (int blk = 0; blk < 16; blk++) {
    int x = 4 * kBlkX[blk], y = 4 * kBlkY[blk];
    if (!(mb.cbp & (1 << (blk >> 2)))) {  // blocks not coded are reconstructed from zero levels
      std::memset(mb.luma[blk] + (i16 ? 1 : 0), 0, sizeof(int16_t) * (i16 ? 15 : 16));
      mb.total_coeff_luma[blk] = 0;
    }
    from_scan(mb.luma[blk], level);
    int32_t d[16];
    dequant4x4(level, d, qp, i16 ? 1 : 0);
    if (i16) d[0] = dcy[blk];
    ssd += recon4x4(d, pred + 16 * y + x, 16, px.src[0] + y * px.src_stride[0] + x,
                    px.src_stride[0], px.rec[0] + y * px.rec_stride[0] + x, px.rec_stride[0]);
  }
  return ssd;
}

int64_t code_luma4x4(const MbPixels& px, int blk, const uint8_t pred[16], int qp, Macroblock& mb) {
  int x = 4 * kBlkX[blk], y = 4 * kBlkY[blk];
  const uint8_t* src = px.src[0] + y * px.src_stride[0] + x;
  int16_t res[16], level[16];
  int32_t coef[16], d[16];
  diff4x4(src, px.src_stride[0], pred, 4, res);
  fdct4x4(res, coef);
  quant4x4(coef, level, qp, true);
  mb.total_coeff_luma[blk] = uint8_t(to_scan(level, mb.luma[blk], 0));
  dequant4x4(level, d, qp);
  return recon4x4(d, pred, 4, src, px.src_stride[0], px.rec[0] + y * px.rec_stride[0] + x,
                  px.rec_stride[0]);
}

int64_t code_chroma(const MbPixels& px, const uint8_t pred[2][64], int qpc, bool intra, Macroblock& mb) {
  int32_t coef[2][4][16];
  int16_t level[16];
  int dc_nz = 0, ac_nz = 0;
  for (int c = 0; c < 2; c++) {
    const uint8_t* src = px.src[1 + c];
    int ss = px.src_stride[1 + c];
    int32_t dc[4], dct[4];
    for (int blk = 0; blk < 4; blk++) {
      int x = 4 * (blk & 1), y = 4 * (blk >> 1);
      int16_t res[16];
      diff4x4(src + y * ss + x, ss, pred[c] + 8 * y + x, 8, res);
      fdct4x4(res, coef[c][blk]);
      dc[blk] = coef[c][blk][0];
    }
    fdc_chroma(dc, dct);
    dc_nz += quant_dc(dct, mb.chroma_dc[c], 4, qpc, intra);  // chroma DC scan is raster (8.5.11.1)
    for (int blk = 0; blk < 4; blk++) {
      quant4x4(coef[c][blk], level, qpc, intra, 1);
      int n = to_scan(level, mb.chroma_ac[c][blk], 1);
      mb.total_coeff_chroma[c][blk] = uint8_t(n);
      ac_nz += n;
    }
  }
  int cbp_chroma = ac_nz ? 2 : (dc_nz ? 1 : 0);
  mb.cbp = uint8_t((mb.cbp & 15) | (cbp_chroma << 4));
  int64_t ssd = 0;
  for (int c = 0; c < 2; c++) {
    int32_t dcc[4];
    dequant_dc_chroma(mb.chroma_dc[c], dcc, qpc);
    for (int blk = 0; blk < 4; blk++) {
      int x = 4 * (blk & 1), y = 4 * (blk >> 1);
      if (cbp_chroma != 2) {
        std::memset(mb.chroma_ac[c][blk], 0, sizeof(mb.chroma_ac[c][blk]));
        mb.total_coeff_chroma[c][blk] = 0;
      }
      from_scan(mb.chroma_ac[c][blk], level);
      int32_t d[16];
      dequant4x4(level, d, qpc, 1);
      d[0] = dcc[blk];
      ssd += recon4x4(d, pred[c] + 8 * y + x, 8, px.src[1 + c] + y * px.src_stride[1 + c] + x,
                      px.src_stride[1 + c], px.rec[1 + c] + y * px.rec_stride[1 + c] + x,
                      px.rec_stride[1 + c]);
    }
  }
  return ssd;
}

void code_pcm(const MbPixels& px, Macroblock& mb) {
  uint8_t* out = mb.pcm;
  for (int p = 0; p < 3; p++) {
    int n = p ? 8 : 16;
    for (int y = 0; y < n; y++) {
      for (int x = 0; x < n; x++) {
        uint8_t v = px.src[p][y * px.src_stride[p] + x];
        *out++ = v;
        px.rec[p][y * px.rec_stride[p] + x] = v;
      }
    }
  }
  mb.cbp = 0x2f;
  std::memset(mb.total_coeff_luma, 16, sizeof(mb.total_coeff_luma));
  std::memset(mb.total_coeff_chroma, 16, sizeof(mb.total_coeff_chroma));
}

}  // namespace gvc::h264
