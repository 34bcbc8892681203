/* The part of TVM's C runtime API a standalone firmware can use without a heap (see
 * tvm/runtime/c_runtime_api.h, crt/module.h, crt/crt.h): C modules over function registries, global
 * functions, calls through handles, and the CPU's streams. Tables are static, sized by crt_config.h.
 * A module handle is the address of its table slot (slot 0 holds the global functions); a function
 * handle is the address of the function's name in its registry, which is unique and never moves. */
#include <stdint.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/module.h>
/* types only, nothing here uses them: included so that they compile, and are analysed, with the runtime */
#include <tvm/runtime/metadata_types.h>

#include "crt_config.h"

#define AOT_MODULE_SLOTS (TVM_CRT_MAX_REGISTERED_MODULES + 1)

static const TVMModule* g_modules[AOT_MODULE_SLOTS];
static TVMModule g_global_module;
static TVMMutableFuncRegistry g_global_registry;
static uint8_t g_global_buffer[TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES];
static int g_initialized;

/* TVMFuncRegisterGlobal copies a function pointer out of a handle: both must be the same size */
typedef char aot_handle_holds_a_function_pointer[sizeof(TVMFunctionHandle) == sizeof(TVMBackendPackedCFunc) ? 1 : -1];

tvm_crt_error_t TVMInitializeRuntime(void) {
  tvm_crt_error_t err;
  memset(g_modules, 0, sizeof g_modules);
  err = TVMMutableFuncRegistry_Create(&g_global_registry, g_global_buffer, sizeof g_global_buffer);
  if (err != kTvmErrorNoError) {
    return err;
  }
  g_global_module.registry = &g_global_registry.registry;
  g_modules[0] = &g_global_module;
  g_initialized = 1;
  return kTvmErrorNoError;
}

static int ensure_initialized(void) {
  return g_initialized ? 0 : (int)TVMInitializeRuntime();
}

static int fail(const char* msg, int code) {
  TVMAPISetLastError(msg);
  return code;
}

static TVMFunctionHandle encode(size_t slot, tvm_function_index_t index) {
  const char* name = TVMFuncRegistry_Get0thFunctionName(g_modules[slot]->registry);
  for (; index > 0; --index) {
    name += strlen(name) + 1u;
  }
  return (TVMFunctionHandle)name;
}

/* The function whose name lies at handle, found by walking each registry's names. */
static int decode(const void* handle, TVMBackendPackedCFunc* out) {
  size_t slot;
  for (slot = 0; slot < AOT_MODULE_SLOTS; ++slot) {
    const char* name;
    tvm_function_index_t index = 0;
    if (g_modules[slot] == NULL) {
      continue;
    }
    for (name = TVMFuncRegistry_Get0thFunctionName(g_modules[slot]->registry); *name != '\0';
         name += strlen(name) + 1u, ++index) {
      if ((const void*)name == handle) {
        return TVMFuncRegistry_GetByIndex(g_modules[slot]->registry, index, out) == kTvmErrorNoError ? 0 : -1;
      }
    }
  }
  return -1;
}

int TVMModCreateFromCModule(const TVMModule* mod, TVMModuleHandle* out_handle) {
  size_t i;
  if (ensure_initialized() != 0) {
    return fail("TVMModCreateFromCModule: runtime initialisation failed", -1);
  }
  if (mod == NULL || mod->registry == NULL || out_handle == NULL) {
    return fail("TVMModCreateFromCModule: NULL module or registry", -1);
  }
  for (i = 1; i < AOT_MODULE_SLOTS; ++i) {
    if (g_modules[i] == NULL || g_modules[i] == mod) {
      g_modules[i] = mod;
      *out_handle = (TVMModuleHandle)&g_modules[i];
      return 0;
    }
  }
  return fail("TVMModCreateFromCModule: TVM_CRT_MAX_REGISTERED_MODULES modules already registered", -1);
}

static int slot_of(const void* mod, size_t* slot) {
  size_t i;
  for (i = 1; i < AOT_MODULE_SLOTS; ++i) {
    if (mod == (const void*)&g_modules[i] && g_modules[i] != NULL) {
      *slot = i;
      return 0;
    }
  }
  return -1;
}

int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports, TVMFunctionHandle* out) {
  size_t slot;
  tvm_function_index_t index;
  (void)query_imports; /* a C module imports nothing */
  if (slot_of(mod, &slot) != 0) {
    return fail("TVMModGetFunction: not a module handle", -1);
  }
  if (TVMFuncRegistry_Lookup(g_modules[slot]->registry, func_name, &index) != kTvmErrorNoError) {
    return fail("TVMModGetFunction: no function of that name", (int)kTvmErrorFunctionNameNotFound);
  }
  *out = encode(slot, index);
  return 0;
}

int TVMModFree(TVMModuleHandle mod) {
  size_t slot;
  return slot_of(mod, &slot) == 0 ? 0 : fail("TVMModFree: not a module handle", -1);
}

int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override) {
  TVMBackendPackedCFunc fn;
  tvm_crt_error_t err;
  if (ensure_initialized() != 0) {
    return fail("TVMFuncRegisterGlobal: runtime initialisation failed", -1);
  }
  /* f is a TVMBackendPackedCFunc passed as a handle, as TVM's CRT takes it; ISO C has no cast from an
   * object pointer to a function pointer, so its bits are copied (the sizes are checked to match) */
  memcpy(&fn, &f, sizeof fn);
  err = TVMMutableFuncRegistry_Set(&g_global_registry, name, fn, override);
  return err == kTvmErrorNoError ? 0 : fail("TVMFuncRegisterGlobal: registry full or name taken", (int)err);
}

int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out) {
  tvm_function_index_t index;
  if (ensure_initialized() != 0) {
    return fail("TVMFuncGetGlobal: runtime initialisation failed", -1);
  }
  if (TVMFuncRegistry_Lookup(&g_global_registry.registry, name, &index) != kTvmErrorNoError) {
    return fail("TVMFuncGetGlobal: no global function of that name", (int)kTvmErrorFunctionNameNotFound);
  }
  *out = encode(0, index);
  return 0;
}

int TVMFuncFree(TVMFunctionHandle func) {
  (void)func; /* handles own nothing */
  return 0;
}

int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args, TVMValue* ret_val,
                int* ret_type_code) {
  TVMBackendPackedCFunc fn;
  if (func == NULL || decode(func, &fn) != 0) {
    return fail("TVMFuncCall: not a function handle", (int)kTvmErrorFunctionIndexInvalid);
  }
  return fn(arg_values, type_codes, num_args, ret_val, ret_type_code, NULL);
}

/* The CPU has one stream, always in step. */
static int cpu_only(int device_type, const char* msg) {
  return device_type == kDLCPU ? 0 : fail(msg, -1);
}

int TVMStreamFree(int device_type, int device_id, TVMStreamHandle stream) {
  (void)device_id;
  (void)stream;
  return cpu_only(device_type, "TVMStreamFree: aot's runtime has the CPU only");
}

int TVMSetStream(int device_type, int device_id, TVMStreamHandle handle) {
  (void)device_id;
  (void)handle;
  return cpu_only(device_type, "TVMSetStream: aot's runtime has the CPU only");
}

int TVMSynchronize(int device_type, int device_id, TVMStreamHandle stream) {
  (void)device_id;
  (void)stream;
  return cpu_only(device_type, "TVMSynchronize: aot's runtime has the CPU only");
}
