/*
 * A firmware main written for a TVM MLF, in the shape of apps/microtvm/zephyr_cmsisnn's: the
 * stack allocator serves the platform hooks from a workspace sized by the header, the structs
 * name the model's input and TVM's output, and the class with the largest score is reported.
 * On the host, printf stands for printk.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#include "tvmgen_default.h"

extern float input_storage[768];
extern float output_storage[TVMGEN_DEFAULT_OUTPUT_SIZE / sizeof(float)];
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
  float max_value = -1.0f;
  size_t max_index = 0;
  unsigned int i;
  struct tvmgen_default_inputs inputs = {.x = input_storage};
  struct tvmgen_default_outputs outputs = {.output = output_storage};

  StackMemoryManager_Init(&app_workspace, g_crt_workspace, TVMGEN_DEFAULT_WORKSPACE_SIZE);

  if (tvmgen_default_run(&inputs, &outputs) != 0) {
    printf("Model run failed\n");
    exit(-1);
  }

  for (i = 0; i < output_len; ++i) {
    printf("%.9g ", (double)output_storage[i]);
    if (output_storage[i] > max_value) {
      max_value = output_storage[i];
      max_index = i;
    }
  }
  printf("\nThe class is %u\n", (unsigned)max_index);
  return 0;
}
