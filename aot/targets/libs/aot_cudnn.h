/* aot's cuDNN calls for the cuda target's -libs=cudnn (shipped in the MLF). */
#ifndef AOT_CUDNN_H_
#define AOT_CUDNN_H_
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int32_t aot_cudnn_create(void** context, void* stream);
int32_t aot_cudnn_destroy(void* context);
/* from the host's init: descriptors, the algorithm timed on this GPU among those needing at most
   scratch_limit bytes, and the context's scratch grown to fit it (bias, relu, tf32: 0 or 1) */
int32_t aot_cudnn_conv2d_plan(void* context, int32_t n, int32_t c, int32_t h, int32_t wd, int32_t k, int32_t r,
                              int32_t s, int32_t groups, int32_t pad_h, int32_t pad_w, int32_t stride_h,
                              int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t oh, int32_t ow, int32_t bias,
                              int32_t relu, int32_t tf32, uint32_t scratch_limit);
/* y = conv(x, w) [+ bias] [then relu], enqueued with the plan made at init for the same parameters */
int32_t aot_cudnn_conv2d(void* context, const float* x, const float* w, const float* bias, float* y, int32_t n,
                         int32_t c, int32_t h, int32_t wd, int32_t k, int32_t r, int32_t s, int32_t groups,
                         int32_t pad_h, int32_t pad_w, int32_t stride_h, int32_t stride_w, int32_t dil_h,
                         int32_t dil_w, int32_t oh, int32_t ow, int32_t relu, int32_t tf32);
#ifdef __cplusplus
}
#endif
#endif /* AOT_CUDNN_H_ */
