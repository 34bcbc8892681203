/*
 * A bare-metal demo in the shape of apps/microtvm/cmsisnn's src/demo_bare_metal.c: the module is
 * named 'detection', the input and output buffers come from generated headers, the structs use
 * TVM's member names. It prints the scores and the class with the largest one.
 */
#include <stdio.h>
#include <tvm_runtime.h>
#include <tvmgen_detection.h>

/* Header files generated from the test input */
#include "inputs.h"
#include "outputs.h"

int main(void) {
  size_t i, best = 0;
  struct tvmgen_detection_outputs detection_outputs = {
      .output = output,
  };
  struct tvmgen_detection_inputs detection_inputs = {
      .x = input,
  };

  printf("Starting Demo\n");
  printf("Running detection inference\n");
  if (tvmgen_detection_run(&detection_inputs, &detection_outputs) != 0) {
    printf("Inference failed\n");
    return 1;
  }

  printf("output");
  for (i = 0; i < sizeof output / sizeof output[0]; ++i) {
    printf(" %.9g", (double)output[i]);
    if (output[i] > output[best]) {
      best = i;
    }
  }
  printf("\nClass %u detected.\n", (unsigned)best);
  printf("EXITTHESIM\n");
  return 0;
}
