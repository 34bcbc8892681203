/*
 * Default CRT configuration, as Apache TVM's crt_config.h names it. A firmware that has its own
 * crt_config.h puts its directory before runtime/include on the include path; that one is used.
 */
#ifndef TVM_RUNTIME_CRT_CRT_CONFIG_H_
#define TVM_RUNTIME_CRT_CRT_CONFIG_H_

/*! \brief Log level of tvm/runtime/crt/logging.h (0 error .. 3 debug). */
#ifndef TVM_CRT_LOG_LEVEL
#define TVM_CRT_LOG_LEVEL 1
#endif

/*! \brief Low-level debugging in the runtime (unused by aot's runtime). */
#define TVM_CRT_DEBUG 0

/*! \brief Largest tensor rank and argument count a firmware's own runtime code expects. */
#define TVM_CRT_MAX_NDIM 6
#define TVM_CRT_MAX_ARGS 10

/*! \brief Registry and module limits of TVM's RPC runtime (aot ships no registry). */
#define TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES 512
#define TVM_CRT_MAX_REGISTERED_MODULES 2

/*! \brief Largest packet of a host link, length header included (firmware sizes UART buffers by it). */
#define TVM_CRT_MAX_PACKET_SIZE_BYTES 2048

/*! \brief String length limits of TVM's RPC runtime. */
#define TVM_CRT_MAX_STRLEN_DLTYPE 10
#define TVM_CRT_MAX_STRLEN_FUNCTION_NAME 120
#define TVM_CRT_MAX_STRLEN_PARAM_NAME 80

#endif /* TVM_RUNTIME_CRT_CRT_CONFIG_H_ */
