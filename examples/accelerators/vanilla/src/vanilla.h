#ifndef VANILLA_H
#define VANILLA_H

#ifdef __cplusplus
extern "C" {
#endif

/* 2-D convolution, NCHW, batch 1, "same" padding (k/2 each side), stride 1, no bias.
 * ifmap is [ic][ih][iw], weights [oc][ic][kh][kw], result [oc][ih][iw]; result must not
 * overlap the inputs. Kernel sizes must be odd so that "same" padding is symmetric.
 * The argument order is that of TVM's UMA vanilla example, so generated calls match it.
 * Returns 0, or -1 for NULL pointers, non-positive sizes or even kernel sizes. */
int vanilla_conv2dnchw(float* ifmap, float* weights, float* result, int oc, int iw, int ih, int ic, int kh, int kw);

#ifdef __cplusplus
}
#endif

#endif /* VANILLA_H */
