"""Helium runs (cortex-m55): dot_s8xq(t) (aot/tir/intrin/arm_quads.py), a one-row window's output
channels requantised four at a time and stored through the output pointer, one call a pixel;
and copy_s8 (aot/tir/intrin/arm_copy.py), a staged in-place kernel's copy back from its scratch
(aot/schedules/arm_copy.py), 16 bytes a vector step.

Chains of depthwise and pointwise convs (each inner one staged to write over its dying input)
and pointwise convs of their own, per-channel and per-tensor, with channel counts that are odd
or not multiples of 16 (the quads' leftover pair and single channel, the copy's predicated
tail) and widths of 5 and 17 pixels, compared bit for bit with the tflite-micro wheel on
qemu-cortex-m55 (the Helium bodies), on the host (the plain bodies, under ASan/UBSan), on
qemu-cortex-m4 (neither call) and as the plain loop nest of target "c".
"""
import contextlib
import io
import shutil
import subprocess
import tarfile

import numpy as np
import pytest

from test_arm_dw_microkernel import dw_chain
from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available
from conftest import is_staged

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def pointwise_model(H, W, C, O, per_channel=True, x_zp=-5, seed=1):
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=x_zp)
    ws = (rng.random(O) * 0.02 + 0.005).astype(np.float32) if per_channel else np.float32(0.013)
    qd = {"quantized_dimension": 0} if per_channel else {}
    w = mb.tensor("w", [O, 1, 1, C], "int8", data=rng.integers(-127, 128, (O, 1, 1, C)).astype(np.int8),
                  scale=ws, zero_point=[0] * O if per_channel else 0, **qd)
    b = mb.tensor("b", [O], "int32", data=rng.integers(-900, 900, O).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * O if per_channel else 0, **qd)
    y = mb.tensor("y", [1, H, W, O], "int8", scale=0.02 * np.sqrt(C), zero_point=3)
    mb.op("CONV_2D", [x, w, b], [y], padding="VALID", stride_h=1, stride_w=1, fused_activation_function="RELU6")
    return mb.finish(inputs=[x], outputs=[y]), (1, H, W, C)


# name -> (model, the Helium calls its M55 compile makes)
CASES = {
    "pw_c17_o11_w5": (lambda: pointwise_model(3, 5, 17, 11), ("aot_dot_s8xq(&",)),
    "pw_c33_o8_w17_per_tensor": (lambda: pointwise_model(2, 17, 33, 8, per_channel=False), ("aot_dot_s8xqt(&",)),
    "pw_c16_o4_w17_zp_128": (lambda: pointwise_model(1, 17, 16, 4, x_zp=-128), ("aot_dot_s8xq(&",)),
    "chain_pdp_c20_w5": (lambda: dw_chain(3, 5, 20, "pdpp"), ("aot_dot_s8xq(&", "aot_copy_s8(&")),
    "chain_dpd_c64_w17": (lambda: dw_chain(2, 17, 64, "dpdd"), ("aot_dot_s8xq(&", "aot_copy_s8(&")),
}


def _feeds(shape, n=2):
    rng = np.random.default_rng(11)
    return [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(n)] + \
        [np.full(shape, v, np.int8) for v in (-128, 127)]


def _check(res, feeds, model, **run):
    import aot
    x, out = res.graph.inputs[0].name, res.graph.output_names[0]
    for k, feed in enumerate(feeds):
        np.testing.assert_array_equal(aot.run(res, {x: feed}, **run)[out], run_tflm(model, [feed])[0],
                                      err_msg=f"input {k}")


def _compile(model, target):
    import aot
    with contextlib.redirect_stderr(io.StringIO()):
        return aot.compile(model, target=target)


def _source(res):
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        return next(t.extractfile(m).read().decode() for m in t.getmembers() if m.name.endswith("lib1.c"))


@tflm
@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_on_the_host_are_bit_exact(name):
    build, calls = CASES[name]
    model, shape = build()
    res = _compile(model, "c -mcpu=cortex-m55")
    src = _source(res)
    assert all(c in src for c in calls), name
    if "copy_s8" in "".join(calls):
        assert any(is_staged(c) for c in res.plan.calls)
    _check(res, _feeds(shape), model, sanitize=True)
    _check(_compile(model, "c"), _feeds(shape, 1), model)


def test_the_workspace_does_not_grow(monkeypatch):
    """The calls add no buffer: the M55 plan is no larger than the M4's, which stages the same
    blocks without them (and adds pw_s8's int16 pixel scratch; its whole-row depthwise kernel,
    which writes over its input without staging, is kept out)."""
    from aot.schedules import arm_dw
    monkeypatch.setattr(arm_dw, "MIN_RING_ROW", 1 << 30)
    for name in ("chain_pdp_c20_w5", "chain_dpd_c64_w17"):
        model, _ = CASES[name][0]()
        assert _compile(model, "c -mcpu=cortex-m55").plan.workspace_size <= \
            _compile(model, "c -mcpu=cortex-m4").plan.workspace_size


def test_the_copy_is_refused_between_overlapping_or_strided_runs():
    """copy_s8 takes one run, or rows of one run; a copy within one buffer, a gather, a byte
    copied to every second slot are not it."""
    from aot.tir.expr import Const, Load, Var
    from aot.tir.intrin import get_intrin
    from aot.tir.stmt import Buffer, For, Store
    it = get_intrin("copy_s8")
    a, out = Buffer("a", "int8", (64,)), Buffer("out", "int8", (64,))
    i, r = Var("i"), Var("r")
    assert it.match(For(i, 0, 16, Store(out, i, Load(a, (i,)))))[0] is not None
    rows = it.match(For(r, 0, 3, For(i, 0, 5, Store(out, r * 16 + i, Load(a, (r * 5 + i,))))))[0]
    assert rows is not None and [int(x.value) for x in rows[2:]] == [3, 5, 16, 5]
    assert it.match(For(i, 0, 16, Store(a, i, Load(a, (i + Const(1, "int32"),)))))[0] is None
    assert it.match(For(i, 0, 16, Store(out, i * 2, Load(a, (i,)))))[0] is None
    assert it.match(For(i, 0, 16, Store(out, i, Load(a, (Const(15, "int32") - i,)))))[0] is None


@pytest.mark.parametrize("cc,flags", [("gcc", []), ("clang", []),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mfloat-abi=hard"]),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m55", "-mfloat-abi=hard"])])
def test_runs_compile_warning_free(cc, flags, tmp_path):
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    for name in ("chain_pdp_c20_w5", "pw_c33_o8_w17_per_tensor"):
        res = _compile(CASES[name][0]()[0], "c -mcpu=cortex-m55")
        with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
            t.extractall(tmp_path / name)
        src = tmp_path / name / "codegen/host/src/default_lib1.c"
        r = subprocess.run([cc, *STRICT, "-O2", *flags, "-I", str(tmp_path / name / "codegen/host/include"),
                            "-I", str(tmp_path / name / "runtime/include"), "-c", str(src), "-o",
                            str(tmp_path / f"{name}.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
