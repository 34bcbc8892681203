"""Float schedules for Cortex-M (aot/schedules/arm_float.py): register tiles unrolled into
scalars on cores without float SIMD, fused multiply-adds where the FPU has them.

The shapes reach every tail: channel counts that are odd or not a multiple of the tile (the
tile is then a divisor: 7, 9, 13), padding (clamped windows), stride 2, a depthwise conv, dense
layers with odd K. Each compile for a Cortex-M target runs on its emulated board and on the
host (under ASan/UBSan, where fmaf may not be the FPU's), and is compared with onnxruntime.
"""
import io
import os
import re
import shutil
import subprocess
import tarfile

import numpy as np
import pytest
from onnx import helper

from conftest import init, is_staged, make_model, ort_run, vi

BOARD_TOOLS = [t for t in ("arm-none-eabi-gcc", "qemu-system-arm") if shutil.which(t) is None]
needs_boards = pytest.mark.skipif(bool(BOARD_TOOLS) and os.environ.get("AOT_REQUIRE_BOARDS") != "1",
                                  reason=f"{', '.join(BOARD_TOOLS)} not installed (CI installs them)")
LANE_INDEXED = re.compile(r"_acc0\[[a-z]")    # an accumulator array indexed by a loop variable
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def _w(rng, *shape):
    return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def conv_model(C, O, H, W, k, stride, pad, group=1, seed=0):
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[pad] * 4, group=group),
             helper.make_node("Relu", ["c"], ["y"])]
    Ho, Wo = (H + 2 * pad - k) // stride + 1, (W + 2 * pad - k) // stride + 1
    inits = [init("w", _w(rng, O, C // group, k, k)), init("b", rng.standard_normal(O).astype(np.float32))]
    return make_model(nodes, [vi("x", [1, C, H, W])], [vi("y", [1, O, Ho, Wo])], inits), (1, C, H, W)


def dense_model(N, K, O, seed=0):
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)]
    inits = [init("w", _w(rng, O, K)), init("b", rng.standard_normal(O).astype(np.float32))]
    return make_model(nodes, [vi("x", [N, K])], [vi("y", [N, O])], inits), (N, K)


CASES = {
    "conv3x3_c5_o7_pad1_s2": lambda: conv_model(5, 7, 9, 11, 3, 2, 1),
    "conv3x3_c3_o18_pad1_s1": lambda: conv_model(3, 18, 7, 6, 3, 1, 1),
    "conv5x3_c4_o32_pad2_s2": lambda: conv_model(4, 32, 10, 9, 5, 2, 2),
    "conv1x1_c9_o13": lambda: conv_model(9, 13, 5, 3, 1, 1, 0),
    "depthwise3x3_c13_pad1_s2": lambda: conv_model(13, 13, 9, 8, 3, 2, 1, group=13),
    "depthwise3x3_c16_pad1_s1": lambda: conv_model(16, 16, 6, 7, 3, 1, 1, group=16),
    "dense_k37_o21": lambda: dense_model(1, 37, 21),
    "dense_k33_o48_n3": lambda: dense_model(3, 33, 48),
}


def _feeds(shape):
    return {"x": np.random.default_rng(3).standard_normal(shape).astype(np.float32)}


def _compare(model, feeds, outs):
    for k, r in ort_run(model, feeds).items():
        np.testing.assert_allclose(outs[k], r, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(r).max())), err_msg=k)


def _schedules(res):
    return {c.func.attrs.get("schedule") for c in res.plan.calls if c.func is not None}


def _lib1(res):
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        return t.extractfile(next(m for m in t.getmembers() if m.name.endswith("lib1.c"))).read().decode()


@pytest.mark.parametrize("mcpu,how", [("cortex-m4", "float tiles (scalar lanes), fma"),
                                      ("cortex-m7", "float tiles (scalar lanes), fma"),
                                      ("cortex-m33", "float tiles (scalar lanes), fma"),
                                      ("cortex-m55", "float tiles (scalar lanes), fma"),   # a 3x3 window
                                      ("cortex-m3", "float tiles (scalar lanes)"),
                                      (None, None)])
def test_each_core_gets_its_float_schedule(mcpu, how):
    import aot
    model, _ = CASES["conv3x3_c5_o7_pad1_s2"]()
    res = aot.compile(model.SerializeToString(), target=f"c -mcpu={mcpu}" if mcpu else "c")
    assert _schedules(res) == {how}
    src = _lib1(res)
    assert ("aot_fma_f32(" in src) == ("fma" in (how or ""))
    # scalar lanes: the accumulator array's elements are only ever named by constants, so the C
    # compiler keeps them in registers
    if how is not None:
        assert not LANE_INDEXED.search(src)
    # one reduce loop over consecutive weights: Helium's lanes, left as a * b + c for gcc to vectorize
    dense, _ = CASES["dense_k33_o48_n3"]()
    res = aot.compile(dense.SerializeToString(), target=f"c -mcpu={mcpu}" if mcpu else "c")
    if how is not None:
        assert _schedules(res) == {"float tiles (vector lanes)" if mcpu == "cortex-m55" else how}
        assert bool(LANE_INDEXED.search(_lib1(res))) == (mcpu == "cortex-m55")


@pytest.mark.parametrize("name", sorted(CASES))
def test_cortex_m4_float_code_on_the_host_matches_onnxruntime(name):
    """The code compiled for cortex-m4, built by the host's gcc (fmaf, or a * b + c where the
    host's FPU has no fused multiply-add) under ASan/UBSan."""
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model.SerializeToString(), target="c -mcpu=cortex-m4")
    feeds = _feeds(shape)
    _compare(model, feeds, aot.run(res, feeds, sanitize=True))


@pytest.mark.parametrize("cc,flags", [("gcc", []), ("clang", []),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                                                             "-mfpu=fpv4-sp-d16"]),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft"]),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"])])
def test_float_kernels_compile_warning_free_with_no_fmaf_call(cc, flags, tmp_path):
    """-Werror clean; on Cortex-M every multiply-add is inline (vfma.f32 with the FPU, the
    soft-float a * b + c without it): never a call to the C library's fmaf."""
    import aot
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    mcpu = next((f.split("=")[1] for f in flags if f.startswith("-mcpu=")), "cortex-m4")
    for name in ("conv3x3_c5_o7_pad1_s2", "depthwise3x3_c13_pad1_s2", "dense_k37_o21", "ds_block"):
        model, _ = CASES[name]() if name in CASES else ds_block_model()      # ds_block: staged convs
        res = aot.compile(model.SerializeToString(), target=f"c -mcpu={mcpu}")
        with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
            t.extractall(tmp_path / name)
        src = tmp_path / name / "codegen/host/src/default_lib1.c"
        fused = "aot_fma_f32(" in src.read_text()
        assert fused or (mcpu == "cortex-m55" and name.startswith("dense"))    # Helium's a * b + c
        asm = tmp_path / f"{name}.s"
        r = subprocess.run([cc, *STRICT, "-O2", *flags, "-I", str(tmp_path / name / "codegen/host/include"),
                            "-I", str(tmp_path / name / "runtime/include"), "-S", str(src), "-o", str(asm)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        if cc == "arm-none-eabi-gcc":
            text = asm.read_text()
            assert "fmaf" not in text
            assert ("vfma.f32" in text) == (fused and "-mfloat-abi=hard" in flags)


def ds_block_model(C=32, H=10, W=6, seed=5):
    """conv -> a DS-CNN block (depthwise 3x3, pointwise C->C, both with relu) -> mean, as KWS:
    the block's convs are staged to write over their input (aot/schedules/inplace_conv.py)."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["t0"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["t0"], ["a"]),
             helper.make_node("Conv", ["a", "wd", "bd"], ["t1"], pads=[1, 1, 1, 1], group=C),
             helper.make_node("Relu", ["t1"], ["b"]),
             helper.make_node("Conv", ["b", "wp", "bp"], ["t2"]),
             helper.make_node("Relu", ["t2"], ["c"]),
             helper.make_node("ReduceMean", ["c"], ["y"], axes=[2, 3], keepdims=0)]
    inits = [init("w0", _w(rng, C, 3, 3, 3)), init("wd", _w(rng, C, 1, 3, 3)), init("wp", _w(rng, C, C, 1, 1))] + \
        [init(b, rng.standard_normal(C).astype(np.float32)) for b in ("b0", "bd", "bp")]
    return make_model(nodes, [vi("x", [1, 3, H, W])], [vi("y", [1, C])], inits), (1, 3, H, W)


@pytest.mark.parametrize("mcpu", ["cortex-m4", "cortex-m55"])
def test_staged_pointwise_conv_keeps_register_tiles(mcpu):
    """The staged pointwise conv computes a pixel's output channels in tiles of accumulators
    (scalars on the M4, Helium lanes on the M55); the code matches onnxruntime on the host."""
    import aot
    model, shape = ds_block_model()
    res = aot.compile(model.SerializeToString(), target=f"c -mcpu={mcpu}")
    staged = [c for c in res.plan.calls if is_staged(c)]
    assert staged and all(c.func.attrs.get("schedule", "").startswith("float tiles") for c in staged)
    pointwise = [c for c in staged if c.scratch_bytes == 32 * 4]
    assert len(pointwise) == 1 and 1 in pointwise[0].func.attrs.get("layouts", {})    # weights packed
    if mcpu == "cortex-m4":
        assert not LANE_INDEXED.search(_lib1(res))
    # the staged depthwise conv's plane is partitioned at the padding: no clamped window left
    depthwise = [c for c in staged if c.scratch_bytes == 10 * 6 * 4]
    src = _lib1(res)
    body = src[src.index(f"{depthwise[0].symbol}("):]
    body = body[:body.index("\n}\n")]
    assert "aot_max_i32" not in body and "aot_min_i32" not in body
    feeds = _feeds(shape)
    _compare(model, feeds, aot.run(res, feeds, sanitize=True))
