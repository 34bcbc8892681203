"""An int16x8 TFLite network (tests/host/test_tflite_int16.py) on a QEMU Cortex-M4, bit for bit with TFLite
Micro."""
import shutil

import numpy as np
import pytest

from tflm_oracle import run_tflm

from test_tflite_int16 import _feed, _int16_net, tflm  # noqa: F401


@tflm
@pytest.mark.board
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("arm-none-eabi-gcc", "qemu-system-arm")),
                    reason="arm-none-eabi-gcc or qemu-system-arm not installed")
def test_int16x8_network_is_bit_exact_on_cortex_m4():
    """The same network as firmware (the generated C built with -std=c99 -Wall -Wextra -Werror
    -pedantic by arm-none-eabi-gcc) under QEMU: int64 accumulators and requantisation on a 32-bit
    core give TFLM's outputs."""
    import aot
    model = _int16_net()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    x = res.graph.inputs[0]
    for trial in range(3):
        feed = _feed(np.random.default_rng(200 + trial), x.type.shape)
        (ref,) = run_tflm(model, [feed])
        got = aot.run(res, {x.name: feed}, board="qemu-cortex-m4")[res.graph.output_names[0]]
        np.testing.assert_array_equal(got, ref, err_msg=f"trial {trial}")
