/*
 * The platform hooks of a bare-metal TVM application, in the shape of apps/microtvm/cmsisnn's
 * include/tvm_runtime.h: no runtime memory (the model's workspace is static), logs to stdout.
 */
#ifndef TVM_RUNTIME_H_
#define TVM_RUNTIME_H_

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/stack_allocator.h>

#ifdef __cplusplus
extern "C" {
#endif

void TVMPlatformAbort(tvm_crt_error_t error_code) {
  printf("TVMPlatformAbort: %d\n", (int)error_code);
  printf("EXITTHESIM\n");
  exit(-1);
}

tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr) {
  (void)num_bytes;
  (void)dev;
  (void)out_ptr;
  return kTvmErrorFunctionCallNotImplemented;
}

tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  (void)ptr;
  (void)dev;
  return kTvmErrorFunctionCallNotImplemented;
}

void TVMLogf(const char* msg, ...) {
  va_list args;
  va_start(args, msg);
  (void)vfprintf(stdout, msg, args);
  va_end(args);
}

TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override) {
  (void)name;
  (void)f;
  (void)override;
  return 0;
}

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_H_ */
