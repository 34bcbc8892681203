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

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_C_BACKEND_API_H_ */
