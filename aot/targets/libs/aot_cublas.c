/* Row-major C[m][n] = alpha * op(A) x op(B) for each of `batch` matrices through cuBLAS, which is
 * column-major: it computes C^T = op(B)^T x op(A)^T, which is the same memory. Pedantic math:
 * no TF32, so results stay float32 like the generated kernels'. */
#include "aot_cublas.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

int32_t aot_cublas_create(void** context, void* stream) {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    return -1;
  }
  if (cublasSetStream(h, (cudaStream_t)stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
    (void)cublasDestroy(h);
    return -1;
  }
  *context = (void*)h;
  return 0;
}

int32_t aot_cublas_destroy(void* context) {
  return cublasDestroy((cublasHandle_t)context) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

int32_t aot_cublas_matmul(void* context, const float* a, const float* b, float* c, int32_t batch, int32_t m,
                          int32_t n, int32_t k, int32_t stride_a, int32_t stride_b, int32_t trans_a,
                          int32_t trans_b, float alpha) {
  const float zero = 0.0f;
  /* as column-major: B^T is [n][k] (ld n) untransposed, or [k][n] (ld k) if B was stored transposed */
  int32_t ldb = trans_b ? k : n;
  int32_t lda = trans_a ? m : k;
  cublasStatus_t st;
  if (context == 0 || batch < 1 || m < 1 || n < 1 || k < 1) {
    return -1;
  }
  st = cublasSgemmStridedBatched((cublasHandle_t)context, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, (long long)stride_b,
                                 a, lda, (long long)stride_a, &zero, c, n, (long long)m * n, batch);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}
