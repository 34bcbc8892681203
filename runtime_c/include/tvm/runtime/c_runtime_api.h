/*
 * Minimal C runtime API types, source-compatible with the subset of Apache TVM's
 * tvm/runtime/c_runtime_api.h that AOT firmware uses; DLPack's types come from dlpack/dlpack.h.
 * Part of the aot project's runtime_c.
 */
#ifndef TVM_RUNTIME_C_RUNTIME_API_H_
#define TVM_RUNTIME_C_RUNTIME_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TVM_DLL
#define TVM_DLL
#endif

/* A definition a firmware may replace with its own. */
#if defined(__GNUC__) || defined(__clang__)
#define TVM_WEAK __attribute__((weak))
#define TVM_ATTRIBUTE_UNUSED __attribute__((unused))
#else
#define TVM_WEAK
#define TVM_ATTRIBUTE_UNUSED
#endif

#define TVM_VERSION "aot-0.1"

typedef int64_t tvm_index_t;

typedef DLDevice TVMDevice;
typedef DLDataType DLDataType_t;

/* Device types past DLPack's own, numbered as TVM numbers them. */
typedef enum {
  kDLAOCL = 32,
  kDLSDAccel,
  kOpenGL,
  kDLMicroDev,
  TVMDeviceExtType_End
} TVMDeviceExtType;

/* One argument or return value of a packed call; its type code says which member is live. */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

/* The type codes of packed-call arguments (DLPack's codes first). */
typedef enum {
  kTVMArgInt = kDLInt,
  kTVMArgFloat = kDLFloat,
  kTVMOpaqueHandle = 3,
  kTVMNullptr = 4,
  kTVMDataType = 5,
  kDLDevice = 6,
  kTVMDLTensorHandle = 7,
  kTVMObjectHandle = 8,
  kTVMModuleHandle = 9,
  kTVMPackedFuncHandle = 10,
  kTVMStr = 11,
  kTVMBytes = 12,
  kTVMNDArrayHandle = 13,
  kTVMObjectRValueRefArg = 14,
  kTVMArgBool = 15,
  kTVMExtBegin = 16,
  kTVMNNVMFirst = 16,
  kTVMNNVMLast = 20,
  kTVMExtReserveEnd = 64,
  kTVMExtEnd = 128
} TVMArgTypeCode;

/* A byte string passed as kTVMBytes. */
typedef struct {
  const char* data;
  size_t size;
} TVMByteArray;

typedef void* TVMModuleHandle;
typedef void* TVMFunctionHandle;
typedef void* TVMRetValueHandle;
typedef void* TVMStreamHandle;
typedef void* TVMObjectHandle;
typedef DLTensor* TVMArrayHandle;

typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                                     int* out_ret_tcode, void* resource_handle);

/* A packed function written in C, its finalizer, and an extension-type declarer. */
typedef int (*TVMPackedCFunc)(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                              void* resource_handle);
typedef void (*TVMPackedCFuncFinalizer)(void* resource_handle);
typedef int (*TVMExtensionFuncDeclarer)(TVMFunctionHandle register_func_handle);

/* Errors: the last one set, as a string. */
TVM_DLL const char* TVMGetLastError(void);
TVM_DLL void TVMAPISetLastError(const char* msg);

/*
 * The rest of TVM's C runtime API, declared as TVM declares it so that code written against TVM's
 * header compiles. runtime/src defines the part a standalone firmware can use without a heap
 * (src/runtime/crt/common/crt_runtime_api.c: modules over function registries, global functions,
 * calls, the CPU's streams); the rest (Python errors, files, objects, arrays and device memory
 * over a heap) is not defined by aot's runtime, as TVM's own CRT leaves most of it undefined too:
 * a firmware calling one gets a link error that names it.
 */
TVM_DLL void TVMAPISetLastPythonError(void* py_object);
TVM_DLL void* TVMGetLastPythonError(void);
TVM_DLL const char* TVMGetLastBacktrace(void);
TVM_DLL void TVMDropLastPythonError(void);
TVM_DLL void TVMThrowLastError(void);

TVM_DLL int TVMModLoadFromFile(const char* file_name, const char* format, TVMModuleHandle* out);
TVM_DLL int TVMModImport(TVMModuleHandle mod, TVMModuleHandle dep);
TVM_DLL int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                              TVMFunctionHandle* out);
TVM_DLL int TVMModFree(TVMModuleHandle mod);

TVM_DLL int TVMFuncFree(TVMFunctionHandle func);
TVM_DLL int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                        TVMValue* ret_val, int* ret_type_code);
TVM_DLL int TVMCFuncSetReturn(TVMRetValueHandle ret, TVMValue* value, int* type_code, int num_ret);
TVM_DLL int TVMCbArgToReturn(TVMValue* value, int* code);
TVM_DLL int TVMFuncCreateFromCFunc(TVMPackedCFunc func, void* resource_handle, TVMPackedCFuncFinalizer fin,
                                   TVMFunctionHandle* out);
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override);
TVM_DLL int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out);
TVM_DLL int TVMFuncListGlobalNames(int* out_size, const char*** out_array);
TVM_DLL int TVMFuncRemoveGlobal(const char* name);

TVM_DLL int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits, int dtype_lanes,
                          int device_type, int device_id, TVMArrayHandle* out);
TVM_DLL int TVMArrayFree(TVMArrayHandle handle);
TVM_DLL int TVMArrayCopyFromBytes(TVMArrayHandle handle, void* data, size_t nbytes);
TVM_DLL int TVMArrayCopyToBytes(TVMArrayHandle handle, void* data, size_t nbytes);
TVM_DLL int TVMArrayCopyFromTo(TVMArrayHandle from, TVMArrayHandle to, TVMStreamHandle stream);
TVM_DLL int TVMArrayFromDLPack(DLManagedTensor* from, TVMArrayHandle* out);
TVM_DLL int TVMArrayToDLPack(TVMArrayHandle from, DLManagedTensor** out);
TVM_DLL void TVMDLManagedTensorCallDeleter(DLManagedTensor* dltensor);

TVM_DLL int TVMStreamCreate(int device_type, int device_id, TVMStreamHandle* out);
TVM_DLL int TVMStreamFree(int device_type, int device_id, TVMStreamHandle stream);
TVM_DLL int TVMSetStream(int device_type, int device_id, TVMStreamHandle handle);
TVM_DLL int TVMSynchronize(int device_type, int device_id, TVMStreamHandle stream);
TVM_DLL int TVMStreamStreamSynchronize(int device_type, int device_id, TVMStreamHandle src,
                                       TVMStreamHandle dst);

TVM_DLL int TVMObjectGetTypeIndex(TVMObjectHandle obj, unsigned* out_tindex);
TVM_DLL int TVMObjectTypeKey2Index(const char* type_key, unsigned* out_tindex);
TVM_DLL int TVMObjectTypeIndex2Key(unsigned tindex, char** out_type_key);
TVM_DLL int TVMObjectRetain(TVMObjectHandle obj);
TVM_DLL int TVMObjectFree(TVMObjectHandle obj);
TVM_DLL int TVMByteArrayFree(TVMByteArray* arr);
TVM_DLL int TVMObjectDerivedFrom(uint32_t child_type_index, uint32_t parent_type_index, int* is_derived);

TVM_DLL int TVMDeviceAllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment, DLDataType type_hint,
                                    void** out_data);
TVM_DLL int TVMDeviceAllocDataSpaceWithScope(DLDevice dev, int ndim, const int64_t* shape, DLDataType dtype,
                                             const char* mem_scope, void** out_data);
TVM_DLL int TVMDeviceFreeDataSpace(DLDevice dev, void* ptr);
TVM_DLL int TVMDeviceCopyDataFromTo(DLTensor* from, DLTensor* to, TVMStreamHandle stream);

#ifdef __cplusplus
}
#endif
#endif /* TVM_RUNTIME_C_RUNTIME_API_H_ */
