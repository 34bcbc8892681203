/* 2-D convolutions through cuDNN: NCHW float32, any stride, dilation and group count, symmetric
 * padding, with or without a bias, optionally with a fused ReLU.
 *
 * Every call site is planned once, by aot_cudnn_conv2d_plan from the host's init: descriptors
 * made and the algorithm timed on this GPU (cudnnFindConvolutionForwardAlgorithm, as PyTorch's
 * cudnn.benchmark does), the fastest whose working memory is within the limit the lowering
 * passes; cuDNN's heuristics where timing is refused. The context owns one device scratch,
 * grown at init to the largest chosen algorithm's need: the call sites run one after another on
 * one stream, so they share it. aot_cudnn_conv2d then only looks its plan up and enqueues it:
 * no allocation, descriptor call or synchronisation, so a CUDA graph can record it. Call sites
 * with the same parameters share one plan. Math: float32 FMA, or TF32 tensor cores where the
 * plan is asked for them (the target's -tf32). */
#include "aot_cudnn.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#define AOT_CUDNN_ALGOS 8
#define AOT_CUDNN_KEY 19

typedef struct {
  int32_t key[AOT_CUDNN_KEY];
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t fd;
  cudnnConvolutionDescriptor_t cd;
  cudnnActivationDescriptor_t ad;
  cudnnConvolutionFwdAlgo_t algo;
  size_t scratch_bytes;
} aot_cudnn_plan;

typedef struct {
  cudnnHandle_t handle;
  void* scratch;
  size_t scratch_bytes;
  aot_cudnn_plan* plans;
  int32_t n_plans;
  int32_t capacity;
} aot_cudnn_context;

int32_t aot_cudnn_create(void** context, void* stream) {
  aot_cudnn_context* ctx = (aot_cudnn_context*)calloc(1, sizeof *ctx);
  if (ctx == 0) {
    return -1;
  }
  if (cudnnCreate(&ctx->handle) != CUDNN_STATUS_SUCCESS) {
    free(ctx);
    return -1;
  }
  if (cudnnSetStream(ctx->handle, (cudaStream_t)stream) != CUDNN_STATUS_SUCCESS) {
    (void)cudnnDestroy(ctx->handle);
    free(ctx);
    return -1;
  }
  *context = (void*)ctx;
  return 0;
}

static void aot_cudnn_release(aot_cudnn_plan* p) {
  if (p->ad != 0) (void)cudnnDestroyActivationDescriptor(p->ad);
  if (p->cd != 0) (void)cudnnDestroyConvolutionDescriptor(p->cd);
  if (p->fd != 0) (void)cudnnDestroyFilterDescriptor(p->fd);
  if (p->bd != 0) (void)cudnnDestroyTensorDescriptor(p->bd);
  if (p->yd != 0) (void)cudnnDestroyTensorDescriptor(p->yd);
  if (p->xd != 0) (void)cudnnDestroyTensorDescriptor(p->xd);
}

int32_t aot_cudnn_destroy(void* context) {
  aot_cudnn_context* ctx = (aot_cudnn_context*)context;
  int32_t i, rc;
  if (ctx == 0) {
    return 0;
  }
  for (i = 0; i < ctx->n_plans; ++i) {
    aot_cudnn_release(&ctx->plans[i]);
  }
  free(ctx->plans);
  rc = ctx->scratch == 0 || cudaFree(ctx->scratch) == cudaSuccess ? 0 : -1;
  rc |= cudnnDestroy(ctx->handle) == CUDNN_STATUS_SUCCESS ? 0 : -1;
  free(ctx);
  return rc;
}

static aot_cudnn_plan* aot_cudnn_find(aot_cudnn_context* ctx, const int32_t* key) {
  int32_t i;
  for (i = 0; i < ctx->n_plans; ++i) {
    if (memcmp(ctx->plans[i].key, key, sizeof ctx->plans[i].key) == 0) {
      return &ctx->plans[i];
    }
  }
  return 0;
}

/* the fastest of perf[0..returned) (cuDNN lists them fastest first) that ran and fits the limit */
static int32_t aot_cudnn_pick(aot_cudnn_plan* p, const cudnnConvolutionFwdAlgoPerf_t* perf, int returned,
                              size_t limit) {
  int i;
  for (i = 0; i < returned; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
      p->algo = perf[i].algo;
      p->scratch_bytes = perf[i].memory;
      /* the math the timing used: FMA stays FMA; TF32 asked for may still time fastest as FMA */
      return cudnnSetConvolutionMathType(p->cd, perf[i].mathType) == CUDNN_STATUS_SUCCESS ? 0 : -1;
    }
  }
  return -1;
}

static int32_t aot_cudnn_make(aot_cudnn_context* ctx, aot_cudnn_plan* p, size_t limit) {
  const int32_t* k = p->key;  /* n c h w  k r s  groups  pad_h pad_w  stride_h stride_w  dil_h dil_w  oh ow  bias relu tf32 */
  cudnnConvolutionFwdAlgoPerf_t perf[AOT_CUDNN_ALGOS];
  int returned = 0;
  if (k[7] < 1 || k[1] % k[7] != 0) {
    return -1;
  }
  if (cudnnCreateTensorDescriptor(&p->xd) != CUDNN_STATUS_SUCCESS ||
      cudnnCreateTensorDescriptor(&p->yd) != CUDNN_STATUS_SUCCESS ||
      cudnnCreateTensorDescriptor(&p->bd) != CUDNN_STATUS_SUCCESS ||
      cudnnCreateFilterDescriptor(&p->fd) != CUDNN_STATUS_SUCCESS ||
      cudnnCreateConvolutionDescriptor(&p->cd) != CUDNN_STATUS_SUCCESS ||
      cudnnCreateActivationDescriptor(&p->ad) != CUDNN_STATUS_SUCCESS) {
    return -1;
  }
  if (cudnnSetTensor4dDescriptor(p->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, k[0], k[1], k[2], k[3]) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnSetTensor4dDescriptor(p->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, k[0], k[4], k[14], k[15]) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnSetTensor4dDescriptor(p->bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, k[4], 1, 1) != CUDNN_STATUS_SUCCESS ||
      cudnnSetFilter4dDescriptor(p->fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k[4], k[1] / k[7], k[5], k[6]) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnSetConvolution2dDescriptor(p->cd, k[8], k[9], k[10], k[11], k[12], k[13], CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT) != CUDNN_STATUS_SUCCESS ||
      cudnnSetConvolutionGroupCount(p->cd, k[7]) != CUDNN_STATUS_SUCCESS ||
      /* cuDNN's default math lets float32 use TF32 tensor cores (PyTorch's cudnn.allow_tf32) */
      cudnnSetConvolutionMathType(p->cd, k[18] ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH) != CUDNN_STATUS_SUCCESS ||
      /* ONNX's Relu keeps a NaN */
      cudnnSetActivationDescriptor(p->ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0) != CUDNN_STATUS_SUCCESS) {
    return -1;
  }
  /* timed on this GPU (cuDNN allocates its trial buffers itself: this is init, not run) */
  if (cudnnFindConvolutionForwardAlgorithm(ctx->handle, p->xd, p->fd, p->cd, p->yd, AOT_CUDNN_ALGOS, &returned,
                                           perf) == CUDNN_STATUS_SUCCESS &&
      aot_cudnn_pick(p, perf, returned, limit) == 0) {
    return 0;
  }
  returned = 0;
  if (cudnnGetConvolutionForwardAlgorithm_v7(ctx->handle, p->xd, p->fd, p->cd, p->yd, AOT_CUDNN_ALGOS, &returned,
                                             perf) != CUDNN_STATUS_SUCCESS) {
    return -1;
  }
  return aot_cudnn_pick(p, perf, returned, limit);
}

/* the context's one scratch, grown to nbytes (init only: run never allocates) */
static int32_t aot_cudnn_reserve(aot_cudnn_context* ctx, size_t nbytes) {
  if (nbytes <= ctx->scratch_bytes) {
    return 0;
  }
  if (ctx->scratch != 0 && cudaFree(ctx->scratch) != cudaSuccess) {
    return -1;
  }
  ctx->scratch = 0;
  ctx->scratch_bytes = 0;
  if (cudaMalloc(&ctx->scratch, nbytes) != cudaSuccess) {
    ctx->scratch = 0;
    return -1;
  }
  ctx->scratch_bytes = nbytes;
  return 0;
}

int32_t aot_cudnn_conv2d_plan(void* context, int32_t n, int32_t c, int32_t h, int32_t wd, int32_t k, int32_t r,
                              int32_t s, int32_t groups, int32_t pad_h, int32_t pad_w, int32_t stride_h,
                              int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t oh, int32_t ow, int32_t bias,
                              int32_t relu, int32_t tf32, uint32_t scratch_limit) {
  aot_cudnn_context* ctx = (aot_cudnn_context*)context;
  int32_t key[AOT_CUDNN_KEY];
  aot_cudnn_plan* p;
  key[0] = n, key[1] = c, key[2] = h, key[3] = wd, key[4] = k, key[5] = r, key[6] = s, key[7] = groups;
  key[8] = pad_h, key[9] = pad_w, key[10] = stride_h, key[11] = stride_w, key[12] = dil_h, key[13] = dil_w;
  key[14] = oh, key[15] = ow, key[16] = bias, key[17] = relu, key[18] = tf32 != 0;
  if (ctx == 0) {
    return -1;
  }
  if (aot_cudnn_find(ctx, key) != 0) {
    return 0;
  }
  if (ctx->n_plans == ctx->capacity) {
    int32_t cap = ctx->capacity ? 2 * ctx->capacity : 16;
    aot_cudnn_plan* grown = (aot_cudnn_plan*)realloc(ctx->plans, (size_t)cap * sizeof *grown);
    if (grown == 0) {
      return -1;
    }
    ctx->plans = grown;
    ctx->capacity = cap;
  }
  p = &ctx->plans[ctx->n_plans];
  memset(p, 0, sizeof *p);
  memcpy(p->key, key, sizeof key);
  if (aot_cudnn_make(ctx, p, (size_t)scratch_limit) != 0 || aot_cudnn_reserve(ctx, p->scratch_bytes) != 0) {
    aot_cudnn_release(p);
    return -1;
  }
  ctx->n_plans += 1;
  return 0;
}

int32_t aot_cudnn_conv2d(void* context, const float* x, const float* w, const float* bias, float* y, int32_t n,
                         int32_t c, int32_t h, int32_t wd, int32_t k, int32_t r, int32_t s, int32_t groups,
                         int32_t pad_h, int32_t pad_w, int32_t stride_h, int32_t stride_w, int32_t dil_h,
                         int32_t dil_w, int32_t oh, int32_t ow, int32_t relu, int32_t tf32) {
  aot_cudnn_context* ctx = (aot_cudnn_context*)context;
  const float one = 1.0f, zero = 0.0f;
  int32_t key[AOT_CUDNN_KEY];
  const aot_cudnn_plan* p;
  key[0] = n, key[1] = c, key[2] = h, key[3] = wd, key[4] = k, key[5] = r, key[6] = s, key[7] = groups;
  key[8] = pad_h, key[9] = pad_w, key[10] = stride_h, key[11] = stride_w, key[12] = dil_h, key[13] = dil_w;
  key[14] = oh, key[15] = ow, key[16] = bias != 0, key[17] = relu, key[18] = tf32 != 0;
  if (ctx == 0 || (relu && bias == 0) || (p = aot_cudnn_find(ctx, key)) == 0) {
    return -1;  /* not planned: the host's init makes every call site's plan */
  }
  if (relu) {  /* y = relu(conv(x) + bias); z (= y, weighted 0) is only read for its descriptor */
    return cudnnConvolutionBiasActivationForward(ctx->handle, &one, p->xd, x, p->fd, w, p->cd, p->algo,
                                                 ctx->scratch, p->scratch_bytes, &zero, p->yd, y, p->bd, bias,
                                                 p->ad, p->yd, y) == CUDNN_STATUS_SUCCESS ? 0 : -1;
  }
  if (cudnnConvolutionForward(ctx->handle, &one, p->xd, x, p->fd, w, p->cd, p->algo, ctx->scratch,
                              p->scratch_bytes, &zero, p->yd, y) != CUDNN_STATUS_SUCCESS) {
    return -1;
  }
  if (bias != 0 && cudnnAddTensor(ctx->handle, &one, p->bd, bias, &one, p->yd, y) != CUDNN_STATUS_SUCCESS) {
    return -1;
  }
  return 0;
}
