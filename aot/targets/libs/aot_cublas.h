/* aot's cuBLAS calls for the cuda target's -libs=cublas (shipped in the MLF). */
#ifndef AOT_CUBLAS_H_
#define AOT_CUBLAS_H_
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int32_t aot_cublas_create(void** context, void* stream);
int32_t aot_cublas_destroy(void* context);
/* from the host's init: 1 lets float32 GEMMs use TF32 tensor cores, 0 keeps float32 math */
int32_t aot_cublas_math(void* context, int32_t tf32);
int32_t aot_cublas_matmul(void* context, const float* a, const float* b, float* c, int32_t batch, int32_t m,
                          int32_t n, int32_t k, int32_t stride_a, int32_t stride_b, int32_t trans_a,
                          int32_t trans_b, float alpha);
/* Gemm with its bias: c = alpha * op(a) x op(b) + beta * bias, bias one row broadcast over the m rows
   (bias_row 1) or the whole [m][n] (0); the bias is copied into c on the stream, device to device */
int32_t aot_cublas_gemm_bias(void* context, const float* a, const float* b, const float* bias, float* c, int32_t m,
                             int32_t n, int32_t k, int32_t trans_a, int32_t trans_b, float alpha, float beta,
                             int32_t bias_row);
#ifdef __cplusplus
}
#endif
#endif /* AOT_CUBLAS_H_ */
