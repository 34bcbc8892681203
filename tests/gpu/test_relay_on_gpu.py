"""TVM's relay tutorial network (tests/host/test_relay_api.py) built for CUDA (nvcc) and run on OpenCL (PoCL)."""
import numpy as np
import pytest

import aot
from aot import relay
from aot.contrib import graph_executor

from aot.relay import testing

from test_gpu import nvcc, opencl

from test_relay_api import _bn_params, _tutorial_net, _tutorial_reference  # noqa: F401


@nvcc
@pytest.mark.parametrize("target", ["cuda", "cuda -libs=cudnn"])
def test_tutorial_builds_for_cuda(target):
    """Without a GPU the CUDA module is compiled with nvcc -Werror and linked; its OpenCL twin runs
    (test below)."""
    from aot.host import build_host, cuda_device_count
    net, params = testing.create_workload(_tutorial_net(16, (1, 3, 224, 224)))
    lib = relay.build(net, target, params=params)
    assert build_host(lib.tar)
    if "cudnn" in target:
        assert "cudnn" in lib.get_source()
    if cuda_device_count():
        x = np.random.default_rng(2).uniform(-1, 1, (1, 3, 224, 224)).astype("float32")
        m = graph_executor.GraphModule(lib["default"](aot.cuda(0)))
        m.set_input("data", x)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), _tutorial_reference(x, params), rtol=1e-4, atol=1e-4)


@opencl
def test_tutorial_runs_on_opencl():
    net, params = testing.create_workload(_tutorial_net(16, (1, 3, 224, 224)))
    params.update(_bn_params(np.random.default_rng(1), 16))
    lib = relay.build(net, "opencl", params=params)
    x = np.random.default_rng(2).uniform(-1, 1, (1, 3, 224, 224)).astype("float32")
    m = graph_executor.GraphModule(lib["default"](aot.opencl(0)))
    m.set_input("data", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _tutorial_reference(x, params), rtol=1e-4, atol=1e-4)
