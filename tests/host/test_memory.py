"""Memory planning: the workspace size is exact (every byte inside is touched by some kernel
run, no byte outside ever is), the planner's invariants hold, and its report is consistent."""
import os
import subprocess
import tempfile

import numpy as np
import onnx
import pytest

from conftest import SHARED

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def _run_with_workspace_bytes(tar, feeds, nbytes):
    """Build with ASan and a workspace array of `nbytes`; returns (exit code, stderr)."""
    from aot.host import build_host
    from mlf import read_mlf
    info = read_mlf(tar).aot
    exe = build_host(tar, sanitize=True, extra_cflags=[f"-DTVMGEN_DEFAULT_WORKSPACE_BYTES={nbytes}"])
    with tempfile.TemporaryDirectory() as d:
        args = []
        for k, t in enumerate(info["inputs"]):
            p = os.path.join(d, f"in{k}.bin")
            np.ascontiguousarray(feeds[t["name"]]).tofile(p)
            args.append(p)
        args += [os.path.join(d, f"out{k}.bin") for k in range(len(info["outputs"]))]
        r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=1200)
    return r.returncode, r.stderr


def _check_exact(model_bytes, feeds):
    import aot
    res = aot.compile(model_bytes)
    size = res.plan.workspace_size
    assert size > 0
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size - 1)
    assert rc != 0 and "global-buffer-overflow" in err, "a workspace one byte smaller went unnoticed"
    return res


def _small_models():
    from test_c_client import small_cnn
    yield "small_cnn", small_cnn(), {"x": np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)}


@pytest.mark.parametrize("name,model,feeds", list(_small_models()))
def test_workspace_is_exact_small(name, model, feeds):
    _check_exact(model.SerializeToString(), feeds)


def _light(name):
    m = onnx.load(os.path.join(LIGHT_DIR, f"light_{name}.onnx"))
    inits = {i.name for i in m.graph.initializer}
    x = [i for i in m.graph.input if i.name not in inits][0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    return m, {x.name: np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)}


def _mlperf(rel, draw):
    """An MLPerf Tiny model (read in place) and random feeds for its input."""
    path = os.path.join(SHARED, "models", "mlperf_tiny", rel)
    if not os.path.exists(path):
        pytest.skip("MLPerf Tiny models not present")
    m = onnx.load(path)
    x = m.graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    return m, {x.name: draw(np.random.default_rng(0), shape).astype(np.float32)}


def test_planner_invariants_and_bound():
    from aot.memory_plan import Buf, lower_bound, plan, verify
    rng = np.random.default_rng(5)
    for trial in range(30):
        bufs = []
        for k in range(int(rng.integers(2, 25))):
            s = int(rng.integers(0, 20))
            bufs.append(Buf(k, int(rng.integers(1, 5000)), s, s + int(rng.integers(0, 6))))
        total = plan(bufs, align=16)
        verify(bufs, total, 16)
        lb = lower_bound(bufs)
        assert total >= lb
        assert plan(list(bufs), align=16) == total          # deterministic
    # buffers with disjoint lifetimes share memory; overlapping ones cannot
    a, b, c = Buf("a", 100, 0, 1), Buf("b", 100, 2, 3), Buf("c", 50, 1, 2)
    assert plan([a, b, c]) == 100 + 50 + 12   # c sits between a/b's reuse, after 16-byte alignment


def test_verifier_rejects_out_of_bounds():
    from aot.tir.expr import Var
    from aot.tir.stmt import Buffer, For, PrimFunc, Store
    from aot.tir.verify import AccessError, verify_accesses
    from aot.tir.expr import Load
    i = Var("i")
    src, dst = Buffer("src", "float32", (8,)), Buffer("dst", "float32", (8,))
    ok = PrimFunc("ok", [src, dst], For(i, 0, 8, Store(dst, i, Load(src, i))), 1)
    assert verify_accesses(ok).checked == 2
    bad = PrimFunc("bad", [src, dst], For(i, 0, 8, Store(dst, i, Load(src, i + 1))), 1)
    with pytest.raises(AccessError, match="src"):
        verify_accesses(bad)


WS_IO_CLIENT = r"""
#include <stdio.h>
#include <string.h>
#include "tvmgen_default.h"
#include "input_data.h"
int main(void) {
  struct tvmgen_default_inputs in = tvmgen_default_map_inputs();
  struct tvmgen_default_outputs out = tvmgen_default_map_outputs();
  struct tvmgen_default_outputs wrong;
  float elsewhere[10];
  size_t i;
  memcpy(in.x, input_data, sizeof input_data);
  wrong.y = elsewhere;
  if (tvmgen_default_run(&in, &wrong) != -1) return 3;      /* foreign pointers are refused */
  if (tvmgen_default_run(&in, &out) != 0) return 1;
  for (i = 0; i < 10; ++i) printf("%.9g\n", (double)((const float*)out.y)[i]);
  return 0;
}
"""


@pytest.mark.parametrize("extra", [["-O2"], ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                                              "-DTVMGEN_DEFAULT_WORKSPACE_ATTRIBUTE=__attribute__((aligned(16)))"]])
def test_workspace_io_client(tmp_path, extra):
    import aot
    from conftest import ort_run
    from test_c_client import build, extract, small_cnn
    m = small_cnn()
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    res = aot.compile(m.SerializeToString(), use_workspace_io=True)
    plain = aot.compile(m.SerializeToString())
    assert res.plan.workspace_size < plain.plan.workspace_size + 3 * 16 * 16 * 4 + 40   # the input's bytes are reused
    extract(res.tar, tmp_path / "mlf")
    (tmp_path / "input_data.h").write_text("static const float input_data[] = {" + ", ".join(f"{v:.9g}" for v in x.ravel()) + "};\n")
    (tmp_path / "client.c").write_text(WS_IO_CLIENT)
    got = build("gcc", str(tmp_path), [str(tmp_path / "mlf")], extra)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})["y"].ravel(), rtol=1e-5, atol=1e-6)


def _check_exact_io(model_bytes, feeds):
    import aot
    res = aot.compile(model_bytes, use_workspace_io=True)
    size = res.plan.workspace_size
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size - 1)
    assert rc != 0 and "global-buffer-overflow" in err
    return res


def _two_branch_model():
    """x -> (big a1 -> small a2) and (big b1 -> small b2) -> concat, listed in the worst order:
    both big intermediates are produced before either is consumed."""
    from onnx import helper
    from conftest import init, make_model, vi
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "wa"], ["a1"], name="a1"),
             helper.make_node("Conv", ["x", "wb"], ["b1"], name="b1"),
             helper.make_node("MaxPool", ["a1"], ["a2"], kernel_shape=[4, 4], strides=[4, 4], name="a2"),
             helper.make_node("MaxPool", ["b1"], ["b2"], kernel_shape=[4, 4], strides=[4, 4], name="b2"),
             helper.make_node("Concat", ["a2", "b2"], ["y"], axis=1, name="cat")]
    inits = [init("wa", rng.standard_normal((16, 3, 1, 1)).astype(np.float32)),
             init("wb", rng.standard_normal((16, 3, 1, 1)).astype(np.float32))]
    m = make_model(nodes, [vi("x", [1, 3, 16, 16])], [vi("y", [1, 32, 4, 4])], inits)
    return m, {"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}


def test_order_minimises_peak():
    import aot
    from conftest import check_model
    m, feeds = _two_branch_model()
    res, _ = check_model(m, feeds)
    big, small = 16 * 16 * 16 * 4, 16 * 4 * 4 * 4
    # importer order: a1 and b1 both live while a2 runs; best order: a1, a2, b1, b2, cat
    # where b1 and a2 (kept for the concat) are live while b2 runs; each max pool writes its
    # smaller output over the start of its input (aot/tir/inplace.py writes_over_in_order), so b2
    # adds nothing to b1's bytes
    assert res.plan.workspace_lower_bound == big + small
    assert res.plan.workspace_size == big + small
    plain = aot.compile(m.SerializeToString(), in_place=False).plan
    assert plain.workspace_lower_bound == plain.workspace_size == big + 2 * small
    kernels = [c.func.name for c in res.plan.calls]
    assert kernels.index(min(k for k in kernels if "conv" in k)) < kernels.index(next(k for k in kernels if "max_pool" in k))


def test_order_search_exact_matches_brute_force():
    """On random small DAGs the exact search's peak equals the best over all topological orders."""
    import itertools
    from types import SimpleNamespace
    from aot.passes.order import _Problem

    def T(n):
        return SimpleNamespace(nbytes=n)

    rng = np.random.default_rng(3)
    for trial in range(30):
        n = int(rng.integers(3, 7))
        vals = [SimpleNamespace(type=T(int(rng.integers(1, 50)) * 16), const=None, producer=None,
                                is_const=False, name=f"v{k}") for k in range(n)]
        x = SimpleNamespace(type=T(16), const=None, producer=None, is_const=False, name="x")
        groups = []
        for k in range(n):
            srcs = [x] + [vals[j] for j in range(k) if rng.random() < 0.4]
            groups.append(SimpleNamespace(alias=False, inputs=srcs, outputs=[vals[k]], nodes=[]))
        graph = SimpleNamespace(inputs=[x], outputs=[vals[-1]])
        p = _Problem(graph, groups, False)
        best = min(p.peak_of(list(o), 0) for o in itertools.permutations(range(n))
                   if all(p.preds[k] & ~sum(1 << j for j in o[:i]) == 0 for i, k in enumerate(o)))
        assert p.peak_of(p.exact(list(range(n)), 0), 0) == best, trial


def _residual_model():
    """conv -> relu -> conv (+ the block input) -> relu, then an elementwise tail: the second
    conv's residual add and the tail can write over tensors that die there."""
    from onnx import helper
    from conftest import init, make_model, vi
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["t0"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("Relu", ["t0"], ["a"], name="stem_relu"),
             helper.make_node("Conv", ["a", "w1"], ["t1"], pads=[1, 1, 1, 1], name="c1"),
             helper.make_node("Relu", ["t1"], ["b"], name="r1"),
             helper.make_node("Conv", ["b", "w2"], ["t2"], pads=[1, 1, 1, 1], name="c2"),
             helper.make_node("Add", ["t2", "a"], ["s"], name="residual"),
             helper.make_node("Relu", ["s"], ["r"], name="r2"),
             helper.make_node("Sigmoid", ["r"], ["g"], name="gate"),
             helper.make_node("Mul", ["g", "r"], ["m"], name="swish"),
             helper.make_node("Exp", ["m"], ["e"], name="exp"),
             helper.make_node("ReduceMean", ["e"], ["y"], axes=[2, 3], keepdims=0, name="pool")]
    inits = [init(f"w{k}", (rng.standard_normal((8, 8 if k else 3, 3, 3)) * 0.3).astype(np.float32)) for k in range(3)]
    m = make_model(nodes, [vi("x", [1, 3, 12, 12])], [vi("y", [1, 8])], inits)
    return m, {"x": rng.standard_normal((1, 3, 12, 12)).astype(np.float32)}


def test_in_place_residual_and_elementwise():
    from conftest import check_model
    from aot.compiler import Options, compile_model
    m, feeds = _residual_model()
    res, _ = check_model(m, feeds)
    tensor = 8 * 12 * 12 * 4
    rows = res.plan.tensors
    assert any(r.get("in_place_of") for r in rows), rows
    # without in-place writes the residual block holds three tensors (a, b and the sum)
    ref = compile_model(m.SerializeToString(), Options(in_place=False))
    assert ref.plan.workspace_lower_bound == 3 * tensor
    assert res.plan.workspace_size == res.plan.workspace_lower_bound == 2 * tensor
    # the exact size still holds with aliased storage, under ASan
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size - 1)
    assert rc != 0 and "global-buffer-overflow" in err


POOLS_CLIENT = r"""
#include <stdio.h>
#include <stdint.h>
#include "tvmgen_default.h"
#include "input_data.h"
/* the firmware owns the pools: e.g. one in fast SRAM, one in slower external RAM */
static uint8_t sram[TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE + 1] __attribute__((aligned(16)));
static uint8_t ext[TVMGEN_DEFAULT_EXT_WORKSPACE_POOL_SIZE + 1] __attribute__((aligned(16)));
int main(void) {
  static float y[TVMGEN_DEFAULT_Y_SIZE / sizeof(float)];
  struct tvmgen_default_inputs in = { (void*)input_data };
  struct tvmgen_default_outputs out = { y };
  struct tvmgen_default_workspace_pools pools = { sram, ext };
  int i;
  if (tvmgen_default_run(&in, &out, 0) != -1) return 2;
  if (tvmgen_default_run(&in, &out, &pools) != 0) return 1;
  for (i = 0; i < 10; ++i) printf("%.9g\n", (double)y[i]);
  return 0;
}
"""


def test_workspace_pools_client(tmp_path):
    """Two user pools, the first with a size hint below the plan: the rest spills to the second;
    the header carries the struct, the size macros, and run's third parameter."""
    import aot
    from conftest import ort_run
    from test_c_client import build, extract, small_cnn
    m = small_cnn()
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    whole = aot.compile(m.SerializeToString()).plan.workspace_size
    hint = whole // 2
    res = aot.compile(m.SerializeToString(), workspace_pools=[("sram", hint), ("ext", None)])
    sizes = {p["name"]: p["size"] for p in res.plan.pools}
    assert 0 < sizes["sram"] <= hint and sizes["ext"] > 0
    assert sizes["sram"] + sizes["ext"] == res.plan.workspace_size
    extract(res.tar, tmp_path / "mlf")
    header = (tmp_path / "mlf/codegen/host/include/tvmgen_default.h").read_text()
    assert f"#define TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE {sizes['sram']}" in header
    assert "struct tvmgen_default_workspace_pools {" in header
    (tmp_path / "input_data.h").write_text("static const float input_data[] = {" + ", ".join(f"{v:.9g}" for v in x.ravel()) + "};\n")
    (tmp_path / "client.c").write_text(POOLS_CLIENT)
    got = build("gcc", str(tmp_path), [str(tmp_path / "mlf")], ["-O1", "-g", "-fsanitize=address,undefined",
                                                                     "-fno-sanitize-recover=all"])
    np.testing.assert_allclose(got, ort_run(m, {"x": x})["y"].ravel(), rtol=1e-5, atol=1e-6)
    # the host harness allocates the pools from the macros (ASan-guarded globals)
    out = aot.run(res, {"x": x}, sanitize=True)
    np.testing.assert_allclose(out["y"], ort_run(m, {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_workspace_pool_hint_too_small(tmp_path):
    from test_c_client import small_cnn
    from test_cli_errors import assert_user_error, run_cli
    p = tmp_path / "m.onnx"
    p.write_bytes(small_cnn().SerializeToString())
    out = str(tmp_path / "m.tar")
    r = run_cli("compile", str(p), "-o", out, "--workspace-pools", "sram",
                "--workspace-pools-size-hint-bytes", "sram:100")
    assert_user_error(r, out, "workspace pool 'sram' is too small", "size hint is 100 bytes", "lower bound")
    r = run_cli("compile", str(p), "-o", out, "--workspace-pools", "sram", "--workspace-pools-size-hint-bytes", "dram:1")
    assert_user_error(r, out, "names pool 'dram'")
    r = run_cli("compile", str(p), "-o", out, "--workspace-pools", "9lives")
    assert_user_error(r, out, "'9lives' must be a C identifier")
    r = run_cli("compile", str(p), "-o", out, "--workspace-pools", "sram", "--workspace-pools-size-hint-bytes",
                "sram:100000", "-v")
    assert r.returncode == 0, r.stderr
    assert "workspace pools: sram" in r.stderr


def test_input_transpose_folds_into_the_first_conv():
    """An NHWC input transposed to NCHW for a conv (VWW's float ONNX model): the conv reads the
    caller's input through the permuted index, so no transposed copy takes workspace."""
    from onnx import helper
    from conftest import check_model, init, make_model, vi
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2], name="to_nchw"),
             helper.make_node("Conv", ["xt", "w"], ["t"], pads=[1, 1, 1, 1], strides=[2, 2], name="stem"),
             helper.make_node("Relu", ["t"], ["a"], name="relu"),
             helper.make_node("ReduceMean", ["a"], ["y"], axes=[2, 3], keepdims=0, name="pool")]
    m = make_model(nodes, [vi("x", [1, 12, 10, 3])], [vi("y", [1, 8])],
                   [init("w", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32))])
    feeds = {"x": rng.standard_normal((1, 12, 10, 3)).astype(np.float32)}
    res, _ = check_model(m, feeds)
    assert len(res.plan.calls) == 2          # transpose + conv + relu, then the mean
    # on the host the channels_last pass (aot/passes/layout.py) drops the Transpose (an NHWC conv);
    # elsewhere the fusion folds it: either way one tensor, the conv's output, takes workspace
    assert [r["name"] for r in res.plan.tensors] in (["a"], ["a_nhwc"])
    assert res.plan.workspace_size == 8 * 6 * 5 * 4


def test_input_box_slice_folds_into_the_conv_reading_it():
    """A box of rows and columns of the input (a patched tile's, aot/passes/patch.py) read by a
    conv: the conv indexes the input where the box lies, so no copy of the box takes workspace,
    on the host under ASan/UBSan and with the input planned into the workspace."""
    from onnx import helper
    import aot
    from conftest import check_model, init, make_model, ort_run, vi
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["box"], name="box"),
             helper.make_node("Conv", ["box", "w"], ["t"], pads=[0, 1, 1, 0], strides=[2, 2], name="stem"),
             helper.make_node("Relu", ["t"], ["y"], name="relu")]
    m = make_model(nodes, [vi("x", [1, 3, 14, 12])], [vi("y", [1, 8, 4, 3])],
                   [init("w", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)),
                    init("st", np.array([2, 3], np.int64)), init("en", np.array([11, 10], np.int64)),
                    init("ax", np.array([2, 3], np.int64))])
    feeds = {"x": rng.standard_normal((1, 3, 14, 12)).astype(np.float32)}
    res, _ = check_model(m, feeds)
    assert len(res.plan.calls) == 1
    assert res.plan.workspace_size == 0     # the conv writes the caller's output; no box copy
    res = aot.compile(m.SerializeToString(), use_workspace_io=True)
    np.testing.assert_allclose(aot.run(res, feeds, sanitize=True)["y"], ort_run(m, feeds)["y"], rtol=1e-5, atol=1e-6)
    assert res.plan.workspace_size == (3 * 14 * 12 + 8 * 4 * 3) * 4


def test_planner_pins():
    """Buffers pinned into one another (Buf.pin) are placed at their pinned offsets, may overlap
    their host only at the one step they share, and verify() catches a broken pin or overlap."""
    from aot.errors import InternalError
    from aot.memory_plan import Buf, lower_bound, plan, verify
    rng = np.random.default_rng(8)
    for trial in range(30):
        bufs = []
        for k in range(int(rng.integers(2, 15))):
            s = int(rng.integers(0, 20))
            bufs.append(Buf(k, int(rng.integers(1, 3000)), s, s + int(rng.integers(0, 6))))
        big = Buf("in", 4000, 3, 7)
        small = Buf("out", 1000, 7, 9, pin=("in", 0))        # written over the start of its input
        bufs += [big, small]
        total = plan(bufs, align=16)
        verify(bufs, total, 16)
        assert small.offset == big.offset and total >= lower_bound(bufs)
    with pytest.raises(InternalError):
        small.offset += 16
        verify(bufs, total + 16, 16)
    a, b = Buf("a", 100, 0, 2, offset=0), Buf("b", 50, 2, 3, offset=0, pin=("a", 0))
    verify([a, b], 100, 16)
    with pytest.raises(InternalError):       # pinned, but sharing two steps
        verify([Buf("a", 100, 0, 2, offset=0), Buf("b", 50, 1, 3, offset=0, pin=("a", 0))], 100, 16)
    assert lower_bound([a, b]) == 100
