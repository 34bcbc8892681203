"""The models the test suite compiles, as one corpus for whole-suite checks (static analysis of
the generated C). Op models are not listed twice: they are collected from tests/host/test_ops.py and
the other check_model tests (fusion, passes, names) by calling their test functions, over their
parametrize marks, with check_model swapped for a recorder; a case added there is in the corpus
with no edit here."""
from __future__ import annotations

import glob
import hashlib
import inspect
import itertools
import os

import numpy as np
import pytest
from onnx import TensorProto, helper

from conftest import SHARED, init, make_model, vi

MLPERF_DIR = os.path.join(SHARED, "models", "mlperf_tiny")


class Case:
    """One compile job: a model (path or ModelProto) and aot.compile keyword options."""

    def __init__(self, name, model, **options):
        self.name, self.model, self.options = name, model, options

    def source(self):
        return self.model if isinstance(self.model, str) else self.model.SerializeToString()


def mlperf_cases():
    """Every .onnx under the shared MLPerf Tiny folder: the float models test_models and
    test_memory run, and the int8 QDQ exports."""
    paths = sorted(glob.glob(os.path.join(MLPERF_DIR, "*", "*.onnx")))
    return [Case(os.path.relpath(p, MLPERF_DIR), p) for p in paths]


def light_cases():
    from test_models import LIGHT, LIGHT_DIR
    return [Case(f"light_{n}", os.path.join(LIGHT_DIR, f"light_{n}.onnx")) for n in LIGHT]


def _param_sets(fn):
    """The argument dicts pytest would call `fn` with (cartesian product of its parametrize
    marks), or [] when it needs a fixture."""
    axes = []
    for mark in reversed(getattr(fn, "pytestmark", [])):
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = []
        for v in values:
            v = v.values if hasattr(v, "values") and hasattr(v, "marks") else v
            rows.append(dict(zip(names, v if len(names) > 1 else (v,))))
        axes.append(rows)
    sets = [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*axes)]
    params = inspect.signature(fn).parameters
    return [s for s in sets if set(params) <= set(s)]


class _Recorded(Exception):
    pass


RECORDED_MODULES = ("test_ops", "test_fusion", "test_passes", "test_names")


def op_cases(modules=RECORDED_MODULES):
    """The models the check_model tests of `modules` build (the single-op and small-graph
    models), deduplicated by content, each named after the first test that builds it."""
    import importlib
    found, seen = [], set()
    current = None

    def record(model, feeds, *args, **kwargs):
        data = model.SerializeToString()
        key = hashlib.sha256(data).hexdigest()
        if key not in seen:
            seen.add(key)
            found.append((current, model))
        raise _Recorded()    # the test goes no further: nothing is compiled or run here

    for mod_name in modules:
        mod = importlib.import_module(mod_name)
        rng = getattr(mod, "RNG", None)
        state = rng.bit_generator.state if rng is not None else None   # leave its random draws as they were
        original = mod.check_model
        mod.check_model = record
        try:
            for fname, fn in sorted(vars(mod).items()):
                if not (fname.startswith("test_") and callable(fn)):
                    continue
                for k, kwargs in enumerate(_param_sets(fn)):
                    current = f"{mod_name}.{fname}[{k}]"
                    try:
                        fn(**kwargs)
                    except (Exception, pytest.skip.Exception):   # _Recorded, a skip, or a test of
                        pass                                      # something after check_model
        finally:
            mod.check_model = original
            if rng is not None:
                rng.bit_generator.state = state
    return [Case(name, m) for name, m in found]


def _out(name):
    return helper.make_empty_tensor_value_info(name)


def _chain():
    """Conv -> Relu -> MaxPool -> Reshape -> Gemm: two inputs, two outputs, a real workspace."""
    rng = np.random.default_rng(7)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Reshape", ["p", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "g"], ["y"], transB=1),
             helper.make_node("Add", ["y", "bias"], ["z"])]
    inits = [init("w", rng.standard_normal((4, 2, 3, 3)).astype(np.float32)),
             init("shape", np.array([1, -1], np.int64)),
             init("g", rng.standard_normal((3, 64)).astype(np.float32))]
    return make_model(nodes, [vi("x", [1, 2, 8, 8]), vi("bias", [1, 3])], [_out("z"), _out("r")], inits)


def _half(dtype):
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=dtype), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)]
    return make_model(nodes, [vi("x", [3, 5])], [_out("y")], opset=13 if dtype == TensorProto.FLOAT16 else 14)


def option_cases():
    """Template branches the op models do not reach: workspace I/O, user pools (with workspace I/O too),
    the packed interface, a module name,
    no constants and no workspace, copy-only outputs, float16/bfloat16 helpers."""
    chain = _chain()
    ident = make_model([helper.make_node("Identity", ["x"], ["y"])], [vi("x", [2, 3])], [_out("y")])
    ints = make_model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=0)],
                      [vi("a", [2, 4], TensorProto.INT64), vi("b", [4], TensorProto.INT64)], [_out("y")])
    return [
        Case("chain", chain),
        Case("chain_workspace_io", chain, use_workspace_io=True),
        Case("chain_pools", chain, workspace_pools=[("sram", None), ("ext", None)]),
        Case("chain_pools_workspace_io", chain, workspace_pools=[("sram", None)], use_workspace_io=True),
        Case("chain_packed", chain, interface_api="packed", io_names="tvm"),
        Case("chain_named", chain, model_name="net_2", in_place=False),
        Case("identity", ident),
        Case("identity_workspace_io", ident, use_workspace_io=True),
        Case("float16", _half(TensorProto.FLOAT16)),
        Case("bfloat16", _half(TensorProto.BFLOAT16)),
        Case("int64_mod", ints),
    ]


def debug_cases():
    """The instrumented build of `aot debug` (main reports each kernel's output)."""
    return [Case("chain_debug", _chain(), debug=True)]


def compile_case(source, options):
    """The MLF tar bytes of one case (a top-level function: process pools call it)."""
    options = dict(options)
    if options.pop("debug", False):     # not an aot.compile option: `aot debug` builds it
        from aot.compiler import Options, compile_model
        return compile_model(source, Options(debug=True, **options)).tar
    import aot
    return aot.compile(source, **options).tar
