"""pw_s8x2 over gathered windows (aot/schedules/arm_gather.py scratch_pairs): int8 convs with a
window on DSP Cortex-M cores, whose rows are whole 4-byte channel groups, two output pixels' windows
widened into pw_s8's scratch (widen_q15x a row) and pw_s8's 2x2 blocks over them.

The cases reach: padded borders (clipped windows, the slot zeroed), stride 2, odd output widths
(the last pixel in both slots), 3x3 and 5x3 windows, 8 to 20 input channels (shorter rows are arm_gather.gather_windows'), odd output channel
counts, right and left requantisation shifts (the folded table and the exact form), clamps to
int8's range and narrower, and a residual ADD fused after the requantisation (the call's bytes
through a local pair of rows), 3x3 and 1x1. Each is compared bit for bit with the tflite-micro
wheel: the plain bodies on the host under ASan/UBSan here, the DSP bodies on qemu-cortex-m4 in
tests/board/test_arm_conv_scratch_on_boards.py.
"""
import sys

import numpy as np
import pytest

from tflite_build import ModelBuilder
from tflm_oracle import tflm_available

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_arm_dot_microkernels import _check, _feeds, _schedules  # noqa: E402
from test_arm_pointwise_q15 import STRICT_COMPILES, compile_strict  # noqa: E402

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")


def conv_model(H, W, C, O, kh=3, kw=3, stride=1, padding="SAME", act="RELU", x_zp=-3, y_zp=2, y_scale=None,
               add=False, seed=0):
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=x_zp)
    ws = (rng.random(O) * 0.02 + 0.005).astype(np.float32)
    w = mb.tensor("w", [O, kh, kw, C], "int8", data=rng.integers(-127, 128, (O, kh, kw, C)).astype(np.int8),
                  scale=ws, zero_point=[0] * O, quantized_dimension=0)
    b = mb.tensor("b", [O], "int32", data=rng.integers(-500, 500, O).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * O)
    if padding == "SAME":
        Ho, Wo = -(-H // stride), -(-W // stride)
    else:
        Ho, Wo = (H - kh) // stride + 1, (W - kw) // stride + 1
    y = mb.tensor("y", [1, Ho, Wo, O], "int8", scale=y_scale or 0.1 * np.sqrt(C * kh * kw / 9), zero_point=y_zp)
    mb.op("CONV_2D", [x, w, b], [y], padding=padding, stride_h=stride, stride_w=stride,
          fused_activation_function="NONE" if add else act)
    if not add:
        return mb.finish(inputs=[x], outputs=[y]), (1, H, W, C)
    # the residual: the input itself where the shapes agree, else a second input
    r = x if (Ho, Wo, O) == (H, W, C) else mb.tensor("r", [1, Ho, Wo, O], "int8", scale=0.07, zero_point=5)
    z = mb.tensor("z", [1, Ho, Wo, O], "int8", scale=0.2, zero_point=-128)
    mb.op("ADD", [r, y], [z], fused_activation_function=act)
    return mb.finish(inputs=[x] if r is x else [x, r], outputs=[z]), (1, H, W, C)


CASES = {
    "c8_o8_same": lambda: conv_model(6, 5, 8, 8),                                   # clipped borders, odd width
    "c8_o7_s2": lambda: conv_model(7, 8, 8, 7, stride=2, x_zp=-128),               # stride 2, odd channels
    "c16_o5_valid_relu6": lambda: conv_model(5, 6, 16, 5, padding="VALID", act="RELU6", y_zp=-128),
    "c12_o9_k5x3": lambda: conv_model(6, 4, 12, 9, kh=5, kw=3, act="NONE", x_zp=127),
    "c20_o3_left_shifts": lambda: conv_model(4, 4, 20, 3, y_scale=1e-3),            # the exact form
    "c8_o8_add": lambda: conv_model(4, 5, 8, 8, add=True),                          # residual add, 3x3
    "c8_o16_add_1x1_s2": lambda: conv_model(6, 6, 8, 16, kh=1, kw=1, stride=2, add=True, padding="VALID"),
    # windows of a multiple of 16 values at int8's whole range (the whole blocks one assembly
    # statement): 144 (four eight-group steps and an odd four), five blocks; 288 (nine steps),
    # RELU from -128, an odd pixel count, two blocks
    "c16_o20_full": lambda: conv_model(5, 5, 16, 20, act="NONE", y_zp=-7, seed=4),
    "c32_o8_relu_full": lambda: conv_model(3, 5, 32, 8, act="RELU", y_zp=-128, x_zp=-128, seed=5),
}
ADDS = {"c8_o8_add", "c8_o16_add_1x1_s2"}


def _scratch_kernels(res):
    return {k: v for k, v in _schedules(res).items() if v == "pw_s8x2 gather (dsp)"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dsp_cores_take_the_scratch_gather_and_helium_does_not(name):
    """The conv is pw_s8x2 on cortex-m4/m7/m33, its scratch a workspace argument of two windows
    (4 kh kw cin bytes); cortex-m55 and target "c" keep their kernels."""
    import aot
    from aot.tir.intrin.arm_q15 import buf_words
    model, _ = CASES[name]()
    # the window's size from the portable target's kernel: its weights' count over its channels
    conv = aot.compile(model, target="c").plan.calls[0].func
    O = conv.params[-1].shape[-1]
    K = int(np.prod(conv.params[1].shape)) // O
    for mcpu in ("cortex-m4", "cortex-m7", "cortex-m33"):
        res = aot.compile(model, target=f"c -mcpu={mcpu}")
        (call,) = [c for c in res.plan.calls if c.func.attrs.get("schedule") == "pw_s8x2 gather (dsp)"]
        assert call.scratch_bytes == 4 * buf_words(K) and call.args[-1].kind == "workspace"
        # the weights widened to int16, in blocks of four channels (the last padded)
        assert call.func.params[1].shape == (2 * K * 4 * -(-O // 4),)
    for target in ("c -mcpu=cortex-m55", "c"):
        assert not _scratch_kernels(aot.compile(model, target=target))


def test_channels_not_in_whole_groups_keep_the_other_rules():
    """A window row of 6 channels (18 bytes) is not whole 4-byte groups: the other rules keep it.
    One of 3 (9 bytes: a first layer's, shorter than the row kernels want) is gathered into the
    scratch by the first-layer rule (gather_windows), its taps padded to whole groups."""
    import aot
    model, _ = conv_model(5, 5, 6, 4)
    assert not _scratch_kernels(aot.compile(model, target="c -mcpu=cortex-m4"))
    model, _ = conv_model(5, 5, 3, 4)
    assert _scratch_kernels(aot.compile(model, target="c -mcpu=cortex-m4"))


@tflm
@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_bodies_on_the_host_are_bit_exact(name):
    """The Cortex-M4 compile built by the host's gcc: pw_s8x2's and widen_q15x's plain bodies
    under ASan/UBSan, against TFLM on random inputs and int8's extremes."""
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert _scratch_kernels(res)
    _check_all(res, model, shape, 3, sanitize=True)


def _check_all(res, model, shape, n, **run):
    """_check for one input, or every input of a two-input model (the residual random)."""
    import aot
    from tflm_oracle import run_tflm
    names = [v.name for v in res.graph.inputs]
    if len(names) == 1:
        return _check(res, _feeds(shape, n), model, **run)
    rng = np.random.default_rng(3)
    rshape = tuple(res.graph.inputs[1].type.shape)
    for k, feed in enumerate(_feeds(shape, n)):
        r = rng.integers(-128, 128, rshape).astype(np.int8)
        ref = run_tflm(model, [feed, r])[0]
        got = aot.run(res, {names[0]: feed, names[1]: r}, **run)[res.graph.output_names[0]]
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")


def test_the_verifier_checks_the_scratch_the_gather_writes():
    """The scratch is one of the checked pointers of widen_q15x and pw_s8x2: one word short is
    refused."""
    import aot
    from aot.tir.stmt import Buffer
    from aot.tir.verify import AccessError, verify_accesses
    from test_arm_pointwise_q15 import _rebind
    model, _ = CASES["c8_o8_same"]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    (call,) = res.plan.calls
    assert verify_accesses(call.func).checked > 0
    old = call.func.params[-1]
    short = Buffer(old.name, old.dtype, (old.size - 1,))
    func = call.func.with_body(call.func.body, params=call.func.params[:-1] + [short])
    with pytest.raises(AccessError, match="outside its"):
        verify_accesses(_rebind(func, old, short))


@pytest.mark.parametrize("cc,flags", STRICT_COMPILES)
def test_pw_s8x2_compiles_warning_free(cc, flags, tmp_path):
    """pw_s8x2 and widen_q15x (and the rows of a fused add), strict C99 with -Werror (-O0 too)."""
    compile_strict(cc, flags, tmp_path, [(CASES["c8_o8_add"]()[0], "aot_pw_s8x2(&"),
                                         (CASES["c8_o7_s2"]()[0], "aot_widen_q15x(&")])
