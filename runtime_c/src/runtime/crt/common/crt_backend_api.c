/* Backend API over the platform hooks (see tvm/runtime/c_backend_api.h). Only firmware that
 * links generated code asking for runtime memory needs this file. */
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/logging.h>
#include <tvm/runtime/crt/platform.h>

static const char* g_last_error = "";

const char* TVMGetLastError(void) { return g_last_error; }

void TVMAPISetLastError(const char* msg) { g_last_error = msg != NULL ? msg : ""; }

void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                               int dtype_bits_hint) {
  void* ptr = NULL;
  DLDevice dev;
  (void)dtype_code_hint;
  (void)dtype_bits_hint;
  dev.device_type = (DLDeviceType)device_type;
  dev.device_id = device_id;
  if (TVMPlatformMemoryAllocate((size_t)nbytes, dev, &ptr) != kTvmErrorNoError) {
    TVMAPISetLastError("TVMBackendAllocWorkspace: out of memory");
    return NULL;
  }
  return ptr;
}

int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
  DLDevice dev;
  dev.device_type = (DLDeviceType)device_type;
  dev.device_id = device_id;
  return TVMPlatformMemoryFree(ptr, dev) == kTvmErrorNoError ? 0 : -1;
}
