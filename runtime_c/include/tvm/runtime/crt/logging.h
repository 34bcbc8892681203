/*
 * Logging and checks over TVMLogf and TVMPlatformAbort, with the names of Apache TVM's
 * tvm/runtime/crt/logging.h. The macros are C99 (__VA_ARGS__ carries the format and its values).
 */
#ifndef TVM_RUNTIME_CRT_LOGGING_H_
#define TVM_RUNTIME_CRT_LOGGING_H_

#include <tvm/runtime/crt/platform.h>

#include "crt_config.h"

#define TVM_CRT_LOG_LEVEL_DEBUG 3
#define TVM_CRT_LOG_LEVEL_INFO 2
#define TVM_CRT_LOG_LEVEL_WARN 1
#define TVM_CRT_LOG_LEVEL_ERROR 0

#ifndef TVM_CRT_LOG_LEVEL
#define TVM_CRT_LOG_LEVEL TVM_CRT_LOG_LEVEL_WARN
#endif

/* LOG(level, fmt, ...): printed when the configured level reaches `level`. */
#define LOG(level, ...)              \
  do {                               \
    if (TVM_CRT_LOG_LEVEL >= (level)) { \
      TVMLogf(__VA_ARGS__);          \
    }                                \
  } while (0)

#define LOG_ERROR(...) LOG(TVM_CRT_LOG_LEVEL_ERROR, __VA_ARGS__)
#define LOG_WARN(...) LOG(TVM_CRT_LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...) LOG(TVM_CRT_LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) LOG(TVM_CRT_LOG_LEVEL_DEBUG, __VA_ARGS__)

/* CHECK(x): abort with kTvmErrorPlatformCheckFailure when x is false, after logging where. */
#ifndef CHECK
#define CHECK(x)                                                      \
  do {                                                                \
    if (!(x)) {                                                       \
      TVMLogf("%s:%d: Check failed: %s\n", __FILE__, __LINE__, #x);   \
      TVMPlatformAbort(kTvmErrorPlatformCheckFailure);                \
    }                                                                 \
  } while (0)
#endif

/* CHECK_<op>(x, y, fmt, ...): the comparison, and the caller's message after it on failure. */
#define TVM_CRT_CHECK_OP_(op, x, y, ...)                                          \
  do {                                                                            \
    if (!((x)op(y))) {                                                            \
      TVMLogf("%s:%d: Check failed: %s %s %s: ", __FILE__, __LINE__, #x, #op, #y); \
      TVMLogf(__VA_ARGS__);                                                       \
      TVMLogf("\n");                                                              \
      TVMPlatformAbort(kTvmErrorPlatformCheckFailure);                            \
    }                                                                             \
  } while (0)

/* TVM's name for the same check, with the operator first (CHECK_BINARY_OP(<, x, y, fmt, ...)). */
#ifndef CHECK_BINARY_OP
#define CHECK_BINARY_OP(op, x, y, ...) TVM_CRT_CHECK_OP_(op, x, y, __VA_ARGS__)
#endif

#ifndef CHECK_LT
#define CHECK_LT(x, y, ...) TVM_CRT_CHECK_OP_(<, x, y, __VA_ARGS__)
#endif
#ifndef CHECK_GT
#define CHECK_GT(x, y, ...) TVM_CRT_CHECK_OP_(>, x, y, __VA_ARGS__)
#endif
#ifndef CHECK_LE
#define CHECK_LE(x, y, ...) TVM_CRT_CHECK_OP_(<=, x, y, __VA_ARGS__)
#endif
#ifndef CHECK_GE
#define CHECK_GE(x, y, ...) TVM_CRT_CHECK_OP_(>=, x, y, __VA_ARGS__)
#endif
#ifndef CHECK_EQ
#define CHECK_EQ(x, y, ...) TVM_CRT_CHECK_OP_(==, x, y, __VA_ARGS__)
#endif
#ifndef CHECK_NE
#define CHECK_NE(x, y, ...) TVM_CRT_CHECK_OP_(!=, x, y, __VA_ARGS__)
#endif

#endif /* TVM_RUNTIME_CRT_LOGGING_H_ */
