/*
 * A firmware main written for a TVM MLF, in the shape of apps/microtvm/zephyr_cmsisnn's: an int8
 * model compiled for "cmsis-nn -mcpu=cortex-m55, c", the stack allocator serving the platform
 * hooks from a workspace sized by the header, the structs naming the model's tensors as TVM
 * names them (its TFLite frontend keeps the tensors' names), and the class with the largest
 * score reported. On the host, printf stands for printk.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include "tvmgen_default.h"

extern int8_t input_storage[TVMGEN_DEFAULT_X_SIZE];
extern int8_t output_storage[TVMGEN_DEFAULT_IDENTITY_SIZE];
extern const size_t output_len;

static uint8_t __attribute__((aligned(TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES)))
g_crt_workspace[TVMGEN_DEFAULT_WORKSPACE_SIZE];
tvm_workspace_t app_workspace;

void TVMLogf(const char* msg, ...) {
  va_list args;
  va_start(args, msg);
  (void)vfprintf(stderr, msg, args);
  va_end(args);
}

void TVMPlatformAbort(tvm_crt_error_t error_code) {
  (void)fprintf(stderr, "TVMPlatformAbort: %d\n", (int)error_code);
  exit(-1);
}

tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr) {
  (void)dev;
  return StackMemoryManager_Allocate(&app_workspace, (int32_t)num_bytes, out_ptr);
}

tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  (void)dev;
  return StackMemoryManager_Free(&app_workspace, ptr);
}

int main(void) {
  int max_value = -129;
  size_t max_index = 0;
  unsigned int i;
  struct tvmgen_default_inputs inputs = {.x = input_storage};
  struct tvmgen_default_outputs outputs = {.Identity = output_storage};

  StackMemoryManager_Init(&app_workspace, g_crt_workspace, TVMGEN_DEFAULT_WORKSPACE_SIZE);

  if (tvmgen_default_run(&inputs, &outputs) != 0) {
    printf("Model run failed\n");
    exit(-1);
  }

  for (i = 0; i < output_len; ++i) {
    printf("%d ", (int)output_storage[i]);
    if (output_storage[i] > max_value) {
      max_value = output_storage[i];
      max_index = i;
    }
  }
  printf("\nThe class is %u\n", (unsigned)max_index);
  return 0;
}
