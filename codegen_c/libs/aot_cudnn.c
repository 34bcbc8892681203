/* A 2-D convolution (+ bias) through cuDNN: NCHW float32, any stride, dilation and group count,
 * symmetric padding. The algorithm is cuDNN's best by its heuristics among those whose working
 * memory fits the scratch the static plan gave this call; FMA math, no TF32. */
#include "aot_cudnn.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>

#define AOT_CUDNN_ALGOS 8

int32_t aot_cudnn_create(void** context, void* stream) {
  cudnnHandle_t h;
  if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
    return -1;
  }
  if (cudnnSetStream(h, (cudaStream_t)stream) != CUDNN_STATUS_SUCCESS) {
    (void)cudnnDestroy(h);
    return -1;
  }
  *context = (void*)h;
  return 0;
}

int32_t aot_cudnn_destroy(void* context) {
  return cudnnDestroy((cudnnHandle_t)context) == CUDNN_STATUS_SUCCESS ? 0 : -1;
}

int32_t aot_cudnn_conv2d(void* context, const float* x, const float* w, const float* bias, float* y,
                         uint8_t* scratch, uint32_t scratch_bytes, int32_t n, int32_t c, int32_t h, int32_t wd,
                         int32_t k, int32_t r, int32_t s, int32_t groups, int32_t pad_h, int32_t pad_w,
                         int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t oh, int32_t ow) {
  cudnnHandle_t handle = (cudnnHandle_t)context;
  cudnnTensorDescriptor_t xd = 0, yd = 0, bd = 0;
  cudnnFilterDescriptor_t fd = 0;
  cudnnConvolutionDescriptor_t cd = 0;
  cudnnConvolutionFwdAlgoPerf_t perf[AOT_CUDNN_ALGOS];
  int returned = 0, i, ok = 0;
  int32_t rc = -1;
  const float one = 1.0f, zero = 0.0f;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  if (handle == 0 || groups < 1 || c % groups != 0) {
    return -1;
  }
  if (cudnnCreateTensorDescriptor(&xd) != CUDNN_STATUS_SUCCESS || cudnnCreateTensorDescriptor(&yd) != CUDNN_STATUS_SUCCESS ||
      cudnnCreateTensorDescriptor(&bd) != CUDNN_STATUS_SUCCESS || cudnnCreateFilterDescriptor(&fd) != CUDNN_STATUS_SUCCESS ||
      cudnnCreateConvolutionDescriptor(&cd) != CUDNN_STATUS_SUCCESS) {
    goto done;
  }
  if (cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, wd) != CUDNN_STATUS_SUCCESS ||
      cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, k, oh, ow) != CUDNN_STATUS_SUCCESS ||
      cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, k, 1, 1) != CUDNN_STATUS_SUCCESS ||
      cudnnSetFilter4dDescriptor(fd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c / groups, r, s) != CUDNN_STATUS_SUCCESS ||
      cudnnSetConvolution2dDescriptor(cd, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT) != CUDNN_STATUS_SUCCESS ||
      cudnnSetConvolutionGroupCount(cd, groups) != CUDNN_STATUS_SUCCESS ||
      cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH) != CUDNN_STATUS_SUCCESS) {
    goto done;
  }
  if (cudnnGetConvolutionForwardAlgorithm_v7(handle, xd, fd, cd, yd, AOT_CUDNN_ALGOS, &returned, perf) !=
      CUDNN_STATUS_SUCCESS) {
    goto done;
  }
  for (i = 0; i < returned && !ok; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= (size_t)scratch_bytes) {
      algo = perf[i].algo;
      ok = 1;
    }
  }
  if (!ok || cudnnConvolutionForward(handle, &one, xd, x, fd, w, cd, algo, scratch, (size_t)scratch_bytes, &zero, yd,
                                     y) != CUDNN_STATUS_SUCCESS) {
    goto done;
  }
  if (bias != 0 && cudnnAddTensor(handle, &one, bd, bias, &one, yd, y) != CUDNN_STATUS_SUCCESS) {
    goto done;
  }
  rc = 0;
done:
  if (cd != 0) (void)cudnnDestroyConvolutionDescriptor(cd);
  if (fd != 0) (void)cudnnDestroyFilterDescriptor(fd);
  if (bd != 0) (void)cudnnDestroyTensorDescriptor(bd);
  if (yd != 0) (void)cudnnDestroyTensorDescriptor(yd);
  if (xd != 0) (void)cudnnDestroyTensorDescriptor(xd);
  return rc;
}
