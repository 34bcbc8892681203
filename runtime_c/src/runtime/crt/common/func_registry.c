/* Function registries (see tvm/runtime/crt/func_registry.h). A mutable registry keeps its names from
 * the start of the caller's buffer and its function pointers at the end, so nothing is allocated. */
#include <string.h>
#include <tvm/runtime/crt/func_registry.h>

/* 0 when the NUL-terminated name at *cursor is `name`; *cursor is left on that name's NUL either way. */
static int name_differs(const char** cursor, const char* name) {
  const char* c = *cursor;
  int differs = strcmp(c, name) != 0;
  *cursor = c + strlen(c);
  return differs;
}

uint16_t TVMFuncRegistry_GetNumFuncs(const TVMFuncRegistry* reg) {
  uint16_t n;
  memcpy(&n, reg->names, sizeof n);
  return n;
}

int TVMFuncRegistry_SetNumFuncs(const TVMFuncRegistry* reg, const uint16_t num_funcs) {
  /* the names of a registry this is called on are the caller's writable buffer */
  memcpy((char*)reg->names, &num_funcs, sizeof num_funcs);
  return 0;
}

const char* TVMFuncRegistry_Get0thFunctionName(const TVMFuncRegistry* reg) {
  return reg->names + sizeof(uint16_t);
}

tvm_crt_error_t TVMFuncRegistry_Lookup(const TVMFuncRegistry* reg, const char* name,
                                       tvm_function_index_t* function_index) {
  const char* cursor = TVMFuncRegistry_Get0thFunctionName(reg);
  tvm_function_index_t i = 0;
  for (; *cursor != '\0'; ++cursor, ++i) {
    if (!name_differs(&cursor, name)) {
      *function_index = i;
      return kTvmErrorNoError;
    }
  }
  return kTvmErrorFunctionNameNotFound;
}

tvm_crt_error_t TVMFuncRegistry_GetByIndex(const TVMFuncRegistry* reg, tvm_function_index_t index,
                                           TVMBackendPackedCFunc* out_func) {
  if (index >= TVMFuncRegistry_GetNumFuncs(reg)) {
    return kTvmErrorFunctionIndexInvalid;
  }
  /* copied, not loaded: a mutable registry's pointers live in a byte buffer */
  memcpy(out_func, &reg->funcs[index], sizeof *out_func);
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMMutableFuncRegistry_Create(TVMMutableFuncRegistry* reg, uint8_t* buffer,
                                              size_t buffer_size_bytes) {
  size_t max, funcs_at;
  if (buffer_size_bytes < kTvmAverageFuncEntrySizeBytes) {
    return kTvmErrorBufferTooSmall;
  }
  max = buffer_size_bytes / kTvmAverageFuncEntrySizeBytes;
  funcs_at = buffer_size_bytes - max * sizeof(TVMBackendPackedCFunc);
  funcs_at -= (size_t)((uintptr_t)(buffer + funcs_at) % sizeof(TVMBackendPackedCFunc));
  if (funcs_at < sizeof(uint16_t) + 1u) {
    return kTvmErrorBufferTooSmall;
  }
  buffer[0] = 0; /* the count, two bytes */
  buffer[1] = 0;
  buffer[2] = 0; /* no names yet: the list's end */
  reg->registry.names = (const char*)buffer;
  reg->registry.funcs = (const TVMBackendPackedCFunc*)(void*)(buffer + funcs_at);
  reg->max_functions = max;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMMutableFuncRegistry_Set(TVMMutableFuncRegistry* reg, const char* name,
                                           TVMBackendPackedCFunc func, int override) {
  const char* cursor = TVMFuncRegistry_Get0thFunctionName(&reg->registry);
  TVMBackendPackedCFunc* funcs = (TVMBackendPackedCFunc*)reg->registry.funcs;
  uint16_t n = 0;
  size_t len, room;
  for (; *cursor != '\0'; ++cursor, ++n) {
    if (!name_differs(&cursor, name)) {
      if (!override) {
        return kTvmErrorFunctionAlreadyDefined;
      }
      memcpy(&funcs[n], &func, sizeof func);
      return kTvmErrorNoError;
    }
  }
  /* cursor is on the list's final NUL: the new name goes there, and a new final NUL after it */
  len = strlen(name);
  room = (size_t)((const char*)funcs - cursor);
  if (n >= reg->max_functions || n == UINT16_MAX || len + 2u > room) {
    return kTvmErrorFunctionRegistryFull;
  }
  memcpy((char*)cursor, name, len + 1u);
  ((char*)cursor)[len + 1u] = '\0';
  memcpy(&funcs[n], &func, sizeof func);
  TVMFuncRegistry_SetNumFuncs(&reg->registry, (uint16_t)(n + 1u));
  return kTvmErrorNoError;
}
