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

/* One task, on the calling thread: a parallel loop runs as the sequential loop it splits. */
int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  TVMParallelGroupEnv env;
  (void)num_task;
  env.sync_handle = NULL;
  env.num_task = 1;
  return flambda(0, &env, cdata);
}

int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv) {
  (void)task_id;
  (void)penv;
  return 0;
}

int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int nbytes) {
  static char done;   /* any non-NULL mark would do: the address of this byte is one */
  (void)nbytes;
  if (*handle == NULL) {
    *handle = &done;
    return f(cdata);
  }
  return 0;
}
