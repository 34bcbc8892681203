/* The firmware's side of the device API: the hooks count on the driver; the "NPU" computes the
 * operator it is given (a ReLU with a floor) only while the driver is open and active. */
#include "tvm_ethosu_runtime.h"

static struct ethosu_driver g_driver;

struct ethosu_driver* ethosu_reserve_driver(void) {
  g_driver.reserved = 1;
  return &g_driver;
}

void ethosu_release_driver(struct ethosu_driver* drv) { drv->reserved = 0; }

int32_t TVMEthosULaunch(tvm_device_ethos_u_t* context, const float* in, float* out, int32_t n, float floor_) {
  int32_t i;
  if (context == 0 || !context->reserved || context->opened != 1 || context->active != 1) {
    return -1;
  }
  for (i = 0; i < n; ++i) {
    out[i] = in[i] > floor_ ? in[i] : floor_;
  }
  context->launches++;
  return 0;
}

int32_t TVMDeviceEthosUActivate(tvm_device_ethos_u_t* context) {
  context->active++;
  return 0;
}

int32_t TVMDeviceEthosUDeactivate(tvm_device_ethos_u_t* context) {
  context->active--;
  return 0;
}

int32_t TVMDeviceEthosUOpen(tvm_device_ethos_u_t* context) {
  context->opened++;
  return 0;
}

int32_t TVMDeviceEthosUClose(tvm_device_ethos_u_t* context) {
  context->opened--;
  return 0;
}
