/* The "hardware" of the conv_bias_relu accelerator example: a fused unit that runs a
 * convolution, adds the per-channel bias and optionally clamps at zero in one pass, so the
 * intermediate tensors never leave it. This is the reference model of that unit: the
 * example's generated code calls it, and the tests check it against numpy. It allocates
 * nothing, so it runs as-is on bare metal. */
#include "conv_bias_relu.h"

#include <stddef.h>

/* The caller's buffers cannot hold more than SIZE_MAX bytes, so sizes whose element count
 * would not fit are rejected; once they pass, no index computed below can wrap. */
static int fits(size_t a, size_t b, size_t c, size_t d) {
  size_t n = a;
  if (b != 0 && n > SIZE_MAX / b) return 0;
  n *= b;
  if (c != 0 && n > SIZE_MAX / c) return 0;
  n *= c;
  if (d != 0 && n > SIZE_MAX / d) return 0;
  n *= d;
  return n <= SIZE_MAX / sizeof(float);
}

/* The kernel taps [*lo, *hi) whose input coordinate base + tap lies in [0, size). base is
 * 64-bit because y * stride can exceed int32_t even when both fit. */
static void clip(int64_t base, int32_t taps, int32_t size, int32_t* lo, int32_t* hi) {
  int64_t l = base < 0 ? -base : 0;
  int64_t h = (int64_t)size - base;
  if (h > taps) h = taps;
  if (l > h) l = h;
  *lo = (int32_t)l;
  *hi = (int32_t)h;
}

int32_t fused_conv2d_bias_relu(const float* ifmap, const float* weights, const float* bias, float* result,
                               int32_t ic, int32_t ih, int32_t iw, int32_t oc, int32_t kh, int32_t kw,
                               int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
                               int32_t oh, int32_t ow, int32_t relu) {
  int32_t o, y, x, c, ky, kx;
  if (ifmap == NULL || weights == NULL || bias == NULL || result == NULL) return -1;
  if (ic <= 0 || ih <= 0 || iw <= 0 || oc <= 0 || kh <= 0 || kw <= 0) return -1;
  if (stride_h <= 0 || stride_w <= 0 || oh <= 0 || ow <= 0) return -1;
  if (pad_top < 0 || pad_left < 0) return -1;
  if (!fits((size_t)ic, (size_t)ih, (size_t)iw, 1) || !fits((size_t)oc, (size_t)oh, (size_t)ow, 1) ||
      !fits((size_t)oc, (size_t)ic, (size_t)kh, (size_t)kw)) {
    return -1;
  }
  for (o = 0; o < oc; ++o) {
    for (y = 0; y < oh; ++y) {
      /* Taps that fall in the padding are skipped rather than multiplied by zero. */
      int64_t iy0 = (int64_t)y * stride_h - pad_top;
      int32_t ky0, ky1;
      clip(iy0, kh, ih, &ky0, &ky1);
      for (x = 0; x < ow; ++x) {
        int64_t ix0 = (int64_t)x * stride_w - pad_left;
        int32_t kx0, kx1;
        float acc = 0.0f;
        clip(ix0, kw, iw, &kx0, &kx1);
        for (c = 0; c < ic; ++c) {
          const float* in = ifmap + (size_t)c * (size_t)ih * (size_t)iw;
          const float* w = weights + ((size_t)o * (size_t)ic + (size_t)c) * (size_t)kh * (size_t)kw;
          for (ky = ky0; ky < ky1; ++ky) {
            const float* in_row = in + (size_t)(iy0 + ky) * (size_t)iw;
            const float* w_row = w + (size_t)ky * (size_t)kw;
            for (kx = kx0; kx < kx1; ++kx) {
              acc += in_row[(size_t)(ix0 + kx)] * w_row[kx];
            }
          }
        }
        acc += bias[o];
        if (relu != 0 && acc < 0.0f) acc = 0.0f;
        result[((size_t)o * (size_t)oh + (size_t)y) * (size_t)ow + (size_t)x] = acc;
      }
    }
  }
  return 0;
}
