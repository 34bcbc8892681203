/*
 * Minimal C runtime API types, source-compatible with the subset of Apache TVM's
 * tvm/runtime/c_runtime_api.h that AOT firmware uses. Part of the aot project's runtime_c.
 */
#ifndef TVM_RUNTIME_C_RUNTIME_API_H_
#define TVM_RUNTIME_C_RUNTIME_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TVM_DLL
#define TVM_DLL
#endif

#define TVM_VERSION "aot-0.1"

typedef int64_t tvm_index_t;

typedef enum {
  kDLCPU = 1
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLBool = 6U
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

typedef DLDevice TVMDevice;
typedef DLDataType DLDataType_t;

typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
} TVMValue;

typedef void* TVMModuleHandle;
typedef void* TVMFunctionHandle;

/*! \brief The last error message set by TVMAPISetLastError (never NULL). */
TVM_DLL const char* TVMGetLastError(void);
TVM_DLL void TVMAPISetLastError(const char* msg);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_C_RUNTIME_API_H_ */
