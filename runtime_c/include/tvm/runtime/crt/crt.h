/*
 * The runtime's entry point, API-compatible with Apache TVM's tvm/runtime/crt/crt.h.
 * Part of the aot project's runtime_c.
 */
#ifndef TVM_RUNTIME_CRT_CRT_H_
#define TVM_RUNTIME_CRT_CRT_H_

#include <inttypes.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Resets the module and global-function tables of src/runtime/crt/common/crt_runtime_api.c. aot's
 * runtime has no heap to set up, so this cannot fail; calling it is optional. */
tvm_crt_error_t TVMInitializeRuntime(void);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_CRT_CRT_H_ */
