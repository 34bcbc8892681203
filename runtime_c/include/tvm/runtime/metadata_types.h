/*
 * The types of an AOT model's metadata (inputs, outputs, pools), layout-compatible with Apache TVM's
 * tvm/runtime/metadata_types.h, for firmware that reads TVM-style metadata tables.
 * Part of the aot project's runtime_c.
 */
#ifndef TVM_RUNTIME_METADATA_TYPES_H_
#define TVM_RUNTIME_METADATA_TYPES_H_

#include <inttypes.h>
#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct TVMMetadata {
  int64_t version;
  const struct TVMTensorInfo* inputs;            /* in the run function's argument order */
  int64_t num_inputs;
  const struct TVMTensorInfo* outputs;
  int64_t num_outputs;
  const struct TVMTensorInfo* workspace_pools;
  int64_t num_workspace_pools;
  const struct TVMConstantInfo* constant_pools;
  int64_t num_constant_pools;
  const char* mod_name;
};

struct TVMTensorInfo {
  const char* name;
  const int64_t* shape;
  int64_t num_shape;     /* the rank */
  DLDataType dtype;
};

struct TVMConstantInfo {
  const char* name_hint;
  int64_t byte_offset;   /* in the constant pool */
  int64_t data_len;      /* bytes at data_bytes */
  const void* data_bytes;
};

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_METADATA_TYPES_H_ */
