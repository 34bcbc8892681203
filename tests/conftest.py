import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SHARED = os.path.join(ROOT, "..", "shared")
TESTS = os.path.dirname(os.path.abspath(__file__))

# The tiers (docs/testing.md): a directory each, selected by path. The default tier (pyproject's
# testpaths, README's test command) is unit + host; .ci/run runs every tier, one pytest each.
TIERS = ("unit", "host", "models", "static", "board", "gpu", "conformance", "fuzz")
# Test modules import helpers from one another by module name (`from test_x86_schedule import ...`,
# tests/model_corpus.py's op_cases): every tier's directory is importable, whichever tier runs.
# (tests/fuzz is the package `fuzz`, importable from tests/ itself.)
for _tier in TIERS[:-1]:
    _d = os.path.join(TESTS, _tier)
    if _d not in sys.path:
        sys.path.append(_d)

# what a unit test may not start: a C compiler, a linker driver, a build tool, a C analyzer (and no test
# outside tests/board starts an emulator)
C_TOOLS = ("gcc", "cc", "clang", "g++", "c++", "nvcc", "cppcheck", "clang-tidy", "make", "cmake", "ld")
NO_CC = "no-c-compiler-in-tests-unit"     # $CC under tests/unit: aot's host build, in or out of process


def tier_of(path):
    rel = os.path.relpath(str(path), TESTS).split(os.sep)
    return rel[0] if len(rel) > 1 and rel[0] in TIERS else None


def pytest_collection_modifyitems(config, items):
    # each test carries its tier as a marker too: `-m "not board"` and the like keep working
    for item in items:
        tier = tier_of(item.path)
        if tier is not None and tier not in item.keywords:
            item.add_marker(tier)


def _is_c_tool(argv0):
    exe = os.path.basename(str(argv0))
    return exe in C_TOOLS or exe == NO_CC or exe.endswith(("-gcc", "-g++", "-clang")) or exe.startswith(("gcc-", "clang-"))


@pytest.fixture(autouse=True)
def _tools_of_the_tier(request, monkeypatch):
    """tests/unit runs where no C compiler is installed: a unit test that starts one fails here,
    with the command, instead of passing on a developer's machine and failing on a bare one. And a
    test that starts QEMU outside tests/board fails too: the default tier runs no firmware."""
    tier = tier_of(request.node.path)
    if tier == "board" or tier is None:
        yield
        return
    import subprocess
    real_init = subprocess.Popen.__init__

    def guarded(self, args, *a, **k):
        argv = [args] if isinstance(args, (str, bytes)) else list(args)
        first = argv[0].split()[0] if isinstance(argv[0], str) and k.get("shell") else argv[0]
        if tier == "unit" and _is_c_tool(first):
            raise AssertionError(f"a unit test started {first!r} ({' '.join(map(str, argv))[:200]}): "
                                 "tests that build C belong in tests/host (docs/testing.md)")
        if os.path.basename(str(first)).startswith("qemu-"):
            raise AssertionError(f"a test in tests/{tier} started {first!r}: tests that run firmware belong "
                                 "in tests/board (docs/testing.md)")
        return real_init(self, args, *a, **k)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
    if tier == "unit":
        # a child process (`python -m aot.cli run ...`) finds no compiler either
        monkeypatch.setenv("CC", os.path.join(os.sep, "nonexistent", NO_CC))
    yield


@pytest.fixture(scope="session", autouse=True)
def _cache_dir(tmp_path_factory):
    # a fresh build cache per test session: no stale binaries from earlier code
    os.environ["AOT_CACHE_DIR"] = str(tmp_path_factory.mktemp("aot-cache"))


def make_model(nodes, inputs, outputs, initializers=(), opset=13):
    """A ModelProto onnxruntime can load (IR version pinned to one it supports)."""
    from onnx import helper
    g = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset >= 15 else 7
    if opset >= 19:
        m.ir_version = 9
    return m


def vi(name, shape, dtype=None):
    from onnx import TensorProto, helper
    return helper.make_tensor_value_info(name, dtype or TensorProto.FLOAT, shape)


def init(name, arr):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray(arr), name)


def ort_run(model, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def check_model(model, feeds, rtol=1e-4, atol=1e-5, sanitize=True):
    """Compile with aot, run on the host (ASan+UBSan by default), compare with onnxruntime."""
    import aot
    ref = ort_run(model, feeds)
    res = aot.compile(model.SerializeToString())
    out = aot.run(res, feeds, sanitize=sanitize)
    for k, r in ref.items():
        assert out[k].shape == r.shape, (k, out[k].shape, r.shape)
        assert out[k].dtype == r.dtype, (k, out[k].dtype, r.dtype)
        np.testing.assert_allclose(out[k], r, rtol=rtol, atol=atol, err_msg=k)
    return res, out


def is_staged(call):
    """The step was staged to write its output over an input (aot/executor/inplace/staged.py)."""
    from aot.executor.kernels import STAGED
    return getattr(call, "in_place", None) is not None and call.in_place.kind == STAGED


def is_shrunk(call):
    """The step writes its smaller output over the start of an input (aot/executor/inplace/shrunk.py)."""
    from aot.executor.kernels import SHRUNK
    return getattr(call, "in_place", None) is not None and call.in_place.kind == SHRUNK
