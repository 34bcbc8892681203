"""Micro-kernels (tensorize + aot/tir/intrin/): the int8 dot product of TFLite's convolutions and
fully connected layers, as Helium (cortex-m55), DSP SIMD32 (cortex-m4) and plain C bodies.

Each model is built here (tests/tflite_build.py) on shapes that reach every tail of the
kernels: channel counts and K that are odd and not multiples of 4 or 16, SAME padding (clipped
windows), stride 2, per-channel quantisation, nonzero input zero points. The same compile for
a Cortex-M target runs on the host (the plain body, under ASan/UBSan) and on the emulated
boards (the DSP and MVE bodies), and every output is compared bit for bit with the tflite-micro
wheel. The plain loop nest (target "c", no micro-kernel) is the fourth path. Output channels go two
to a dot_s8x2 call (aot/schedules/arm_pairs.py); the cases' odd channel counts keep one single
call for the last.
"""
import contextlib
import io
import shutil
import subprocess
import tarfile

import numpy as np
import pytest

from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available
from conftest import is_staged

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def conv_model(H, W, C, O, k, stride, padding, x_zp=-3, seed=0, y_scale=None, y_zp=2):
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=x_zp)
    ws = (rng.random(O) * 0.02 + 0.005).astype(np.float32)           # per output channel
    w = mb.tensor("w", [O, k, k, C], "int8", data=rng.integers(-127, 128, (O, k, k, C)).astype(np.int8),
                  scale=ws, zero_point=[0] * O, quantized_dimension=0)
    b = mb.tensor("b", [O], "int32", data=rng.integers(-500, 500, O).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * O)
    Ho = -(-H // stride) if padding == "SAME" else (H - k) // stride + 1
    Wo = -(-W // stride) if padding == "SAME" else (W - k) // stride + 1
    y = mb.tensor("y", [1, Ho, Wo, O], "int8", scale=y_scale or 0.1 * np.sqrt(k * k * C / 9), zero_point=y_zp)
    mb.op("CONV_2D", [x, w, b], [y], padding=padding, stride_h=stride, stride_w=stride,
          fused_activation_function="RELU")
    return mb.finish(inputs=[x], outputs=[y]), (1, H, W, C)


def dense_model(N, K, O, x_zp=5, seed=0, y_scale=None):
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [N, K], "int8", scale=0.05, zero_point=x_zp)
    w = mb.tensor("w", [O, K], "int8", data=rng.integers(-127, 128, (O, K)).astype(np.int8), scale=0.01,
                  zero_point=0)
    b = mb.tensor("b", [O], "int32", data=rng.integers(-500, 500, O).astype(np.int32), scale=0.0005, zero_point=0)
    y = mb.tensor("y", [N, O], "int8", scale=y_scale or 0.02 * np.sqrt(K), zero_point=-1)
    mb.op("FULLY_CONNECTED", [x, w, b], [y])
    return mb.finish(inputs=[x], outputs=[y]), (N, K)


# name -> (model builder call, the variants that tensorize it): a k x k window's rows (taps x
# channels) must be 32+ bytes for the DSP call to pay (aot/schedules/arm.py); the k x k convs take
# dot_s8_rows (one call per output), 1x1 convs and dense dot_s8. Rows of 21, 51, 105, 99 and 9
# bytes, clipped at SAME borders to 14, 34, 70: every Helium tail (n % 16), every DSP step (8, 4, 1)
CASES = {
    "conv3x3_c7_same_s2": (lambda: conv_model(9, 11, 7, 5, 3, 2, "SAME"), {"mve"}),
    "conv3x3_c17_same_s1": (lambda: conv_model(7, 6, 17, 3, 3, 1, "SAME", x_zp=-128), {"mve", "dsp"}),
    "conv3x3_c35_same_s2": (lambda: conv_model(7, 9, 35, 3, 3, 2, "SAME", x_zp=100), {"mve", "dsp"}),
    "conv3x3_c33_valid_s2": (lambda: conv_model(9, 9, 33, 4, 3, 2, "VALID", x_zp=127), {"mve", "dsp"}),
    "conv1x1_c33": (lambda: conv_model(5, 3, 33, 7, 1, 1, "VALID"), {"mve", "dsp"}),
    "conv1x1_c7_s2": (lambda: conv_model(6, 5, 7, 9, 1, 2, "VALID"), {"mve", "dsp"}),
    # a window row of 3 taps x 3 channels is one run of 9 (clipped at the borders)
    "conv3x3_c3_same_s2": (lambda: conv_model(8, 8, 3, 7, 3, 2, "SAME"), {"mve"}),
    "conv3x3_c3_same_s1": (lambda: conv_model(7, 9, 3, 5, 3, 1, "SAME", x_zp=-128), {"mve"}),
    "conv3x3_c1_same_s1": (lambda: conv_model(6, 7, 1, 5, 3, 1, "SAME"), {"mve", "dsp"}),   # gathered
    # one channel: the run is a window row's taps alone, clipped at the borders (KWS's first conv)
    "conv5x5_c1_same_s2": (lambda: conv_model(9, 10, 1, 6, 5, 2, "SAME", x_zp=11), {"mve"}),
    # output scale below input x weight scale for some channels: requantisation shifts left there
    "conv1x1_c9_o11_mixed_shifts": (lambda: conv_model(5, 4, 9, 11, 1, 1, "VALID", y_scale=1e-3), {"mve", "dsp"}),
    "dense_k5": (lambda: dense_model(2, 5, 7), {"mve", "dsp"}),
    "dense_k33": (lambda: dense_model(1, 33, 9, x_zp=-77), {"mve", "dsp"}),
    "dense_k20_left_shift": (lambda: dense_model(2, 20, 8, x_zp=-128, y_scale=2e-4), {"mve", "dsp"}),  # x2.5
    "dense_k64": (lambda: dense_model(3, 64, 10, x_zp=0), {"mve", "dsp"}),
    # gathered windows (aot/schedules/arm_gather.py): windows of 9, 27, 25 and 12 bytes (odd
    # and not a multiple of 4: every DSP tail; less than a Helium vector), 11 and 6 channels
    # (quads, a pair, a single), SAME borders filled with the zero point, stride 2
    "gather_c1_o6_same_s1": (lambda: conv_model(7, 9, 1, 6, 3, 1, "SAME", x_zp=-128), {"mve", "dsp"}),
    "gather_c3_o11_same_s2": (lambda: conv_model(9, 11, 3, 11, 3, 2, "SAME", x_zp=127), {"mve", "dsp"}),
    "gather_c1_k5_o11_valid_s2": (lambda: conv_model(11, 13, 1, 11, 5, 2, "VALID", x_zp=100), {"mve", "dsp"}),
    "gather_c3_k2_o6_same_s2": (lambda: conv_model(9, 10, 3, 6, 2, 2, "SAME", x_zp=-5), {"mve", "dsp"}),
    # RELU at the zero point -128: int8's whole range (gconv_q15's blocks requantised by assembly)
    "gather_c3_o12_same_s2_full": (lambda: conv_model(9, 8, 3, 12, 3, 2, "SAME", x_zp=-7, y_zp=-128), {"mve", "dsp"}),
    # left requantisation shifts: gconv_q15's table takes the exact form
    "gather_c3_o5_same_s1_left_shifts": (lambda: conv_model(6, 6, 3, 5, 3, 1, "SAME", y_scale=1e-3), {"mve", "dsp"}),
}
# the cases whose window rows (taps x channels) are shorter than the row kernels want: each
# pixel's window gathered (aot/schedules/arm_gather.py), with the kernel named per variant: on
# the DSP two pixels' windows gathered as int8, widened into pw_s8's scratch, a pw_s8x2 call (VWW's
# 3x3 stride 2 over RGB padded at the bottom and right: a ring of widened rows, gconv_ring); on
# Helium rows of 8+ bytes two pixels a gconv_s8 call, shorter ones one pixel a dot_s8x4q call
_Q, _S8, _DOT, _RING = "pw_s8x2", "gconv_s8", "dot_s8", "gconv_ring"
GATHER = {"conv3x3_c3_same_s2": {"dsp": _RING, "mve": _S8}, "conv3x3_c3_same_s1": {"dsp": _Q, "mve": _S8},
          "conv3x3_c1_same_s1": {"dsp": _Q, "mve": _DOT}, "conv5x5_c1_same_s2": {"dsp": _Q, "mve": _DOT},
          "gather_c1_o6_same_s1": {"dsp": _Q, "mve": _DOT}, "gather_c3_o11_same_s2": {"dsp": _Q, "mve": _S8},
          "gather_c1_k5_o11_valid_s2": {"dsp": _Q, "mve": _DOT}, "gather_c3_k2_o6_same_s2": {"dsp": _Q, "mve": _DOT},
          "gather_c3_o5_same_s1_left_shifts": {"dsp": _Q, "mve": _S8}, "gather_c3_o12_same_s2_full": {"dsp": _Q, "mve": _S8}}
BOARDS = {"qemu-cortex-m4": "dsp", "qemu-cortex-m55": "mve"}


def pointwise_chain_model(H=5, W=3, C=33, n=3, seed=0):
    """n pointwise convs C -> C: the inner ones write over their input, pixel by pixel through a
    scratch (aot/schedules/inplace_conv.py), and keep their micro-kernels."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = x0 = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=-3)
    for k in range(n):
        ws = (rng.random(C) * 0.02 + 0.005).astype(np.float32)
        w = mb.tensor(f"w{k}", [C, 1, 1, C], "int8", data=rng.integers(-127, 128, (C, 1, 1, C)).astype(np.int8),
                      scale=ws, zero_point=[0] * C, quantized_dimension=0)
        b = mb.tensor(f"b{k}", [C], "int32", data=rng.integers(-500, 500, C).astype(np.int32), scale=0.05 * ws,
                      zero_point=[0] * C)
        y = mb.tensor(f"y{k}", [1, H, W, C], "int8", scale=0.05, zero_point=[4, -7, 0][k % 3])
        mb.op("CONV_2D", [x, w, b], [y], padding="VALID", stride_h=1, stride_w=1, fused_activation_function="RELU")
        x = y
    return mb.finish(inputs=[x0], outputs=[x]), (1, H, W, C)


def conv_add_model(H=6, W=5, C=11, seed=0):
    """A 3x3 conv C -> C whose output feeds a residual ADD with its input (ResNet's block end):
    the add is fused into the conv's epilogue, after the conv's requantisation."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=-128)
    ws = (rng.random(C) * 0.02 + 0.005).astype(np.float32)
    w = mb.tensor("w", [C, 3, 3, C], "int8", data=rng.integers(-127, 128, (C, 3, 3, C)).astype(np.int8),
                  scale=ws, zero_point=[0] * C, quantized_dimension=0)
    b = mb.tensor("b", [C], "int32", data=rng.integers(-500, 500, C).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * C)
    y = mb.tensor("y", [1, H, W, C], "int8", scale=0.3, zero_point=-4)
    z = mb.tensor("z", [1, H, W, C], "int8", scale=0.2, zero_point=-128)
    mb.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_h=1, stride_w=1, fused_activation_function="NONE")
    mb.op("ADD", [x, y], [z], fused_activation_function="RELU")
    return mb.finish(inputs=[x], outputs=[z]), (1, H, W, C)


# on the DSP cores: pointwise convs (and fully connected layers of several rows) are pw_s8,
# through a q15 scratch (aot/schedules/arm_q15.py; its own cases: tests/host/test_arm_pointwise_q15.py)
DSP_KERNEL = {"conv1x1_c33": "pw_s8", "conv1x1_c7_s2": "pw_s8", "conv1x1_c9_o11_mixed_shifts": "pw_s8",
              "dense_k5": "pw_s8t", "dense_k20_left_shift": "pw_s8t", "dense_k64": "pw_s8t"}


def _expected(name, variant):
    """The schedule `aot info` names for a case on a variant, None where no micro-kernel runs."""
    if variant in GATHER.get(name, {}):
        return f"{GATHER[name][variant]} gather ({variant})"
    if variant not in CASES[name][1]:
        return None
    return f"{DSP_KERNEL.get(name, 'dot_s8') if variant == 'dsp' else 'dot_s8'} ({variant})"


def _assert_schedule(res, name, variant):
    got, want = set(_schedules(res).values()), _expected(name, variant)
    assert got == {want} if want else not any(g and g.endswith(f"({variant})") for g in got), (name, got)


def _feeds(shape, n=3):
    rng = np.random.default_rng(7)
    feeds = [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(n)]
    return feeds + [np.full(shape, -128, np.int8), np.full(shape, 127, np.int8)]   # the extremes of every sum


def _check(res, feeds, model, **run):
    import aot
    x, out = res.graph.inputs[0].name, res.graph.output_names[0]
    for k, feed in enumerate(feeds):
        ref = run_tflm(model, [feed])[0]
        got = aot.run(res, {x: feed}, **run)[out]
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")


def _schedules(res):
    return {c.symbol: c.func.attrs.get("schedule") for c in res.plan.calls}


def test_tensorize_refuses_a_loop_that_is_not_the_pattern():
    from aot.tir.expr import Cast, Load, Var
    from aot.tir.schedule import ScheduleError, tensorize
    from aot.tir.stmt import Allocate, Buffer, For, Store
    a, b = Buffer("a", "int8", (8, 8)), Buffer("b", "int8", (8,))
    acc = Buffer("acc", "int32", (1,), "local")
    k, j = Var("k"), Var("j")

    def nest(x_index):
        prod = Cast("int32", Load(a, x_index)) * Cast("int32", Load(b, (k,)))
        return Allocate(acc, For(k, 0, 8, Store(acc, 0, Load(acc, 0) + prod)))
    tensorize(nest((j, k)), k, "dot_s8")                               # contiguous: accepted
    with pytest.raises(ScheduleError, match="a is not read contiguously along k"):
        tensorize(nest((k, j)), k, "dot_s8")                           # a column: stride 8
    with pytest.raises(ScheduleError, match="no tensor intrinsic named 'dot_f32'"):
        tensorize(nest((j, k)), k, "dot_f32")
    fl = Buffer("f", "float32", (8,))
    facc = Buffer("facc", "float32", (1,), "local")
    body = For(k, 0, 8, Store(facc, 0, Load(facc, 0) + Load(fl, (k,))))
    with pytest.raises(ScheduleError, match="not int8 loads|not acc = acc"):
        tensorize(body, k, "dot_s8")


def test_the_verifier_checks_every_element_a_micro_kernel_reads():
    """A dot_s8 call reads n elements from each pointer: a run that ends past its buffer is refused
    even though its first element is in bounds."""
    from aot.tir.expr import Cast, Const, Load, Var
    from aot.tir.flatten import flatten
    from aot.tir.schedule import tensorize
    from aot.tir.stmt import Allocate, Buffer, For, PrimFunc, Seq, Store
    from aot.tir.verify import AccessError, verify_accesses

    def func(n):
        a, b, out = Buffer("a", "int8", (4, 8)), Buffer("b", "int8", (8,)), Buffer("out", "int32", (4,))
        acc = Buffer("acc", "int32", (1,), "local")
        i, k = Var("i"), Var("k")
        prod = Cast("int32", Load(a, (i, k))) * Cast("int32", Load(b, (k,)))
        body = For(i, 0, 4, Allocate(acc, Seq([Store(acc, 0, Const(0, "int32")),
                                               For(k, 0, n, Store(acc, 0, Load(acc, 0) + prod)),
                                               Store(out, i, Load(acc, 0))])))
        return flatten(PrimFunc("f", [a, b, out], tensorize(body, k, "dot_s8"), 2))
    assert verify_accesses(func(8)).checked > 0
    with pytest.raises(AccessError, match=r"a\[8..32\] is outside its 32 elements"):
        verify_accesses(func(9))


def test_the_verifier_checks_the_last_row_of_a_rows_call():
    """dot_s8_rows reads rows runs of n, sa apart: the last row's end is checked."""
    from aot.tir.expr import Cast, Const, Load, Var
    from aot.tir.flatten import flatten
    from aot.tir.schedule import tensorize
    from aot.tir.stmt import Allocate, Buffer, For, PrimFunc, Seq, Store
    from aot.tir.verify import AccessError, verify_accesses

    def func(rows):
        a, b, out = Buffer("a", "int8", (8, 8)), Buffer("b", "int8", (3, 5)), Buffer("out", "int32", (4,))
        acc = Buffer("acc", "int32", (1,), "local")
        i, r, k = Var("i"), Var("r"), Var("k")
        prod = (Cast("int32", Load(a, (i + r, k))) - Const(3, "int32")) * Cast("int32", Load(b, (r, k)))
        body = For(i, 0, 4, Allocate(acc, Seq([Store(acc, 0, Const(0, "int32")),
                                               For(r, 0, rows, For(k, 0, 5, Store(acc, 0, Load(acc, 0) + prod))),
                                               Store(out, i, Load(acc, 0))])))
        return flatten(PrimFunc("f", [a, b, out], tensorize(body, r, "dot_s8_rows"), 2))
    assert verify_accesses(func(2)).checked > 0
    with pytest.raises(AccessError, match=r"b\[\d+..19\] is outside its 15 elements"):
        verify_accesses(func(4))


@pytest.mark.parametrize("mcpu,variant", [("cortex-m4", "dsp"), ("cortex-m7", "dsp"), ("cortex-m33", "dsp"),
                                          ("cortex-m55", "mve"), ("cortex-m85", "mve"),
                                          ("cortex-m0", None), ("cortex-m3", None), (None, None)])
def test_each_target_gets_its_schedule_and_info_names_it(mcpu, variant, tmp_path):
    import aot
    from aot.cli import main
    model, _ = CASES["conv1x1_c33"][0]()
    res = aot.compile(model, target=f"c -mcpu={mcpu}" if mcpu else "c")
    kernel = DSP_KERNEL["conv1x1_c33"] if variant == "dsp" else "dot_s8"     # (tests/host/test_arm_pointwise_q15.py)
    assert set(_schedules(res).values()) == {f"{kernel} ({variant})" if variant else None}
    tar = tmp_path / "m.tar"
    with open(tar, "wb") as f:
        f.write(res.tar)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["info", str(tar)]) == 0
    assert (f"{kernel} ({variant})" if variant else "loop nest") in buf.getvalue()


@pytest.mark.parametrize("name,mcpu", [("gather_c3_o11_same_s2", "cortex-m4"), ("gather_c3_o11_same_s2", "cortex-m55"),
                                       ("gather_c1_o6_same_s1", "cortex-m55")])
def test_info_names_the_gather_schedule(name, mcpu, tmp_path):
    import aot
    from aot.cli import main
    model, _ = CASES[name][0]()
    variant = "dsp" if mcpu == "cortex-m4" else "mve"
    tar = tmp_path / "m.tar"
    tar.write_bytes(aot.compile(model, target=f"c -mcpu={mcpu}").tar)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["info", str(tar)]) == 0
    assert _expected(name, variant) in buf.getvalue()


@tflm
@pytest.mark.parametrize("name", sorted(CASES))
def test_microkernel_plain_body_on_the_host_is_bit_exact(name):
    """A Cortex-M compile run on the host: the micro-kernel's plain body, under ASan/UBSan; and
    the untensorized loop nest of target "c"."""
    import aot
    build, _ = CASES[name]
    model, shape = build()
    res = aot.compile(model, target="c -mcpu=cortex-m55")
    _assert_schedule(res, name, "mve")
    _check(res, _feeds(shape), model, sanitize=True)
    if "dsp" in GATHER.get(name, {}):        # the DSP compile's gathered nest, its plain bodies
        res = aot.compile(model, target="c -mcpu=cortex-m4")
        _assert_schedule(res, name, "dsp")
        _check(res, _feeds(shape, 2), model, sanitize=True)
    _check(aot.compile(model), _feeds(shape, 1), model)


ARM_SYSROOT = "/usr/lib/arm-none-eabi"      # newlib's headers, for clang targeting the cores
CLANG_ARM = ["--target=arm-none-eabi", "-mthumb", "-mfloat-abi=hard", f"--sysroot={ARM_SYSROOT}"]


@pytest.mark.parametrize("cc,flags", [("gcc", []), ("clang", []),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mfloat-abi=hard"]),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m55", "-mfloat-abi=hard"]),
                                      ("clang", [*CLANG_ARM, "-mcpu=cortex-m4"]),
                                      ("clang", [*CLANG_ARM, "-mcpu=cortex-m55"])])
def test_tensorized_kernels_compile_warning_free(cc, flags, tmp_path):
    import os
    import aot
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    if "--target=arm-none-eabi" in flags and not os.path.isdir(ARM_SYSROOT):
        pytest.skip("no arm-none-eabi sysroot for clang")
    mcpu = next((f.split("=")[1] for f in flags if f.startswith("-mcpu=")), "cortex-m55")
    # 3 output channels: a pair and a single call; 9 (per-tensor) and 11 (per-channel): four to a
    # call with their requantisation, then a pair (11), then one single call for the last
    # (Helium: a one-row window's quads are one dot_s8xq(t) call storing the run of them)
    run = "xq" if mcpu == "cortex-m55" else "x4q"
    calls = {"conv3x3_c35_same_s2": ("aot_dot_s8x2(&", "aot_dot_s8_rows(&"),
             "dense_k33": (f"aot_dot_s8{run}t(&", "aot_dot_s8(&"),
             "conv1x1_c9_o11_mixed_shifts": (f"aot_dot_s8{run}(&", "aot_dot_s8x2(&", "aot_dot_s8(&"),
             "gather_c1_k5_o11_valid_s2": ("aot_dot_s8x4q_g(&", "aot_dot_s8x2_g(&", "aot_dot_s8_g(&"),
             "gather_c1_o6_same_s1": ("aot_dot_s8x4q_g(&", "aot_dot_s8x2_g(&", "_win["),
             "gather_c3_o11_same_s2": ("aot_gconv_s8(&", "aot_copy_s8(&")}
    if mcpu == "cortex-m4":       # pointwise: pw_s8 (tests/host/test_arm_pointwise_q15.py); a window's rows four channels a call
        calls["conv1x1_c9_o11_mixed_shifts"] = ("aot_pw_s8(&",)
        calls["conv3x3_c33_valid_s2"] = ("aot_dot_s8x4q(&",)
    # the gathered windows for the DSP: pw_s8x2 over the int8 windows widened whole (its DSP
    # body for arm-none-eabi-gcc's M4, its plain body on the host)
    m4 = {"gather_c1_k5_o11_valid_s2": ("aot_pw_s8x2(&", "aot_widen_q15x(&"),
          "gather_c3_o11_same_s2": ("aot_pw_s8x2(&", "aot_widen_q15x(&", "aot_copy_s8(&")}
    jobs = [(n, e, mcpu) for n, e in calls.items() if mcpu == "cortex-m55" or "gather" not in n]
    jobs += [(n, e, "cortex-m4") for n, e in m4.items() if mcpu != "cortex-m55" or not flags]
    for name, expected, cpu in jobs:
        model, _ = CASES[name][0]()
        res = aot.compile(model, target=f"c -mcpu={cpu}")
        name = f"{name}_{cpu}"
        with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
            t.extractall(tmp_path / name)
        src = tmp_path / name / "codegen/host/src/default_lib1.c"
        text = src.read_text()
        assert all(c in text for c in expected), name
        r = subprocess.run([cc, *STRICT, "-O2", *flags, "-I", str(tmp_path / name / "codegen/host/include"),
                            "-I", str(tmp_path / name / "runtime/include"), "-c", str(src), "-o",
                            str(tmp_path / f"{name}.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def _staged_kernels(res):
    return [c for c in res.plan.calls if is_staged(c)]


@tflm
@pytest.mark.parametrize("board", [None])     # the boards: tests/board/test_arm_dot_microkernels_on_boards.py
def test_staged_pointwise_conv_keeps_its_micro_kernel(board):
    """The inner pointwise convs of a chain are staged to write over their input; the reduction
    over one pixel's channels inside the staging is still one dot_s8 call (33 channels: the
    Helium and DSP tails), on the host's plain body and on both boards, bit-exact with TFLM."""
    import aot
    model, shape = pointwise_chain_model()
    mcpu = board.split("-", 1)[1] if board else "cortex-m55"
    res = aot.compile(model, target=f"c -mcpu={mcpu}")
    staged = _staged_kernels(res)
    assert staged and all(c.func.attrs.get("schedule") == ("pw_s8 (dsp)" if mcpu == "cortex-m4" else "dot_s8 (mve)")
                          for c in staged)
    if board is None:
        _check(res, _feeds(shape), model, sanitize=True)
    else:
        _check(res, _feeds(shape, 2), model, board=board)


def test_the_verifier_checks_every_row_a_quad_call_reads():
    """Four output channels requantised in one dot_s8x4q call (aot/schedules/arm_pairs.py) read
    four weight rows and four elements of bias, multiplier and shift: one short of any of them is
    refused (the range checked ends at the fourth row or element)."""
    from aot.ops.fixed_point import mbqm
    from aot.schedules.arm_pairs import pair_outputs
    from aot.tir.expr import Bin, Call, Cast, Const, Load, Var, walk
    from aot.tir.flatten import flatten
    from aot.tir.schedule import tensorize
    from aot.tir.stmt import Allocate, Buffer, For, PrimFunc, Seq, Store, walk_stmts
    from aot.tir.verify import AccessError, verify_accesses

    def func(w_len=32, q_len=4):
        a, w = Buffer("a", "int8", (8,)), Buffer("w", "int8", (w_len,))
        bias, mult, shift = (Buffer(n, "int32", (q_len,)) for n in ("bias", "mult", "shift"))
        out, acc = Buffer("out", "int8", (4,)), Buffer("acc", "int32", (1,), "local")
        c, k = Var("c"), Var("k")
        prod = (Cast("int32", Load(a, (k,))) - Const(3, "int32")) * Cast("int32", Load(w, (c * 8 + k,)))
        req = mbqm(Load(acc, 0) + Load(bias, (c,)), Load(mult, (c,)), Load(shift, (c,))) + Const(2, "int32")
        clamp = Bin("min", Bin("max", req, Const(-128, "int32")), Const(127, "int32"))
        body = For(c, 0, 4, Allocate(acc, Seq([Store(acc, 0, Const(0, "int32")),
                                               For(k, 0, 8, Store(acc, 0, Load(acc, 0) + prod)),
                                               Store(out, c, Cast("int8", clamp))])))
        quad = pair_outputs(tensorize(body, k, "dot_s8"), quads=True)
        assert sum(1 for s in walk_stmts(quad) if isinstance(s, Store) for e in walk(s.value)
                   if isinstance(e, Call) and e.fn == "dot_s8x4q") == 1
        return flatten(PrimFunc("f", [a, w, bias, mult, shift, out], quad, 5))
    assert verify_accesses(func()).checked > 0
    with pytest.raises(AccessError, match=r"w\[31..31\] is outside its 31 elements"):
        verify_accesses(func(w_len=31))
    with pytest.raises(AccessError, match=r"(bias|mult|shift)\[3..3\] is outside its 3 elements"):
        verify_accesses(func(q_len=3))


@tflm
@pytest.mark.parametrize("board", [None])     # the boards: tests/board/test_arm_dot_microkernels_on_boards.py
def test_conv_with_a_fused_add_keeps_its_quad_calls(board):
    """A conv whose epilogue goes on into a residual add: the conv's requantisation is still four
    channels to a dot_s8x4q call, the add then runs on each byte (11 channels: two quads, a pair, a
    single call), bit-exact with TFLM on the host's plain body and on both boards."""
    import aot
    model, shape = conv_add_model()
    mcpu = board.split("-", 1)[1] if board else "cortex-m55"
    res = aot.compile(model, target=f"c -mcpu={mcpu}")
    fused = [c for c in res.plan.calls if "qadd" in c.symbol]
    assert fused
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        src = next(t.extractfile(m).read().decode() for m in t.getmembers() if m.name.endswith("lib1.c"))
    assert "aot_dot_s8x4q(&" in src and "aot_dot_s8x2(&" in src
    if board is None:
        _check(res, _feeds(shape), model, sanitize=True)
    else:
        _check(res, _feeds(shape, 2), model, board=board)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_input_offset_folds_into_the_bias(name):
    """Helium: the bias constant a kernel links is bias + off * (the channel's weight-row sum),
    checked against the model's own arrays summed here, followed by the bias as it was where a
    window is clipped (SAME: those calls keep the offset); a zero input zero point (dense_k64)
    and the DSP body (which adds the offset for free) keep theirs."""
    import aot
    from aot.schedules.arm_fold import OffsetFold
    model, _ = CASES[name][0]()
    folds, dots = {}, {}
    for mcpu in ("cortex-m55", "cortex-m4"):
        res = aot.compile(model, target=f"c -mcpu={mcpu}")
        folds[mcpu] = [x for c in res.plan.calls for x in c.func.attrs.get("layouts", {}).values()
                       if isinstance(x, OffsetFold)]
        dots[mcpu] = set(_schedules(res).values()) <= {"dot_s8 (mve)", "dot_s8 gather (mve)", "gconv_s8 gather (mve)"}
    assert not folds["cortex-m4"]
    assert len(folds["cortex-m55"]) == (dots["cortex-m55"] and name != "dense_k64")
    if not folds["cortex-m55"]:
        return
    res = aot.compile(model, target="c -mcpu=cortex-m55")
    (node,) = res.graph.nodes
    w, b = (v.const.astype(np.int64) for v in node.inputs[1:3])
    off = -res.graph.io_quant[("input", 0)][1]
    folded = b + off * w.reshape(len(b), -1).sum(axis=1)
    gathered = "mve" in GATHER.get(name, {})        # a gathered window is never clipped
    if ("SAME" in node.attrs.get("padding", "") or "same" in name) and not gathered:
        folded = np.concatenate([folded, b])
    linked = [a for _, a in res.plan.constants if a.dtype == np.int32]
    assert any(np.array_equal(a, folded) for a in linked) and not any(np.array_equal(a, b) for a in linked)
