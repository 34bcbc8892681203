"""TFLite's int8 ADD as the Helium add_s8q micro-kernel (aot/tir/intrin/arm_add.py): an ADD kernel
of its own (aot/schedules/arm_add.py) and a residual add fused into a conv's epilogue, run on
the conv's requantised channels of one pixel (aot/schedules/arm_pairs.py).

Every case is compared bit for bit with the tflite-micro wheel on four paths: the Cortex-M55
compile on qemu-cortex-m55 (the Helium body), the same compile on the host (the plain body,
under ASan/UBSan), the Cortex-M4 compile on qemu-cortex-m4 (no add_s8q: the scalar epilogue) and
the plain loop nest of target "c". Shapes: channel counts that are odd and not multiples of 4
(the predicated last step), widths of 5 and 17 pixels, scales that saturate the output at both
ends of int8, per-channel and per-tensor conv quantisation, the conv's output as either
operand, RELU and no activation.
"""
import contextlib
import io
import re
import shutil
import subprocess
import tarfile

import numpy as np
import pytest

from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def add_model(H, W, C, sx=0.05, sy=0.11, sz=0.08, zps=(-3, 17, -128), act="NONE", broadcast=False):
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=sx, zero_point=zps[0])
    y = mb.tensor("y", [1, 1, 1, C] if broadcast else [1, H, W, C], "int8", scale=sy, zero_point=zps[1])
    z = mb.tensor("z", [1, H, W, C], "int8", scale=sz, zero_point=zps[2])
    mb.op("ADD", [x, y], [z], fused_activation_function=act)
    return mb.finish(inputs=[x, y], outputs=[z]), [(1, H, W, C), (1, 1, 1, C) if broadcast else (1, H, W, C)]


def conv_add_model(H, W, C, per_channel=True, conv_first=False, act="RELU", z_scale=0.2, seed=0, chain=False, k=3):
    """A 3x3 conv C -> C whose output feeds a residual ADD (ResNet's block end). chain: the add's
    other operand is an intermediate (a 1x1 conv's output) that dies at the add, so the fused
    kernel writes its output over it (a 1x1 conv between, another after: the add's output in the
    workspace too)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=-128)

    def conv(name, inp, k, out_scale, zp):
        ws = (rng.random(C) * 0.02 + 0.005).astype(np.float32) if per_channel else np.float32(0.011)
        qd = {"quantized_dimension": 0} if per_channel else {}
        w = mb.tensor(f"w{name}", [C, k, k, C], "int8", data=rng.integers(-127, 128, (C, k, k, C)).astype(np.int8),
                      scale=ws, zero_point=[0] * C if per_channel else 0, **qd)
        b = mb.tensor(f"b{name}", [C], "int32", data=rng.integers(-500, 500, C).astype(np.int32), scale=0.05 * ws,
                      zero_point=[0] * C if per_channel else 0, **qd)
        y = mb.tensor(f"y{name}", [1, H, W, C], "int8", scale=out_scale, zero_point=zp)
        mb.op("CONV_2D", [inp, w, b], [y], padding="SAME", stride_h=1, stride_w=1, fused_activation_function="NONE")
        return y
    res = conv("r", x, 1, 0.05, -3) if chain else x
    y = conv("c", conv("t", res, 1, 0.06, 2) if chain else res, k, 0.3, -4)
    z = mb.tensor("z", [1, H, W, C], "int8", scale=z_scale, zero_point=-128 if act == "RELU" else 5)
    mb.op("ADD", [y, res] if conv_first else [res, y], [z], fused_activation_function=act)
    out = conv("o", z, 1, 0.07, 1) if chain else z
    return mb.finish(inputs=[x], outputs=[out]), [(1, H, W, C)]


ADDS = {
    "add_c5_w17": lambda: add_model(2, 17, 5),
    "add_c17_w5_relu": lambda: add_model(3, 5, 17, act="RELU"),
    # an output scale far below the inputs': most sums saturate at -128 or 127
    "add_c3_w5_saturating": lambda: add_model(2, 5, 3, sx=0.5, sy=0.7, sz=0.01, zps=(0, -128, 0)),
    "add_c16_w1_relu6": lambda: add_model(1, 1, 16, act="RELU6"),
    "add_c7_broadcast": lambda: add_model(2, 5, 7, broadcast=True),     # a broadcast operand: per run
}
FUSED = {
    "conv_add_c7_w5": lambda: conv_add_model(3, 5, 7),      # 21-byte window rows: not a gathered first layer
    "conv_add_c17_w17_conv_first": lambda: conv_add_model(2, 17, 17, conv_first=True, act="NONE"),
    "conv_add_c8_w5_per_tensor": lambda: conv_add_model(3, 5, 8, per_channel=False),
    "conv_add_c12_w5_saturating": lambda: conv_add_model(3, 5, 12, z_scale=0.004, act="NONE"),
    "conv_add_c9_w5_in_place": lambda: conv_add_model(3, 5, 9, chain=True, conv_first=True),
    # a 1x1 conv: its quads' run stored by one dot_s8xq call into the run the add reads
    "conv1x1_add_c13_w17_per_tensor": lambda: conv_add_model(2, 17, 13, per_channel=False, k=1, z_scale=0.01),
}


def _feeds(shapes, n=2):
    rng = np.random.default_rng(3)
    feeds = [[rng.integers(-128, 128, s).astype(np.int8) for s in shapes] for _ in range(n)]
    return feeds + [[np.full(s, v, np.int8) for s in shapes] for v in (-128, 127)] + \
        [[np.full(shapes[0], -128, np.int8)] + [np.full(s, 127, np.int8) for s in shapes[1:]]]


def _check(res, feeds, model, **run):
    import aot
    names, out = [i.name for i in res.graph.inputs], res.graph.output_names[0]
    for k, feed in enumerate(feeds):
        ref = run_tflm(model, feed)[0]
        got = aot.run(res, dict(zip(names, feed)), **run)[out]
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")


def _compile(model, target):
    import aot
    with contextlib.redirect_stderr(io.StringIO()):
        return aot.compile(model, target=target)


def _source(res):
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        return next(t.extractfile(m).read().decode() for m in t.getmembers() if m.name.endswith("lib1.c"))


@tflm
@pytest.mark.parametrize("name", sorted(ADDS) + sorted(FUSED))
def test_add_on_the_host_is_bit_exact(name):
    """The Cortex-M55 compile on the host (the add_s8q plain body, ASan/UBSan) and the plain nest."""
    model, shapes = {**ADDS, **FUSED}[name]()
    res = _compile(model, "c -mcpu=cortex-m55")
    assert "aot_add_s8q(&" in _source(res)
    _check(res, _feeds(shapes), model, sanitize=True)
    _check(_compile(model, "c"), _feeds(shapes, 1), model)


def test_a_standalone_add_is_one_call_and_a_fused_one_keeps_its_quads():
    """Without a broadcast the whole tensor is one run; the fused add follows the quad calls."""
    model, _ = ADDS["add_c5_w17"]()
    res = _compile(model, "c -mcpu=cortex-m55")
    assert {c.func.attrs.get("schedule") for c in res.plan.calls} == {"add_s8q (mve)"}
    assert re.search(r"aot_add_s8q\(&\w+\[0\], &\w+\[0\], &\w+\[0\], 170,", _source(res))
    model, _ = FUSED["conv_add_c17_w17_conv_first"]()
    src = _source(_compile(model, "c -mcpu=cortex-m55"))
    assert "aot_dot_s8x4q(&" in src and re.search(r"aot_add_s8q\(&\w+\[[^\]]*\], &\w+_run\[0\], &", src)
    model, _ = FUSED["conv1x1_add_c13_w17_per_tensor"]()
    src = _source(_compile(model, "c -mcpu=cortex-m55"))
    assert re.search(r"aot_dot_s8xqt\(&\w+_run\[0\], ", src) and "aot_add_s8q(&" in src


def test_the_fused_add_still_writes_over_its_dying_input():
    """The residual operand dies at the add: the fused kernel's output takes its bytes, proven
    through the add_s8q call (aot/tir/inplace.py), as before the call."""
    model, _ = FUSED["conv_add_c9_w5_in_place"]()
    for target in ("c -mcpu=cortex-m55", "c"):
        main = _source(_compile(model, target)).split("___tvm_main__(", 1)[1]
        call = re.search(r"fused_qconv_qadd\((.*)\) != 0", main).group(1).split(", ")
        at = [re.search(r"workspace \+ (\d+)\)|(workspace)\)", a) for a in call[-2:]]
        assert all(at) and at[0].group(0) == at[1].group(0), (target, call)


def test_the_in_place_proof_refuses_an_add_call_at_another_index():
    """out[i] = add(a[i], b[i + 1]) over b itself would read elements already overwritten."""
    from aot.tir.expr import Call, Const, Load
    from aot.tir.inplace import writes_over
    from aot.tir.stmt import Buffer, Evaluate, PrimFunc

    def func(shift):
        a, b = Buffer("a", "int8", (9,)), Buffer("b", "int8", (10,))
        out = Buffer("out", "int8", (10,))
        consts = [Const(v, "int32") for v in (1, 0, 1 << 30, 0, 1, 0, 1 << 30, 0, 1, 1 << 30, 0, 0, -128, 127)]
        call = Call("add_s8q", [Load(out, (Const(0, "int32"),)), Load(a, (Const(0, "int32"),)),
                                Load(b, (Const(shift, "int32"),)), Const(9, "int32"), *consts], "int32")
        return PrimFunc("f", [a, b, out], Evaluate(call), 2), b, out
    f, b, out = func(0)
    assert writes_over(f, [b], out)
    f, b, out = func(1)
    assert not writes_over(f, [b], out)


@pytest.mark.parametrize("cc,flags", [("gcc", []), ("clang", []),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mfloat-abi=hard"]),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m55", "-mfloat-abi=hard"])])
def test_add_kernels_compile_warning_free(cc, flags, tmp_path):
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    for name, build in [("add", ADDS["add_c5_w17"]), ("fused", FUSED["conv_add_c7_w5"])]:
        res = _compile(build()[0], "c -mcpu=cortex-m55")
        with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
            t.extractall(tmp_path / name)
        src = tmp_path / name / "codegen/host/src/default_lib1.c"
        assert "aot_add_s8q(&" in src.read_text()
        r = subprocess.run([cc, *STRICT, "-O2", *flags, "-I", str(tmp_path / name / "codegen/host/include"),
                            "-I", str(tmp_path / name / "runtime/include"), "-c", str(src), "-o",
                            str(tmp_path / f"{name}.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
