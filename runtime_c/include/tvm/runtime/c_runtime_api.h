/*
 * Minimal C runtime API types, source-compatible with the subset of Apache TVM's
 * tvm/runtime/c_runtime_api.h that AOT firmware uses; DLPack's types come from dlpack/dlpack.h.
 * Part of the aot project's runtime_c.
 */
#ifndef TVM_RUNTIME_C_RUNTIME_API_H_
#define TVM_RUNTIME_C_RUNTIME_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TVM_DLL
#define TVM_DLL
#endif

#define TVM_VERSION "aot-0.1"

typedef int64_t tvm_index_t;

typedef DLDevice TVMDevice;
typedef DLDataType DLDataType_t;

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
} TVMValue;

/* Type codes of TVMValue arguments (TVM's numbering; the first three are DLPack's). */
typedef enum {
  kTVMArgInt = kDLInt,
  kTVMArgFloat = kDLFloat,
  kTVMOpaqueHandle = 3U,
  kTVMNullptr = 4U,
  kTVMDataType = 5U,
  kDLDevice = 6U,
  kTVMDLTensorHandle = 7U,
  kTVMObjectHandle = 8U,
  kTVMModuleHandle = 9U,
  kTVMPackedFuncHandle = 10U,
  kTVMStr = 11U,
  kTVMBytes = 12U,
  kTVMNDArrayHandle = 13U
} TVMArgTypeCode;

typedef void* TVMModuleHandle;
typedef void* TVMFunctionHandle;
typedef DLTensor* TVMArrayHandle;

/*! \brief Signature of a packed function: arguments, their type codes, their count, the return
 * value and its type code, and the resource handle. */
typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                                     int* out_ret_tcode, void* resource_handle);

/*! \brief Registers a global function; the AOT runtime has no registry, so firmware that links
 * one (as TVM's demos do) provides the definition. */
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override);

/*! \brief The last error message set by TVMAPISetLastError (never NULL). */
TVM_DLL const char* TVMGetLastError(void);
TVM_DLL void TVMAPISetLastError(const char* msg);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_C_RUNTIME_API_H_ */
