#ifndef CONV_BIAS_RELU_H
#define CONV_BIAS_RELU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fused conv2d + bias + optional ReLU, NCHW, batch 1, any stride, explicit padding.
 * ifmap is [ic][ih][iw], weights [oc][ic][kh][kw], bias [oc], result [oc][oh][ow]:
 *   out[o][y][x] = bias[o] + sum_{c,ky,kx} in[c][y*stride_h - pad_top + ky][x*stride_w - pad_left + kx]
 *                            * w[o][c][ky][kx]      (input outside [0,ih) x [0,iw) reads as 0)
 * then max(., 0) if relu != 0. Bottom/right padding is implied by oh and ow.
 * result must not overlap the inputs. Returns 0, or -1 for NULL pointers, non-positive
 * sizes or strides, or negative padding. */
int32_t fused_conv2d_bias_relu(const float* ifmap, const float* weights, const float* bias, float* result,
                               int32_t ic, int32_t ih, int32_t iw, int32_t oc, int32_t kh, int32_t kw,
                               int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
                               int32_t oh, int32_t ow, int32_t relu);

#ifdef __cplusplus
}
#endif

#endif /* CONV_BIAS_RELU_H */
