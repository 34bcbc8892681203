/* The "hardware" of the NPU accelerator example: a matrix-multiply engine (with optional
 * bias and ReLU) that computes only on its own SRAM, so the host must stage every operand
 * through copy calls. This is the reference model of that device: the example's generated
 * executor drives it through the TVMDeviceNpu* hooks, and the tests check it against numpy.
 * Its whole state lives in the caller's npu_device, so several devices can coexist. */
#include "npu.h"

#include <stddef.h>

/* A real device would fault on a bad access; the model refuses the call up front instead,
 * so that a failed call leaves both sram and the counters untouched. */
static npu_device* ready(void* dev) {
  npu_device* d = (npu_device*)dev;
  if (d == NULL || !d->is_open || !d->is_active || d->sram == NULL) return NULL;
  return d;
}

/* 64-bit so that addr + len cannot wrap: len is at most (2^31 - 1)^2 for a matmul operand. */
static int in_sram(const npu_device* d, uint32_t addr, uint64_t len) {
  return len > 0 && (uint64_t)addr + len <= (uint64_t)d->sram_words;
}

static int overlap(uint64_t x, uint64_t xlen, uint64_t y, uint64_t ylen) {
  return x < y + ylen && y < x + xlen;
}

int32_t npu_write(void* dev, uint32_t addr, const float* src, uint32_t n) {
  npu_device* d = ready(dev);
  uint32_t i;
  if (d == NULL || src == NULL || !in_sram(d, addr, n)) return -1;
  for (i = 0; i < n; ++i) d->sram[addr + i] = src[i];
  d->words_in += n;
  return 0;
}

int32_t npu_read(void* dev, float* dst, uint32_t addr, uint32_t n) {
  npu_device* d = ready(dev);
  uint32_t i;
  if (d == NULL || dst == NULL || !in_sram(d, addr, n)) return -1;
  for (i = 0; i < n; ++i) dst[i] = d->sram[addr + i];
  d->words_out += n;
  return 0;
}

int32_t npu_matmul(void* dev, uint32_t a, uint32_t b, uint32_t bias, uint32_t c,
                   int32_t m, int32_t k, int32_t n, int32_t bias_mode, int32_t relu) {
  npu_device* d = ready(dev);
  uint64_t a_len, b_len, c_len, bias_len;
  const float *A, *B, *bias_p;
  float* C;
  uint32_t i, j, p, um, uk, un;
  if (d == NULL || m <= 0 || k <= 0 || n <= 0) return -1;
  if (bias_mode < 0 || bias_mode > 2) return -1;
  a_len = (uint64_t)m * (uint64_t)k;
  b_len = (uint64_t)k * (uint64_t)n;
  c_len = (uint64_t)m * (uint64_t)n;
  bias_len = bias_mode == 1 ? (uint64_t)m : bias_mode == 2 ? (uint64_t)n : 0;
  if (!in_sram(d, a, a_len) || !in_sram(d, b, b_len) || !in_sram(d, c, c_len)) return -1;
  /* C is written while A, B and bias are still being read, so any overlap would corrupt the
   * operands mid-job; A, B and bias may share words since they are only read. */
  if (overlap(c, c_len, a, a_len) || overlap(c, c_len, b, b_len)) return -1;
  if (bias_mode != 0 && (!in_sram(d, bias, bias_len) || overlap(c, c_len, bias, bias_len))) return -1;
  /* Every range is now inside sram, so all products and offsets below fit in uint32_t. */
  um = (uint32_t)m;
  uk = (uint32_t)k;
  un = (uint32_t)n;
  A = d->sram + a;
  B = d->sram + b;
  C = d->sram + c;
  bias_p = bias_mode != 0 ? d->sram + bias : NULL;
  for (i = 0; i < um; ++i) {
    for (j = 0; j < un; ++j) {
      float acc = 0.0f;
      for (p = 0; p < uk; ++p) acc += A[i * uk + p] * B[p * un + j];
      if (bias_p != NULL) acc += bias_p[bias_mode == 1 ? i : j];
      if (relu != 0 && acc < 0.0f) acc = 0.0f;
      C[i * un + j] = acc;
    }
  }
  d->jobs += 1;
  return 0;
}

int32_t TVMDeviceNpuOpen(void* context) {
  npu_device* d = (npu_device*)context;
  if (d == NULL || d->is_open || d->sram == NULL) return -1;
  d->is_open = 1;
  d->is_active = 0;
  d->jobs = 0;
  d->words_in = 0;
  d->words_out = 0;
  return 0;
}

int32_t TVMDeviceNpuActivate(void* context) {
  npu_device* d = (npu_device*)context;
  if (d == NULL || !d->is_open || d->is_active) return -1;
  d->is_active = 1;
  return 0;
}

int32_t TVMDeviceNpuDeactivate(void* context) {
  npu_device* d = (npu_device*)context;
  if (d == NULL || !d->is_open || !d->is_active) return -1;
  d->is_active = 0;
  return 0;
}

int32_t TVMDeviceNpuClose(void* context) {
  npu_device* d = (npu_device*)context;
  if (d == NULL || !d->is_open || d->is_active) return -1;
  d->is_open = 0;
  return 0;
}
