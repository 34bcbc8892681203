/* Row-major C[m][n] = alpha * op(A) x op(B) for each of `batch` matrices through cuBLAS, which is
 * column-major: it computes C^T = op(B)^T x op(A)^T, which is the same memory.
 *
 * The handle is bound to the module's stream and works in a workspace made with it at init
 * (cublasSetWorkspace): left to itself cuBLAS takes its workspace from the stream's pool on first
 * use, which a CUDA graph being recorded cannot do. Math: float32 (cuBLAS's default math, no
 * TF32), or TF32 tensor cores once aot_cublas_math(context, 1) asked for them (the target's -tf32). */
#include "aot_cublas.h"

#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

/* cuBLAS's guidance for Hopper: 32 MiB lets every GEMM take its fastest split */
#define AOT_CUBLAS_WORKSPACE (32u << 20)

typedef struct {
  cublasHandle_t handle;
  cudaStream_t stream;
  void* workspace;
} aot_cublas_context;

int32_t aot_cublas_create(void** context, void* stream) {
  aot_cublas_context* ctx = (aot_cublas_context*)calloc(1, sizeof *ctx);
  if (ctx == 0) {
    return -1;
  }
  if (cublasCreate(&ctx->handle) != CUBLAS_STATUS_SUCCESS) {
    free(ctx);
    return -1;
  }
  if (cudaMalloc(&ctx->workspace, AOT_CUBLAS_WORKSPACE) != cudaSuccess) {
    ctx->workspace = 0;
    (void)aot_cublas_destroy(ctx);
    return -1;
  }
  ctx->stream = (cudaStream_t)stream;
  if (cublasSetStream(ctx->handle, ctx->stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(ctx->handle, ctx->workspace, AOT_CUBLAS_WORKSPACE) != CUBLAS_STATUS_SUCCESS ||
      cublasSetMathMode(ctx->handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
    (void)aot_cublas_destroy(ctx);
    return -1;
  }
  *context = (void*)ctx;
  return 0;
}

int32_t aot_cublas_destroy(void* context) {
  aot_cublas_context* ctx = (aot_cublas_context*)context;
  int32_t rc;
  if (ctx == 0) {
    return 0;
  }
  rc = cublasDestroy(ctx->handle) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
  if (ctx->workspace != 0 && cudaFree(ctx->workspace) != cudaSuccess) {
    rc = -1;
  }
  free(ctx);
  return rc;
}

int32_t aot_cublas_math(void* context, int32_t tf32) {
  aot_cublas_context* ctx = (aot_cublas_context*)context;
  if (ctx == 0) {
    return -1;
  }
  return cublasSetMathMode(ctx->handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) ==
                 CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

int32_t aot_cublas_matmul(void* context, const float* a, const float* b, float* c, int32_t batch, int32_t m,
                          int32_t n, int32_t k, int32_t stride_a, int32_t stride_b, int32_t trans_a,
                          int32_t trans_b, float alpha) {
  const aot_cublas_context* ctx = (const aot_cublas_context*)context;
  const float zero = 0.0f;
  /* as column-major: B^T is [n][k] (ld n) untransposed, or [k][n] (ld k) if B was stored transposed */
  int32_t ldb = trans_b ? k : n;
  int32_t lda = trans_a ? m : k;
  cublasStatus_t st;
  if (ctx == 0 || batch < 1 || m < 1 || n < 1 || k < 1) {
    return -1;
  }
  if (batch == 1) {  /* one GEMM: cuBLAS's plain entry picks among more kernels than the batched one */
    st = cublasSgemm(ctx->handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                     k, &alpha, b, ldb, a, lda, &zero, c, n);
  } else {
    st = cublasSgemmStridedBatched(ctx->handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb,
                                   (long long)stride_b, a, lda, (long long)stride_a, &zero, c, n, (long long)m * n,
                                   batch);
  }
  return st == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

int32_t aot_cublas_gemm_bias(void* context, const float* a, const float* b, const float* bias, float* c, int32_t m,
                             int32_t n, int32_t k, int32_t trans_a, int32_t trans_b, float alpha, float beta,
                             int32_t bias_row) {
  const aot_cublas_context* ctx = (const aot_cublas_context*)context;
  int32_t ldb = trans_b ? k : n;
  int32_t lda = trans_a ? m : k;
  int32_t i;
  if (ctx == 0 || m < 1 || n < 1 || k < 1) {
    return -1;
  }
  /* C = bias first (enqueued copies, which a graph records as copy nodes), then C += A x B */
  if (bias_row) {
    for (i = 0; i < m; ++i) {
      if (cudaMemcpyAsync(c + (size_t)i * (size_t)n, bias, (size_t)n * sizeof *c, cudaMemcpyDeviceToDevice,
                          ctx->stream) != cudaSuccess) {
        return -1;
      }
    }
  } else if (cudaMemcpyAsync(c, bias, (size_t)m * (size_t)n * sizeof *c, cudaMemcpyDeviceToDevice, ctx->stream) !=
             cudaSuccess) {
    return -1;
  }
  return cublasSgemm(ctx->handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                     &alpha, b, ldb, a, lda, &beta, c, n) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}
