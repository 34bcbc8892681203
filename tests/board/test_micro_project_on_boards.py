"""tvm.micro with an emulated board as the template: the generated project builds its firmware
with make (arm-none-eabi-gcc) and a Session's AOT executor runs it under QEMU; the outputs are
the host runner's for the same MLF, and numpy's."""
import shutil

import numpy as np
import pytest

import aot as tvm
import aot.micro
import aot.micro.testing
from aot import relay
from aot.relay.backend import Executor, Runtime

pytestmark = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None,
                                reason="needs arm-none-eabi-gcc and qemu-system-arm")


@pytest.mark.parametrize("board", ["qemu-cortex-m4", "qemu-cortex-m55"])
def test_board_project_runs_through_a_session(tmp_path, board):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((6, 3, 3, 3)).astype("float32")
    x = relay.var("x", shape=(1, 3, 8, 8), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.nn.relu(relay.nn.conv2d(x, relay.const(w), padding=(1, 1))))
    with tvm.transform.PassContext(opt_level=3, config={"tir.disable_vectorize": True}):
        module = relay.build(mod, target=tvm.micro.testing.get_target(board), executor=Executor("aot"),
                             runtime=Runtime("crt", {"system-lib": True}))
    project = tvm.micro.generate_project(tvm.micro.get_microtvm_template_projects(board), module,
                                         tmp_path / "project", {"opt": "-O2"})
    project.build()
    project.flash()
    assert (tmp_path / "project" / "build" / "firmware.elf").is_file()
    xv = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    with tvm.micro.Session(project.transport()) as session:
        ex = tvm.runtime.executor.aot_executor.AotModule(session.create_aot_executor())
        ex.get_input("x").copyfrom(xv)
        ex.run()
        got = ex.get_output(0).numpy()
    from aot.testing.aot import generate_ref_data
    want = generate_ref_data(mod, {"x": xv})["output"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
