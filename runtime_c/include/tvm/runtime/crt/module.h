/*
 * C modules: a function registry as a module, API-compatible with Apache TVM's
 * tvm/runtime/crt/module.h. Part of the aot project's runtime_c.
 */
#ifndef TVM_RUNTIME_CRT_MODULE_H_
#define TVM_RUNTIME_CRT_MODULE_H_

#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/func_registry.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TVMModule {
  const TVMFuncRegistry* registry;
} TVMModule;

/* Registers mod (at most TVM_CRT_MAX_REGISTERED_MODULES, kept by address: mod must outlive its use)
 * and gives its handle, for TVMModGetFunction. */
int TVMModCreateFromCModule(const TVMModule* mod, TVMModuleHandle* out_handle);

/* The system library's module, which TVM's code generator writes for --system-lib builds. aot's
 * generated code has no system library (its executor calls operators by name), so nothing in an
 * aot MLF defines it: a firmware that has its own may define it. */
const TVMModule* TVMSystemLibEntryPoint(void);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_CRT_MODULE_H_ */
