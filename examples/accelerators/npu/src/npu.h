#ifndef NPU_H
#define NPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A simulated NPU with its own SRAM. The host never touches sram directly: data goes in
 * with npu_write and comes back with npu_read, as it would over a bus to a real device.
 * Zero-initialise the struct and point sram at the application's buffer before Open. */
typedef struct npu_device {
  float* sram;          /* the NPU's memory, owned by the application */
  uint32_t sram_words;  /* its size in floats */
  int32_t is_open;      /* set by TVMDeviceNpuOpen, cleared by TVMDeviceNpuClose */
  int32_t is_active;    /* set by TVMDeviceNpuActivate, cleared by TVMDeviceNpuDeactivate */
  uint32_t jobs;        /* matmuls run since open (a counter the tests read) */
  uint32_t words_in;    /* floats copied host->NPU since open */
  uint32_t words_out;   /* floats copied NPU->host since open */
} npu_device;

/* Every call returns 0 on success and -1 on error, and changes nothing when it fails.
 * dev/context is an npu_device* passed as void*. Addresses and sizes count floats. */

/* host -> sram[addr..addr+n); needs an open, active device, n > 0 and the range in sram */
int32_t npu_write(void* dev, uint32_t addr, const float* src, uint32_t n);
/* sram[addr..addr+n) -> host; same conditions as npu_write */
int32_t npu_read(void* dev, float* dst, uint32_t addr, uint32_t n);
/* C[M][N] = A[M][K] x B[K][N]  (+ bias[M] if bias_mode == 1, + bias[N] if bias_mode == 2, none if 0),
   then max(.,0) if relu != 0. a, b, bias, c are word addresses in sram; bias ignored when bias_mode == 0.
   m, k, n must be positive, every range used must lie in sram, and C must not overlap A, B or bias. */
int32_t npu_matmul(void* dev, uint32_t a, uint32_t b, uint32_t bias, uint32_t c,
                   int32_t m, int32_t k, int32_t n, int32_t bias_mode, int32_t relu);

/* The device hooks the generated executor calls (TVM's device API names).
 * Open: device closed and sram non-NULL; zeroes the counters. Activate: open and not active.
 * Deactivate: active. Close: open and not active. */
int32_t TVMDeviceNpuOpen(void* context);
int32_t TVMDeviceNpuActivate(void* context);
int32_t TVMDeviceNpuDeactivate(void* context);
int32_t TVMDeviceNpuClose(void* context);

#ifdef __cplusplus
}
#endif

#endif /* NPU_H */
