"""UMA's TVM names (no C compiler here): api.utils, the registration methods TVM's backends
call and what is refused by name, partition() of a relay module, a backend target with a
host, and the C a TIR pass leaves (read from the MLF, not built)."""
import io
import tarfile

import numpy as np
import pytest

import aot as tvm
from aot import relay, tir
from aot.errors import AotError
from aot.relay.backend import Executor, Runtime
from aot.relay.dataflow_pattern import is_op, wildcard
from aot.target import split_targets
from aot.uma.api.utils import PassPhase, add_llvm_to_block, uma_available
from aot.uma.backend import BackendError, UMABackend


class Npu(UMABackend):
    def __init__(self):
        super().__init__()
        self._register_target_attr("dimension")
        self._register_pattern("dense", is_op("nn.dense")(wildcard(), wildcard()))

    @property
    def target_name(self):
        return "test_npu"


def test_api_utils():
    assert uma_available()
    assert [p.name for p in PassPhase][:3] == ["PRE_PARTITIONING", "POST_PARTITIONING_0", "POST_PARTITIONING_1"]
    assert {p.name for p in PassPhase} >= {"TIR_PHASE_0", "TIR_PHASE_3"}
    with pytest.raises(AotError, match="add_llvm_to_block\\('conv'\\).*_register_codegen"):
        add_llvm_to_block(None, "conv", "int f(void) { return 0; }")


def test_registration_refusals_name_the_method():
    b = Npu()
    with pytest.raises(BackendError, match="_register_tir_pass at PassPhase.PRE_PARTITIONING"):
        b._register_tir_pass(PassPhase.PRE_PARTITIONING, lambda m: m)
    with pytest.raises(BackendError, match="_register_relay_pass at PassPhase.POST_PARTITIONING_0"):
        b._register_relay_pass(PassPhase.POST_PARTITIONING_0, lambda m: m)
    with pytest.raises(BackendError, match="_register_operator_strategy\\('nn.conv2d'\\)"):
        b._register_operator_strategy("nn.conv2d", None)
    with pytest.raises(BackendError, match="includes hook failed"):
        b._register_codegen(fmt="c", includes=lambda: 1 / 0)
    with pytest.raises(BackendError, match="returned 'static int k = 1;', which is not an #include line"):
        b._register_codegen(fmt="c", includes=lambda: '#include <npu.h>\nstatic int k = 1;\n')
    with pytest.raises(BackendError, match="format 'verilog'"):
        b._register_codegen(fmt="verilog")


def test_partition_of_a_relay_module_runs_pre_partitioning_passes_and_marks_it():
    seen = []

    class WithPass(Npu):
        def __init__(self):
            super().__init__()
            self._register_relay_pass(PassPhase.PRE_PARTITIONING, lambda m: seen.append(m) or m)

    x = relay.var("x", shape=(2, 8), dtype="float32")
    w = relay.var("w", shape=(4, 8), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.dense(x, w)))
    b = WithPass()
    b.register()
    out = b.partition(mod)
    assert seen == [mod] and out is not mod and out.partitioned_for == ("test_npu",)
    assert not hasattr(mod, "partitioned_for")          # the input module is left as it was
    assert out["main"] is mod["main"]


def test_a_backend_target_with_a_host_compiles_the_rest_on_the_host():
    b = Npu()
    b.register()
    main, backends = split_targets(tvm.target.Target("test_npu -dimension=8", host=tvm.target.Target("c")))
    assert str(main) == "c -keys=cpu" and backends == [b] and b.get_target_attr("dimension") == "8"
    with pytest.raises(AotError, match="exactly one code-generation target"):
        split_targets(tvm.target.Target("test_npu"))


@tvm.tir.transform.prim_func_pass(opt_level=0)
class DenseToCall:
    """The whole T_matmul_NT computation as one npu_dense(x, w, y, m, n, k) call."""

    def transform_function(self, func, mod, ctx):
        x, w, y = (b.data for b in func.buffer_map.values())
        m, k = func.params[0].shape
        n = func.params[-1].shape[1]
        return func.with_body(tir.Evaluate(tir.call_extern("int32", "npu_dense", x, w, y, m, n, k)))


def test_a_tir_pass_result_is_the_region_c_function():
    class Dense(Npu):
        def __init__(self):
            super().__init__()
            self._register_tir_pass(PassPhase.TIR_PHASE_0, DenseToCall())
            self._register_codegen(fmt="c", includes=lambda: "#include <npu.h>\n")

    x = relay.var("x", shape=(2, 8), dtype="float32")
    w = relay.const(np.ones((4, 8), "float32"))
    mod = tvm.IRModule.from_expr(relay.nn.relu(relay.nn.dense(x, w)))
    b = Dense()
    b.register()
    lib = relay.build(b.partition(mod), target=tvm.target.Target("test_npu", host="c"), executor=Executor("aot"),
                      runtime=Runtime("crt"))
    with tarfile.open(fileobj=io.BytesIO(lib.tar)) as t:
        lib1 = t.extractfile("./codegen/host/src/default_lib2.c").read().decode()     # the backend's module
    region = lib1.split("int32_t tvmgen_default_test_npu_main_0(")[1].split("\n}\n")[0]
    assert "npu_dense((float*)" in region and ", 2, 4, 8);" in region
    assert '#include "npu.h"' in lib1


def test_call_packed_is_refused_by_name():
    @tvm.tir.transform.prim_func_pass(opt_level=0)
    class Packed:
        def transform_function(self, func, mod, ctx):
            x = next(iter(func.buffer_map.values()))
            return func.with_body(tir.Evaluate(tir.call_packed("npu_run", x.data)))

    class P(Npu):
        def __init__(self):
            super().__init__()
            self._register_tir_pass(PassPhase.TIR_PHASE_2, Packed())

    x = relay.var("x", shape=(2, 8), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.nn.dense(x, relay.const(np.ones((4, 8), "float32"))))
    b = P()
    b.register()
    with pytest.raises(AotError, match="call_packed\\('npu_run'\\).*use tir.call_extern"):
        relay.build(b.partition(mod), target=tvm.target.Target("test_npu", host="c"), executor=Executor("aot"),
                    runtime=Runtime("crt"))


def test_a_partitioned_module_needs_a_target_naming_its_backend():
    x = relay.var("x", shape=(2, 8), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.nn.dense(x, relay.const(np.ones((4, 8), "float32"))))
    b = Npu()
    b.register()
    with pytest.raises(AotError, match="partitioned for backend 'test_npu'.*Target\\('test_npu', host"):
        relay.build(b.partition(mod), target="c", executor=Executor("aot"), runtime=Runtime("crt"))


def test_a_function_style_prim_func_pass_runs_in_its_phase():
    order = []

    @tvm.tir.transform.prim_func_pass(opt_level=0)
    def first(func, mod, ctx):
        order.append(("first", func.name))
        return func

    @tvm.tir.transform.prim_func_pass(opt_level=0)
    class Second:
        def transform_function(self, func, mod, ctx):
            order.append(("second", func.name))
            return func

    class Two(Npu):
        def __init__(self):
            super().__init__()
            self._register_tir_pass(PassPhase.TIR_PHASE_3, Second())
            self._register_tir_pass(PassPhase.TIR_PHASE_1, first)

    x = relay.var("x", shape=(2, 8), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.nn.dense(x, relay.const(np.ones((4, 8), "float32"))))
    b = Two()
    b.register()
    relay.build(b.partition(mod), target=tvm.target.Target("test_npu", host="c"), executor=Executor("aot"),
                runtime=Runtime("crt"))
    assert order == [("first", "tvmgen_default_test_npu_main_0"), ("second", "tvmgen_default_test_npu_main_0")]
