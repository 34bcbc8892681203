/*
 * Function registries: a table of packed functions found by name, API-compatible with Apache TVM's
 * tvm/runtime/crt/func_registry.h (implemented in src/runtime/crt/common/func_registry.c, without a heap).
 * Part of the aot project's runtime_c.
 */
#ifndef TVM_RUNTIME_CRT_FUNC_REGISTRY_H_
#define TVM_RUNTIME_CRT_FUNC_REGISTRY_H_

#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t tvm_function_index_t;
typedef uint16_t tvm_module_index_t;

/*
 * A read-only registry. `names` starts with the number of functions (a uint16_t in the target's
 * byte order, bytes 0 and 1), then each name with its terminating NUL, then one more NUL; funcs[i]
 * is the function of the i-th name.
 */
typedef struct TVMFuncRegistry {
  const char* names;
  const TVMBackendPackedCFunc* funcs;
} TVMFuncRegistry;

uint16_t TVMFuncRegistry_GetNumFuncs(const TVMFuncRegistry* reg);
/* Writes the count into names: only for a registry whose names are writable. */
int TVMFuncRegistry_SetNumFuncs(const TVMFuncRegistry* reg, const uint16_t num_funcs);
const char* TVMFuncRegistry_Get0thFunctionName(const TVMFuncRegistry* reg);
/* kTvmErrorFunctionNameNotFound when no function has that name. */
tvm_crt_error_t TVMFuncRegistry_Lookup(const TVMFuncRegistry* reg, const char* name,
                                       tvm_function_index_t* function_index);
/* kTvmErrorFunctionIndexInvalid when index is past the last function. */
tvm_crt_error_t TVMFuncRegistry_GetByIndex(const TVMFuncRegistry* reg, tvm_function_index_t index,
                                           TVMBackendPackedCFunc* out_func);

/* A registry that functions can be added to, laid out in a buffer the caller owns. */
typedef struct TVMMutableFuncRegistry {
  TVMFuncRegistry registry;
  size_t max_functions;   /* how many functions the buffer can hold */
} TVMMutableFuncRegistry;

/* The name length a buffer is sized for, on average, when a mutable registry is created. */
#define TVM_AVERAGE_FUNCTION_NAME_STRLEN_BYTES 10

static const size_t kTvmAverageFunctionNameStrlenBytes = TVM_AVERAGE_FUNCTION_NAME_STRLEN_BYTES;
static const size_t kTvmAverageFuncEntrySizeBytes = TVM_AVERAGE_FUNCTION_NAME_STRLEN_BYTES + 1 + sizeof(void*);

/* kTvmErrorBufferTooSmall when the buffer cannot hold one entry. */
tvm_crt_error_t TVMMutableFuncRegistry_Create(TVMMutableFuncRegistry* reg, uint8_t* buffer,
                                              size_t buffer_size_bytes);
/* Adds name, or replaces its function when override is non-zero (kTvmErrorFunctionAlreadyDefined
 * otherwise); kTvmErrorFunctionRegistryFull when the buffer has no room left. */
tvm_crt_error_t TVMMutableFuncRegistry_Set(TVMMutableFuncRegistry* reg, const char* name,
                                           TVMBackendPackedCFunc func, int override);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_CRT_FUNC_REGISTRY_H_ */
