/* The "hardware" of the vanilla accelerator example: a MAC array with no memory of its own
 * that can only run a "same"-padded, stride-1 convolution straight out of host buffers.
 * This is the reference model of that unit: the example's generated code calls it, and the
 * tests check it against numpy. It allocates nothing, so it runs as-is on bare metal. */
#include "vanilla.h"

#include <stddef.h>
#include <stdint.h>

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

int vanilla_conv2dnchw(float* ifmap, float* weights, float* result, int oc, int iw, int ih, int ic, int kh, int kw) {
  int o, y, x, c, ky, kx;
  int pad_h, pad_w;
  if (ifmap == NULL || weights == NULL || result == NULL) return -1;
  if (oc <= 0 || iw <= 0 || ih <= 0 || ic <= 0 || kh <= 0 || kw <= 0) return -1;
  if (kh % 2 == 0 || kw % 2 == 0) return -1;
  if (!fits((size_t)ic, (size_t)ih, (size_t)iw, 1) || !fits((size_t)oc, (size_t)ih, (size_t)iw, 1) ||
      !fits((size_t)oc, (size_t)ic, (size_t)kh, (size_t)kw)) {
    return -1;
  }
  pad_h = kh / 2;
  pad_w = kw / 2;
  for (o = 0; o < oc; ++o) {
    for (y = 0; y < ih; ++y) {
      /* Taps that would read the zero padding are skipped rather than multiplied by zero, so
       * the kernel window is clipped to the input once per row. The upper bound is written
       * so that it cannot overflow int: ih - y <= pad_h whenever the first branch is taken. */
      int ky0 = y < pad_h ? pad_h - y : 0;
      int ky1 = ih - y < kh - pad_h ? ih - y + pad_h : kh;
      for (x = 0; x < iw; ++x) {
        int kx0 = x < pad_w ? pad_w - x : 0;
        int kx1 = iw - x < kw - pad_w ? iw - x + pad_w : kw;
        float acc = 0.0f;
        for (c = 0; c < ic; ++c) {
          const float* in = ifmap + (size_t)c * (size_t)ih * (size_t)iw;
          const float* w = weights + ((size_t)o * (size_t)ic + (size_t)c) * (size_t)kh * (size_t)kw;
          for (ky = ky0; ky < ky1; ++ky) {
            const float* in_row = in + (size_t)(y - pad_h + ky) * (size_t)iw;
            const float* w_row = w + (size_t)ky * (size_t)kw;
            for (kx = kx0; kx < kx1; ++kx) {
              acc += in_row[x - pad_w + kx] * w_row[kx];
            }
          }
        }
        result[((size_t)o * (size_t)ih + (size_t)y) * (size_t)iw + (size_t)x] = acc;
      }
    }
  }
  return 0;
}
