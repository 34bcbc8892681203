"""A plug-in backend's MLF (tests/host/test_uma.py) on a QEMU Cortex-M4."""
import os
import shutil

import numpy as np

import pytest

from conftest import ort_run

from test_uma import backend, conv_model  # noqa: F401


@pytest.mark.board
def test_vanilla_on_cortex_m4():
    import aot
    if shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None:
        if os.environ.get("AOT_REQUIRE_BOARDS") == "1":
            raise RuntimeError("AOT_REQUIRE_BOARDS=1 but the Arm toolchain or QEMU is missing")
        pytest.skip("arm-none-eabi-gcc / qemu-system-arm not installed (CI installs them)")
    backend("vanilla")
    m = conv_model(2)
    res = aot.compile(m.SerializeToString(), target="vanilla_accelerator, c -mcpu=cortex-m4")
    x = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    got = aot.run(res, {"x": x}, board="qemu-cortex-m4")["c4"]
    np.testing.assert_allclose(got, ort_run(m, {"x": x})["c4"], rtol=1e-4, atol=1e-4)
