/*
 * A LIFO allocator over a caller-provided buffer, API-compatible with Apache TVM's
 * tvm/runtime/crt/stack_allocator.h (StackMemoryManager_*).
 */
#ifndef TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_
#define TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_

#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/crt/error_codes.h>

/* The firmware's configuration (TVM_CRT_* macros), found on the include path as TVM's is; the MLF's
 * runtime/include has a default that a firmware's own directory, listed first, replaces. */
#include "crt_config.h"

/*! \brief Alignment of every block (and of the workspace start); firmware may define its own. */
#ifndef TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES
#define TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES 16
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define STACK_ALLOCATOR_TAG 0xabcd1234
#define STACK_ALLOCATOR_TAG_SIZE_BYTES 4

/* In TVM's member order, so that a positional initializer means the same. */
typedef struct {
  uint8_t* next_alloc;       /* where the next allocation starts */
  uint8_t* workspace;        /* pointer to the start of the buffer */
  size_t workspace_size;     /* its size in bytes */
} tvm_workspace_t;

/*! \brief Prepare `workspace` for allocations from `g_workspace` (aligned up to TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES). */
tvm_crt_error_t StackMemoryManager_Init(tvm_workspace_t* tvm_runtime_workspace, uint8_t* g_workspace,
                                        size_t workspace_size);

/*! \brief Allocate `nbytes` (rounded up to TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES); kTvmErrorPlatformNoMemory when it does not fit. */
tvm_crt_error_t StackMemoryManager_Allocate(tvm_workspace_t* tvm_runtime_workspace, int32_t nbytes,
                                            void** current_alloc);

/*! \brief Free the most recent allocation; kTvmErrorPlatformStackAllocBadFree if `ptr` is not it. */
tvm_crt_error_t StackMemoryManager_Free(tvm_workspace_t* tvm_runtime_workspace, void* ptr);

/* The two above with the last-in-first-out check on (do_lifo_check != 0) or off: a free with the
 * check off releases ptr and everything allocated after it. */
tvm_crt_error_t StackMemoryManager_Allocate_Body(tvm_workspace_t* tvm_runtime_workspace, int32_t nbytes,
                                                 void** current_alloc, uint8_t do_lifo_check);
tvm_crt_error_t StackMemoryManager_Free_Body(tvm_workspace_t* tvm_runtime_workspace, void* ptr,
                                             uint8_t do_lifo_check);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_ */
