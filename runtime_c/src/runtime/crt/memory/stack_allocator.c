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

/* Every block carries its size whether the check is asked for or not, so that any later free
 * can be checked. */
tvm_crt_error_t StackMemoryManager_Allocate_Body(tvm_workspace_t* ws, int32_t nbytes, void** current_alloc,
                                                 uint8_t do_lifo_check) {
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
  (void)do_lifo_check;
  return kTvmErrorNoError;
}

tvm_crt_error_t StackMemoryManager_Allocate(tvm_workspace_t* ws, int32_t nbytes, void** current_alloc) {
  return StackMemoryManager_Allocate_Body(ws, nbytes, current_alloc, 1);
}

tvm_crt_error_t StackMemoryManager_Free_Body(tvm_workspace_t* ws, void* ptr, uint8_t do_lifo_check) {
  uint32_t size_tag;
  if (ws == NULL || ptr == NULL || ws->next_alloc == ws->workspace) {
    return kTvmErrorPlatformStackAllocBadFree;
  }
  if (do_lifo_check == 0) {
    /* unchecked: ptr and every block after it go, as long as ptr lies in the used part */
    uint8_t* p = ws->workspace;
    while (p < ws->next_alloc && p != (uint8_t*)ptr) {
      ++p;
    }
    if (p == ws->next_alloc) {
      return kTvmErrorPlatformStackAllocBadFree;
    }
    ws->next_alloc = p;
    return kTvmErrorNoError;
  }
  memcpy(&size_tag, ws->next_alloc - STACK_ALLOCATOR_TAG_SIZE_BYTES, sizeof size_tag);
  if ((uint8_t*)ptr != ws->next_alloc - size_tag) {
    return kTvmErrorPlatformStackAllocBadFree;
  }
  ws->next_alloc = (uint8_t*)ptr;
  return kTvmErrorNoError;
}

tvm_crt_error_t StackMemoryManager_Free(tvm_workspace_t* ws, void* ptr) {
  return StackMemoryManager_Free_Body(ws, ptr, 1);
}
