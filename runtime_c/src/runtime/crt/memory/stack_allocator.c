/* LIFO workspace allocator (see tvm/runtime/crt/stack_allocator.h). Each block is followed
 * by its size, so a free can check it releases the most recent block. */
#include <string.h>
#include <tvm/runtime/crt/stack_allocator.h>

#define AOT_ALIGN ((size_t)TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES)

static size_t align_up(size_t n) { return (n + AOT_ALIGN - 1u) & ~(size_t)(AOT_ALIGN - 1u); }

tvm_crt_error_t StackMemoryManager_Init(tvm_workspace_t* ws, uint8_t* g_workspace, size_t workspace_size) {
  /* step the pointer itself (not an integer cast back) so it keeps the array's provenance */
  size_t skip = (size_t)((AOT_ALIGN - (uintptr_t)g_workspace % AOT_ALIGN) % AOT_ALIGN);
  if (ws == NULL || g_workspace == NULL || skip > workspace_size) {
    return kTvmErrorPlatformNoMemory;
  }
  ws->workspace = g_workspace + skip;
  ws->workspace_size = workspace_size - skip;
  ws->next_alloc = ws->workspace;
  return kTvmErrorNoError;
}

tvm_crt_error_t StackMemoryManager_Allocate(tvm_workspace_t* ws, int32_t nbytes, void** current_alloc) {
  size_t block, used;
  uint32_t size_tag;
  if (ws == NULL || current_alloc == NULL || nbytes < 0) {
    return kTvmErrorPlatformNoMemory;
  }
  block = align_up((size_t)nbytes + STACK_ALLOCATOR_TAG_SIZE_BYTES);
  used = (size_t)(ws->next_alloc - ws->workspace);
  if (block > ws->workspace_size - used) {
    *current_alloc = NULL;
    return kTvmErrorPlatformNoMemory;
  }
  *current_alloc = ws->next_alloc;
  size_tag = (uint32_t)block;
  memcpy(ws->next_alloc + block - STACK_ALLOCATOR_TAG_SIZE_BYTES, &size_tag, sizeof size_tag);
  ws->next_alloc += block;
  return kTvmErrorNoError;
}

tvm_crt_error_t StackMemoryManager_Free(tvm_workspace_t* ws, void* ptr) {
  uint32_t size_tag;
  if (ws == NULL || ptr == NULL || ws->next_alloc == ws->workspace) {
    return kTvmErrorPlatformStackAllocBadFree;
  }
  memcpy(&size_tag, ws->next_alloc - STACK_ALLOCATOR_TAG_SIZE_BYTES, sizeof size_tag);
  if ((uint8_t*)ptr != ws->next_alloc - size_tag) {
    return kTvmErrorPlatformStackAllocBadFree;
  }
  ws->next_alloc = (uint8_t*)ptr;
  return kTvmErrorNoError;
}
