/* An Ethos-U demo main in the shape of apps/microtvm/ethosu's src/demo_bare_metal.c: the driver is
 * reserved, handed to the model in struct tvmgen_default_devices, and released after the run. */
#include <stdio.h>
#include <tvm_ethosu_runtime.h>
#include <tvm_runtime.h>
#include <tvmgen_default.h>

#include "inputs.h"
#include "outputs.h"

int main(void) {
  size_t i;
  struct ethosu_driver* driver;
  struct tvmgen_default_outputs outputs = {
      .output = output,
  };
  struct tvmgen_default_inputs inputs = {
      .x = input,
  };
  int32_t rc;
  driver = ethosu_reserve_driver();
  {
    struct tvmgen_default_devices devices = {
        .ethos_u = driver,
    };
    rc = tvmgen_default_run(&inputs, &outputs, &devices);
  }
  printf("launches %d opened %d active %d\n", driver->launches, driver->opened, driver->active);
  ethosu_release_driver(driver);
  if (rc != 0) {
    printf("run failed\n");
    return 1;
  }
  printf("output");
  for (i = 0; i < sizeof output / sizeof output[0]; ++i) {
    printf(" %.9g", (double)output[i]);
  }
  printf("\n");
  return 0;
}
