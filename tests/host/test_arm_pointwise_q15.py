"""pw_s8 (aot/tir/intrin/arm_q15.py, aot/schedules/arm_q15.py): int8 pointwise convs on DSP
Cortex-M cores through a q15 scratch, two pixels by two channels at a time.

The shapes reach every tail: input channels below 4 (no whole 4-byte group), an odd number of
groups (the single-group step after the two-group loop) and 1-3 leftover channels; odd output
channel counts (the one-channel block after the pairs); odd pixel counts (the last pixel
paired with itself); stride 2 (one call per output row); per-channel and per-tensor
quantisation; right and left requantisation shifts; clamps to int8's whole range (no activation)
and narrower (RELU with a nonzero output zero point, RELU6); convs staged to write over their
input. Each runs on qemu-cortex-m4 (the DSP body) and on the host under ASan/UBSan (the plain
body of the same C), compared bit for bit with the tflite-micro wheel; target "c" (the plain
loop nest) is the third path. Helium cores keep their own kernels.
"""
import io
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from tflite_build import ModelBuilder
from tflm_oracle import tflm_available

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_arm_dw_microkernel import ARM_SYSROOT, CLANG_ARM  # noqa: E402
from test_arm_dot_microkernels import STRICT, _check, _feeds, _schedules, _staged_kernels  # noqa: E402

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")


def pw_model(H, W, C, O, per_channel=True, act="RELU", x_zp=-3, y_zp=2, y_scale=None, stride=1, seed=0,
             faint=(), zero_rows=0, big=0):
    """faint: (every k-th channel's weight scale times f, ...) pairs (k, f): channels whose
    requantisation shifts right by far more than the zero point leaves room for in c, or whose
    multiplier TFLite rounds to 0 (below 2^-31 of the output scale). zero_rows: every k-th
    channel's weights 0 and its bias anywhere in int32's range (a pruned channel: its value
    the requantised bias, positive or negative, to beyond int8's range). big: every k-th
    channel's bias beyond 2^30 with its weights as they are (the exact form; no doubling)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=x_zp)
    wdata = rng.integers(-127, 128, (O, 1, 1, C)).astype(np.int8)
    if per_channel:
        ws = (rng.random(O) * 0.02 + 0.005).astype(np.float32)
        for k, f in faint:
            ws[::k] *= np.float32(f)
        bias = rng.integers(-500, 500, O).astype(np.int32)
        if zero_rows:
            wdata[::zero_rows] = 0
            bias[::zero_rows] = rng.integers(-(1 << 31), (1 << 31) - 1, len(bias[::zero_rows]), dtype=np.int64)
            bias[0], bias[zero_rows] = 1 << 30, -(1 << 30)
        if big:
            bias[::big] = [(1 << 30) + 4321 if k % 2 else -(1 << 30) - 77 for k in range(len(bias[::big]))]
        w = mb.tensor("w", [O, 1, 1, C], "int8", data=wdata, scale=ws, zero_point=[0] * O, quantized_dimension=0)
        b = mb.tensor("b", [O], "int32", data=bias, scale=0.05 * ws, zero_point=[0] * O)
    else:
        w = mb.tensor("w", [O, 1, 1, C], "int8", data=wdata, scale=0.01, zero_point=0)
        b = mb.tensor("b", [O], "int32", data=rng.integers(-500, 500, O).astype(np.int32), scale=0.0005,
                      zero_point=0)
    Ho, Wo = -(-H // stride), -(-W // stride)
    y = mb.tensor("y", [1, Ho, Wo, O], "int8", scale=y_scale or 0.1 * np.sqrt(C / 9), zero_point=y_zp)
    mb.op("CONV_2D", [x, w, b], [y], padding="VALID", stride_h=stride, stride_w=stride,
          fused_activation_function=act)
    return mb.finish(inputs=[x], outputs=[y]), (1, H, W, C)


def chain_model(H, W, C, n=3, widen=False, seed=0):
    """n pointwise convs, C -> C (or C -> 2C first, widen): the inner ones are staged to write over
    their input (aot/schedules/inplace_conv.py)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = x0 = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=-3)
    cin = C
    for k in range(n):
        cout = 2 * C if widen and k == 0 else cin
        ws = (rng.random(cout) * 0.02 + 0.005).astype(np.float32)
        w = mb.tensor(f"w{k}", [cout, 1, 1, cin], "int8",
                      data=rng.integers(-127, 128, (cout, 1, 1, cin)).astype(np.int8), scale=ws,
                      zero_point=[0] * cout, quantized_dimension=0)
        b = mb.tensor(f"b{k}", [cout], "int32", data=rng.integers(-500, 500, cout).astype(np.int32),
                      scale=0.05 * ws, zero_point=[0] * cout)
        y = mb.tensor(f"y{k}", [1, H, W, cout], "int8", scale=0.05, zero_point=[4, -7, -128][k % 3])
        mb.op("CONV_2D", [x, w, b], [y], padding="VALID", stride_h=1, stride_w=1,
              fused_activation_function=["RELU", "RELU6", "NONE"][k % 3])
        x, cin = y, cout
    return mb.finish(inputs=[x0], outputs=[x]), (1, H, W, C)


# name -> model: (input channels: whole 4-byte groups, odd groups, leftovers), output channels, pixels
CASES = {
    "c33_o7_px15": lambda: pw_model(5, 3, 33, 7),                            # 8 groups + 1, odd O and pixels
    "c3_o11_px9": lambda: pw_model(3, 3, 3, 11, x_zp=-128),                  # no whole group
    "c12_o3_px5": lambda: pw_model(1, 5, 12, 3, act="RELU6", y_zp=-128),      # 3 groups: the single step
    "c17_o3_px7": lambda: pw_model(7, 1, 17, 3, x_zp=127),                   # a pair and one channel
    "c6_o2_px2": lambda: pw_model(1, 2, 6, 2, act="NONE", x_zp=0),           # one group + 2, int8's range
    "c11_o17_px6_per_tensor": lambda: pw_model(2, 3, 11, 17, per_channel=False, act="NONE", x_zp=100),
    "c9_o11_left_shifts": lambda: pw_model(5, 4, 9, 11, y_scale=1e-3),       # requantisation shifts left
    "c8_o5_per_tensor_left": lambda: pw_model(3, 3, 8, 5, per_channel=False, y_scale=2e-4, act="NONE"),
    "c7_o9_s2": lambda: pw_model(6, 5, 7, 9, stride=2),                      # a call per output row
    "c64_o64_px5": lambda: pw_model(1, 5, 64, 64, y_zp=-128),
    # most channels' shifts too large for zp * 2^e in c (the exact form), some multipliers 0
    # (dead channels, e free), a few ordinary ones
    "c20_o13_faint": lambda: pw_model(3, 3, 20, 13, y_zp=-128, faint=((1, 1e-6), (4, 1e-9))),
    # pruned channels (weights 0): each one's value fixed, most of them clamped; with faint ones
    "c12_o14_pruned": lambda: pw_model(2, 3, 12, 14, act="NONE", y_zp=-128, zero_rows=3,
                                       faint=((5, 1e-6), (7, 1e-8))),
    "c16_o8_pruned_relu": lambda: pw_model(3, 1, 16, 8, y_zp=7, zero_rows=2, faint=((1, 1e-4),)),
    # a third of the channels faint, clamped narrower than int8 (RELU6: the tested clamp)
    "c8_o9_faint_relu6": lambda: pw_model(1, 3, 8, 9, act="RELU6", y_zp=-100, faint=((3, 1e-6),)),
    "chain_c33": lambda: chain_model(5, 3, 33),
    "chain_c11_px9": lambda: chain_model(3, 3, 11),
    "chain_c8_widen": lambda: chain_model(4, 3, 8, widen=True),
    # 8 input channels, whole blocks, every channel folded, int8's whole range: pw_s8's one-pixel
    # path (odd pixels); the same with faint channels (the pairs' path); in place (the inner
    # convs, the third's requantisation int8's whole range)
    "c8_o16_px7": lambda: pw_model(7, 1, 8, 16, act="NONE", y_zp=-128),
    "c8_o8_faint": lambda: pw_model(2, 2, 8, 8, act="NONE", y_zp=-128, faint=((3, 1e-6),)),
    "chain_c8_px9": lambda: chain_model(3, 3, 8, n=4),
    # every channel folded, int8's whole range, per channel: the blocks' sums requantised from
    # their registers; 15 groups (the eight-group loop, then four, two and one straight), 8
    # groups and 3 leftovers, 25 groups (the loop three times and one) with a partial last block
    "c60_o12_full": lambda: pw_model(3, 3, 60, 12, act="NONE", y_zp=5, seed=1),
    "c35_o8_full": lambda: pw_model(1, 5, 35, 8, act="NONE", y_zp=-128, x_zp=-128, seed=2),
    "c100_o13_full": lambda: pw_model(2, 2, 100, 13, act="NONE", y_zp=-20, x_zp=127, seed=3),
    # cin a multiple of 16 (the whole blocks one assembly statement): eight groups a step and an
    # odd four, five blocks; one step, odd pixels; the odd four alone, a block and two channels
    "c48_o20_full": lambda: pw_model(2, 3, 48, 20, act="NONE", y_zp=-7, seed=6),
    "c32_o8_px7_full": lambda: pw_model(7, 1, 32, 8, act="NONE", y_zp=100, x_zp=-128, seed=7),
    "c16_o6_full": lambda: pw_model(3, 3, 16, 6, act="NONE", y_zp=-128, x_zp=127, seed=8),
    # the one-pixel path of 8 input channels sixteen output channels a step (32), four (12)
    "c8_o32_px5": lambda: pw_model(5, 1, 8, 32, act="NONE", y_zp=3, x_zp=-128, seed=4),
    "c8_o12_px3": lambda: pw_model(1, 3, 8, 12, act="NONE", y_zp=-128, seed=5),
    # 8 to 16 channels, output stride 16: blocks of PIX8_BLOCK (32) pixels channel by channel
    # (aot_pw_s8_cols8), the pixels left the one-pixel path; pruned channels with biases beyond
    # 2^30 (their doubled sums wrap)
    "c8_o16_px71": lambda: pw_model(71, 1, 8, 16, act="NONE", y_zp=-128, x_zp=127, seed=9),
    "c8_o16_pruned": lambda: pw_model(6, 6, 8, 16, act="NONE", y_zp=-128, zero_rows=3, seed=10),
    # biases beyond 2^30 on channels with weights: no doubling (the flag 0), the pairs' C paths
    "c16_o8_big": lambda: pw_model(3, 3, 16, 8, act="NONE", y_zp=-128, big=3, seed=11),
    "c8_o16_big": lambda: pw_model(5, 8, 8, 16, act="NONE", y_zp=-128, big=5, seed=12),
}
PRUNED = {"c12_o14_pruned": 3, "c16_o8_pruned_relu": 2, "c8_o16_pruned": 3}     # every k-th channel's weights 0
CHAINS = {"chain_c33", "chain_c11_px9", "chain_c8_px9"}        # their inner convs are staged in place (checked)


def _pw_kernels(res):
    return {k: v for k, v in _schedules(res).items() if v and v.startswith("pw_s8")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dsp_cores_take_pw_s8_and_helium_does_not(name):
    """Every conv of the cases is pw_s8 on cortex-m4/m7/m33 (per tensor: pw_s8t), its scratch a
    workspace argument of pw_buf_words words (buf_words(C), more for 8 -> 16 channels per
    channel); the M55 compile has no pw_s8 (Helium keeps its kernels) and neither has target "c"."""
    import aot
    from aot.tir.intrin.arm_q15 import pw_buf_words
    model, _ = CASES[name]()
    for mcpu in ("cortex-m4", "cortex-m7", "cortex-m33"):
        res = aot.compile(model, target=f"c -mcpu={mcpu}")
        kinds = set(_schedules(res).values())
        assert kinds == {"pw_s8t (dsp)" if "per_tensor" in name else "pw_s8 (dsp)"}, kinds
        for c in res.plan.calls:
            cin = c.func.params[0].shape[-1]
            cout = int(_calls(c.func)[0].args[9].value)
            assert c.scratch_bytes == 4 * pw_buf_words(cin, cout, "per_tensor" not in name)
            assert c.args[-1].kind == "workspace"
    for target in ("c -mcpu=cortex-m55", "c"):
        assert not _pw_kernels(aot.compile(model, target=target))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_requantisation_table_takes_the_folded_form_where_it_holds(name):
    """pw_s8's bias argument is its table (FoldedBias): (bias, c) per channel, c 0 for the exact
    form, then (0, whether every channel is folded), and the shifts as FoldedShift gives them, channel by channel. Fast where the
    requantisation shifts right, with c = 2^(e-1) + zp * 2^e for each channel's e (the call's zero
    point); the exact form, the shift as it was, on the channels that shift left or not at all (the plain
    and board tests run both)."""
    import aot
    from aot.tir.intrin.arm_q15 import cols8
    model, _ = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    consts = res.plan.constants
    for call in res.plan.calls:
        if not call.func.attrs["schedule"].startswith("pw_s8"):
            continue
        c = _calls(call.func)[0]         # (a stride-2 conv: one call per output row, the same table)
        table = consts[call.args[2].index][1].astype(np.int64)       # (input, weights, bias, mult, shift, ...)
        cin, cout, zp = int(c.args[8].value), int(c.args[9].value), int(c.args[14].value)
        tail = cols8(cin, cout, "per_tensor" not in name)
        assert table.shape == (2 * cout + 2 + 8 * cout * tail,)
        table, flag, tail = table[:2 * cout], table[2 * cout:2 * cout + 2], table[2 * cout + 2:].reshape(-1, 8)
        if "per_tensor" in name:
            shifts = np.full(cout, int(c.args[5].value))
        else:
            shifts = consts[call.args[4].index][1].astype(np.int64)
        fast = table[1::2] != 0
        e = shifts if "per_tensor" not in name else -shifts
        assert (e[fast] >= 1).all()
        # the pair after the channels: whether the weights and biases are doubled (per channel,
        # where every sum of the doubled products fits: all of these but the pruned channels'
        # biases beyond 2^30 where they are not folded), whether every channel is folded
        dbl = int("per_tensor" not in name and "big" not in name)
        assert list(flag) == [dbl, int(fast.all())]
        if len(tail):
            # aot_pw_s8_cols8's words a channel where every channel is folded (else zeros):
            # doubled weight pairs and bias, the multiplier, c and e
            mult = consts[call.args[3].index][1].astype(np.int64)
            want = [mult, table[1::2], e] if fast.all() else [0 * mult] * 3
            for k, v in zip((5, 6, 7), want):
                np.testing.assert_array_equal(tail[:, k], v)
            assert fast.all() == (tail[:, 0:5] != 0).any()
        if name in PRUNED:
            assert fast[::PRUNED[name]].all()      # each pruned channel's c gives its value
            continue
        np.testing.assert_array_equal(table[1::2][fast], (1 << (e[fast] - 1)) + zp * (1 << e[fast]))
        if "faint" in name:
            # a multiplier 0 (dead) folds with e = 1; faint channels whose zp * 2^e leaves c's
            # range keep the exact form (the call then tests each channel)
            mult = consts[call.args[3].index][1].astype(np.int64)
            assert (e[mult == 0] == 1).all() and fast[mult == 0].all() and (~fast).any()
            assert (mult == 0).any() or name != "c20_o13_faint"
            continue
        if "big" in name:
            # the channels whose bias leaves no room for the folded form's bounds keep the exact one
            assert not fast.all()
            continue
        if "left" in name:
            # each channel on its own: those not shifting right keep the exact form and their shift as it was
            assert (~fast).any() and (shifts[~fast] >= 0).all()
        else:
            assert fast.all()


@tflm
@pytest.mark.parametrize("name", sorted(CASES))
def test_pw_s8_plain_body_on_the_host_is_bit_exact(name):
    """The Cortex-M4 compile built by the host's gcc: pw_s8's plain body under ASan/UBSan; and
    target "c"'s loop nest."""
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert _pw_kernels(res)
    if name in CHAINS:
        assert _staged_kernels(res) and all(c.func.attrs["schedule"] == "pw_s8 (dsp)" for c in _staged_kernels(res))
    _check(res, _feeds(shape), model, sanitize=True)
    _check(aot.compile(model), _feeds(shape, 1), model)


def test_the_verifier_checks_the_scratch_pw_s8_writes():
    """The scratch is one of the call's checked pointers: one word short is refused."""
    import aot
    from aot.tir.intrin import get_intrin
    from aot.tir.intrin.arm_q15 import buf_words
    from aot.tir.verify import AccessError, verify_accesses
    model, _ = CASES["c33_o7_px15"]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    (call,) = res.plan.calls
    assert verify_accesses(call.func).checked > 0
    it = get_intrin("pw_s8")
    offsets = dict(it.last_offsets(next(iter(_calls(call.func))).args))
    assert offsets[6].value == buf_words(33) - 1
    short = call.func.with_body(call.func.body, params=call.func.params[:-1] + [_shorter(call.func.params[-1])])
    with pytest.raises(AccessError, match="outside its"):
        verify_accesses(_rebind(short, call.func.params[-1], short.params[-1]))


def _calls(func):
    from aot.tir.stmt import Evaluate, walk_stmts
    return [s.call for s in walk_stmts(func.body) if isinstance(s, Evaluate)]


def _shorter(buf):
    from aot.tir.stmt import Buffer
    return Buffer(buf.name, buf.dtype, (buf.size - 1,))


def _rebind(func, old, new):
    """func with every use of buffer old read from new instead."""
    from aot.tir.expr import Load, transform
    from aot.tir.stmt import map_exprs
    body = map_exprs(func.body, lambda e: transform(e, lambda x: Load(new, x.indices)
                                                    if isinstance(x, Load) and x.buffer is old else None))
    return func.with_body(body)


# the compilers and flags a DSP micro-kernel's C is checked warning-free with
STRICT_COMPILES = [("gcc", []), ("clang", []),
                   ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard"]),
                   ("arm-none-eabi-gcc", ["-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard"]),
                   ("arm-none-eabi-gcc", ["-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard"]),
                   ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-O0"]),
                   ("clang", [*CLANG_ARM, "-mcpu=cortex-m4"])]


def compile_strict(cc, flags, tmp_path, models):
    """Each (model, call text) compiled for the flags' core (cortex-m4 on the host), its C holding
    the call, built by cc with STRICT and -Werror at -O2 (then the flags')."""
    import os
    import aot
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    if "--target=arm-none-eabi" in flags and not os.path.isdir(ARM_SYSROOT):
        pytest.skip("no arm-none-eabi sysroot for clang")
    mcpu = next((f.split("=")[1] for f in flags if f.startswith("-mcpu=")), "cortex-m4")
    for k, (model, call) in enumerate(models):
        res = aot.compile(model, target=f"c -mcpu={mcpu}")
        with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
            t.extractall(tmp_path / str(k))
        src = tmp_path / str(k) / "codegen/host/src/default_lib1.c"
        assert call in src.read_text()
        r = subprocess.run([cc, *STRICT, "-O2", *flags, "-I", str(tmp_path / str(k) / "codegen/host/include"),
                            "-I", str(tmp_path / str(k) / "runtime/include"), "-c", str(src), "-o",
                            str(tmp_path / f"{k}.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("cc,flags", STRICT_COMPILES)
def test_pw_s8_compiles_warning_free(cc, flags, tmp_path):
    """Both bodies and both quantisations, strict C99 with -Werror (-O0 too: the asm's operands)."""
    compile_strict(cc, flags, tmp_path, [(CASES[name]()[0], call) for name, call in
                                         (("c33_o7_px15", "aot_pw_s8(&"), ("c11_o17_px6_per_tensor", "aot_pw_s8t(&"))])


def pw_add_model(H=3, W=5, C=11, seed=0):
    """A 1x1 conv whose output feeds a residual ADD with its input: the add is fused into the
    conv's epilogue, after its requantisation, which pw_s8 does not take."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=-128)
    ws = (rng.random(C) * 0.02 + 0.005).astype(np.float32)
    w = mb.tensor("w", [C, 1, 1, C], "int8", data=rng.integers(-127, 128, (C, 1, 1, C)).astype(np.int8),
                  scale=ws, zero_point=[0] * C, quantized_dimension=0)
    b = mb.tensor("b", [C], "int32", data=rng.integers(-500, 500, C).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * C)
    y = mb.tensor("y", [1, H, W, C], "int8", scale=0.3, zero_point=-4)
    z = mb.tensor("z", [1, H, W, C], "int8", scale=0.2, zero_point=-128)
    mb.op("CONV_2D", [x, w, b], [y], padding="VALID", stride_h=1, stride_w=1, fused_activation_function="NONE")
    mb.op("ADD", [x, y], [z], fused_activation_function="RELU")
    return mb.finish(inputs=[x], outputs=[z]), (1, H, W, C)


@tflm
def test_a_fused_residual_add_keeps_the_quad_calls():
    """pw_s8 stores its requantised bytes itself: a conv whose epilogue goes on into an add keeps
    dot_s8x4q (the add on each byte), bit-exact on the host."""
    import aot
    model, shape = pw_add_model()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert not _pw_kernels(res) and set(_schedules(res).values()) == {"dot_s8 (dsp)"}
    _check(res, _feeds(shape), model, sanitize=True)
