"""UMA as TVM has it: a backend written the way TVM's UMA templates write one (relay-name
pattern, a TIR pass registered at TIR_PHASE_0 that swaps a topi block's loops for a
tir.call_extern, the C model brought in by the includes hook), checked with testing.aot's
compile_and_run against numpy's convolution."""
import json
import os
import tarfile
from collections import OrderedDict

import numpy as np
import pytest

import aot as tvm
from aot import relay, tir
from aot.errors import AotError
from aot.micro.testing.aot_test_utils import AOT_DEFAULT_RUNNER
from aot.relay.dataflow_pattern import is_op, wildcard
from aot.testing.aot import AOTTestModel, compile_and_run, generate_ref_data
from aot.uma.api.utils import PassPhase
from aot.uma.backend import UMABackend

C_MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mac_array_conv.inc")


@tvm.tir.transform.prim_func_pass(opt_level=2)
class OffloadConv:
    """The conv2d_nchw block's loops (below the batch loop) become one mac_array_conv call;
    TOPI's padding stage goes, the accelerator pads by itself."""

    def transform_function(self, func, mod, ctx):
        names = []
        tir.stmt_functor.post_order_visit(func.body, lambda s: names.append(s.name_hint)
                                          if isinstance(s, tir.Block) else None)
        if "conv2d_nchw" not in names:
            return func
        sch = tir.Schedule(func)
        n, co, h, w, ci, kh, kw = (sch.get(lp) for lp in sch.get_loops(sch.get_block("conv2d_nchw")))
        data, weight, out = (b.data for b in func.buffer_map.values())
        call = tir.call_extern("int32", "mac_array_conv", data, weight, out, co.extent, ci.extent, h.extent,
                               w.extent, kh.extent, kw.extent)

        def rewrite(s):
            if s is co:
                return tir.Evaluate(call)
            if isinstance(s, tir.SeqStmt):
                return s.seq[-1]          # the conv nest, without the padding stage before it
            return s
        return func.with_body(tir.stmt_functor.ir_transform(func.body, None, rewrite, ["tir.For", "tir.SeqStmt"]))


class MacArrayBackend(UMABackend):
    def __init__(self, passes=True):
        super().__init__()
        self._register_target_attr("rows")
        conv = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"strides": [1, 1], "groups": 1})
        self._register_pattern("conv2d", conv)
        if passes:
            self._register_tir_pass(PassPhase.TIR_PHASE_0, OffloadConv())
        self._register_codegen(fmt="c", includes=lambda: f'#include "{C_MODEL}"\n')

    @property
    def target_name(self):
        return "mac_array"


def _net(cin=6, cout=5, hw=9):
    """conv (same, stride 1: the accelerator's) -> relu -> conv (stride 2: stays C)."""
    rng = np.random.default_rng(7)
    x = relay.var("x", shape=(1, cin, hw, hw), dtype="float32")
    w1 = relay.var("w1", shape=(cout, cin, 3, 3), dtype="float32")
    w2 = relay.const(rng.standard_normal((4, cout, 3, 3)).astype("float32"))
    y = relay.nn.conv2d(relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1))), w2, strides=(2, 2), padding=(1, 1))
    mod = tvm.IRModule()
    mod["main"] = relay.Function([x, w1], y)
    mod = relay.transform.InferType()(mod)
    inputs = OrderedDict([("x", rng.standard_normal((1, cin, hw, hw)).astype("float32")),
                          ("w1", rng.standard_normal((cout, cin, 3, 3)).astype("float32"))])
    return mod, inputs


def test_tir_pass_offloads_the_conv_and_the_check_passes(tmp_path):
    mod, inputs = _net()
    outputs = generate_ref_data(mod, inputs)
    backend = MacArrayBackend()
    backend.register()
    part = backend.partition(mod)
    target = tvm.target.Target("mac_array", host=tvm.target.Target("c"))
    assert compile_and_run(AOTTestModel(module=part, inputs=inputs, outputs=outputs, output_tolerance=1e-4),
                           AOT_DEFAULT_RUNNER, interface_api="c", use_unpacked_api=True, target=target,
                           test_dir=str(tmp_path))
    with tarfile.open(tmp_path / "default.tar") as t:
        lib1 = t.extractfile("./codegen/host/src/default_lib2.c").read().decode()     # the backend's module
        shipped = t.extractfile("./codegen/host/include/mac_array_conv.inc").read().decode()
    assert shipped == open(C_MODEL).read()
    assert '#include "mac_array_conv.inc"' in lib1 and C_MODEL not in lib1     # the MLF builds anywhere
    # the first conv is the accelerator's one call; the strided conv stays generated C
    assert "mac_array_conv((float*)x, (float*)w1, (float*)conv2d_nchw, 5, 6, 9, 9, 3, 3);" in lib1
    assert lib1.count("mac_array_conv(") == 1 and "pad_temp" not in lib1.split("mac_array_main_0")[1].split("}")[0]


def test_without_tir_passes_the_region_is_topis_c(tmp_path):
    mod, inputs = _net(cin=3, cout=4, hw=6)
    outputs = generate_ref_data(mod, inputs)
    backend = MacArrayBackend(passes=False)
    backend.register()
    assert compile_and_run(AOTTestModel(module=backend.partition(mod), inputs=inputs, outputs=outputs,
                                        output_tolerance=1e-4), AOT_DEFAULT_RUNNER, interface_api="c",
                           use_unpacked_api=True, target=tvm.target.Target("mac_array", host="c"),
                           test_dir=str(tmp_path))
    with tarfile.open(tmp_path / "default.tar") as t:
        lib1 = t.extractfile("./codegen/host/src/default_lib2.c").read().decode()     # the backend's module
    region = lib1.split("int32_t tvmgen_default_mac_array_main_0(")[1].split("\n}\n")[0]
    assert "mac_array_conv(" not in region
    # TOPI's pad_temp (1x3x8x8 floats) is the region's scratch, planned in the workspace, not a C local
    assert region.startswith("const float* x, const float* w1, float* conv2d_nchw, float* scratch)")
    meta = json.loads(tarfile.open(tmp_path / "default.tar").extractfile("./metadata.json").read())
    [fn] = meta["modules"]["default"]["aot"]["external_functions"]
    assert fn["scratch_bytes"] == 3 * 8 * 8 * 4


def test_a_failing_tir_pass_is_named():
    @tvm.tir.transform.prim_func_pass(opt_level=0)
    class Broken:
        def transform_function(self, func, mod, ctx):
            raise KeyError("no such loop")

    class B(MacArrayBackend):
        def __init__(self):
            super().__init__(passes=False)
            self._register_tir_pass(PassPhase.TIR_PHASE_1, Broken())

    mod, _ = _net(cin=2, cout=2, hw=4)
    b = B()
    b.register()
    with pytest.raises(AotError, match="backend 'mac_array'.*TIR pass Broken failed.*KeyError"):
        relay.build(b.partition(mod), target=tvm.target.Target("mac_array", host="c"),
                    executor=relay.backend.Executor("aot"), runtime=relay.backend.Runtime("crt"))
