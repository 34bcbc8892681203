/*
 * A LIFO allocator over a caller-provided buffer, API-compatible with Apache TVM's
 * tvm/runtime/crt/stack_allocator.h (StackMemoryManager_*).
 */
#ifndef TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_
#define TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_

#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STACK_ALLOCATOR_TAG 0xabcd1234
#define STACK_ALLOCATOR_TAG_SIZE_BYTES 4

typedef struct {
  uint8_t* workspace;        /* pointer to the start of the buffer */
  size_t workspace_size;     /* its size in bytes */
  uint8_t* next_alloc;       /* where the next allocation starts */
} tvm_workspace_t;

/*! \brief Prepare `workspace` for allocations from `g_workspace` (aligned up to 16 bytes). */
tvm_crt_error_t StackMemoryManager_Init(tvm_workspace_t* tvm_runtime_workspace, uint8_t* g_workspace,
                                        size_t workspace_size);

/*! \brief Allocate `nbytes` (rounded up to 16); kTvmErrorPlatformNoMemory when it does not fit. */
tvm_crt_error_t StackMemoryManager_Allocate(tvm_workspace_t* tvm_runtime_workspace, int32_t nbytes,
                                            void** current_alloc);

/*! \brief Free the most recent allocation; kTvmErrorPlatformStackAllocBadFree if `ptr` is not it. */
tvm_crt_error_t StackMemoryManager_Free(tvm_workspace_t* tvm_runtime_workspace, void* ptr);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_CRT_STACK_ALLOCATOR_H_ */
