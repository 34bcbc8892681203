/* The device API an Ethos-U firmware implements for the model, in the shape of
 * apps/microtvm/ethosu's include/tvm_ethosu_runtime.h: the context is the driver. */
#ifndef TVM_ETHOSU_RUNTIME_H_
#define TVM_ETHOSU_RUNTIME_H_

#include <stdint.h>

#include "ethosu_mod.h"

typedef struct ethosu_driver tvm_device_ethos_u_t;

int32_t TVMEthosULaunch(tvm_device_ethos_u_t* context, const float* in, float* out, int32_t n, float floor_);
int32_t TVMDeviceEthosUActivate(tvm_device_ethos_u_t* context);
int32_t TVMDeviceEthosUOpen(tvm_device_ethos_u_t* context);
int32_t TVMDeviceEthosUClose(tvm_device_ethos_u_t* context);
int32_t TVMDeviceEthosUDeactivate(tvm_device_ethos_u_t* context);

#endif /* TVM_ETHOSU_RUNTIME_H_ */
