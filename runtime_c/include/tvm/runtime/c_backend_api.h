/*
 * Backend API used by generated code that asks the runtime for memory; source-compatible
 * with Apache TVM's tvm/runtime/c_backend_api.h. The default aot output does not call it.
 */
#ifndef TVM_RUNTIME_C_BACKEND_API_H_
#define TVM_RUNTIME_C_BACKEND_API_H_

#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

TVM_DLL void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                       int dtype_code_hint, int dtype_bits_hint);
TVM_DLL int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

/* Parallel loops as TVM's generated code calls them. aot's runtime runs them on the calling thread:
 * one task (num_task 1), and the barrier has nothing to wait for. */
typedef struct {
  void* sync_handle;
  int32_t num_task;
} TVMParallelGroupEnv;

typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

TVM_DLL int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);
TVM_DLL int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv);
/* Runs f(cdata) the first time *handle is seen (NULL), and marks it. */
TVM_DLL int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int nbytes);

/* The system-library and environment hooks of TVM's full runtime: declared as TVM declares them,
 * not defined by aot's runtime (its executor calls operators directly, by name). */
TVM_DLL int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out);
TVM_DLL int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);
TVM_DLL int TVMBackendRegisterEnvCAPI(const char* name, void* ptr);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_C_BACKEND_API_H_ */
