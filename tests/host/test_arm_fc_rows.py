"""fc_s8x4(t) (aot/tir/intrin/arm_q15.py, rule aot/schedules/arm_q15.py _row_call): an int8 fully
connected layer of one row on DSP Cortex-M cores, four output channels a block over weights stored
four rows interleaved a 4-byte group at a time (RowQuads), the input offset folded into the
requantisation's table.

The cases: the anomaly-detection model's shapes (640 -> 128, 128 -> 8, 8 -> 128), an odd number
of 4-byte groups (the single step after the pairs), input offsets at both ends, a left
requantisation shift (the exact form), a clamp narrower than int8 (RELU) and per-channel weights.
Shapes whose channels are not multiples of 4 keep the other rules. Each is compared bit for bit
with the tflite-micro wheel: the plain body on the host under ASan/UBSan here, the DSP bodies on
the boards in tests/board/test_arm_fc_rows_on_boards.py.
"""
import sys

import numpy as np
import pytest

from tflite_build import ModelBuilder
from tflm_oracle import tflm_available

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_arm_dot_microkernels import _check, _schedules  # noqa: E402
from test_arm_pointwise_q15 import STRICT_COMPILES, compile_strict  # noqa: E402

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")


def fc_model(K, O, x_zp=5, y_scale=None, act="NONE", per_channel=False, seed=0):
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, K], "int8", scale=0.05, zero_point=x_zp)
    wdata = rng.integers(-127, 128, (O, K)).astype(np.int8)
    if per_channel:
        ws = (rng.random(O) * 0.02 + 0.005).astype(np.float32)
        w = mb.tensor("w", [O, K], "int8", data=wdata, scale=ws, zero_point=[0] * O, quantized_dimension=0)
        b = mb.tensor("b", [O], "int32", data=rng.integers(-500, 500, O).astype(np.int32), scale=0.05 * ws,
                      zero_point=[0] * O)
    else:
        w = mb.tensor("w", [O, K], "int8", data=wdata, scale=0.01, zero_point=0)
        b = mb.tensor("b", [O], "int32", data=rng.integers(-500, 500, O).astype(np.int32), scale=0.0005,
                      zero_point=0)
    y = mb.tensor("y", [1, O], "int8", scale=y_scale or 0.02 * np.sqrt(K), zero_point=-1)
    mb.op("FULLY_CONNECTED", [x, w, b], [y], fused_activation_function=act)
    return mb.finish(inputs=[x], outputs=[y]), (1, K)


CASES = {
    "k640_o128": lambda: fc_model(640, 128, x_zp=-128),
    "k128_o8": lambda: fc_model(128, 8, x_zp=127),
    "k8_o128_relu": lambda: fc_model(8, 128, act="RELU"),
    "k12_o4": lambda: fc_model(12, 4),                                     # three groups: the single step
    "k20_o8_left_shift": lambda: fc_model(20, 8, y_scale=2e-4),            # the exact form
    "k36_o12_per_channel": lambda: fc_model(36, 12, per_channel=True, x_zp=-3),
}


def _fc_kernels(res):
    return {k: v for k, v in _schedules(res).items() if v and v.startswith("fc_s8x4")}


def _feeds(shape, n=3):
    rng = np.random.default_rng(5)
    feeds = [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(n)]
    return feeds + [np.full(shape, -128, np.int8), np.full(shape, 127, np.int8)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_dsp_cores_take_fc_s8x4_and_helium_does_not(name):
    import aot
    model, _ = CASES[name]()
    want = "fc_s8x4 (dsp)" if "per_channel" in name else "fc_s8x4t (dsp)"
    for mcpu in ("cortex-m4", "cortex-m7", "cortex-m33"):
        assert set(_schedules(aot.compile(model, target=f"c -mcpu={mcpu}")).values()) == {want}
    for target in ("c -mcpu=cortex-m55", "c"):
        assert not _fc_kernels(aot.compile(model, target=target))


def test_channels_not_in_fours_keep_the_other_rules():
    import aot
    for K, O in ((10, 8), (16, 6)):
        model, _ = fc_model(K, O)
        assert not _fc_kernels(aot.compile(model, target="c -mcpu=cortex-m4"))


def test_the_weights_are_stored_four_rows_a_group_and_the_offset_is_in_the_table():
    """RowQuads: block b, group g, row r, byte j at ((b * K/4 + g) * 4 + r) * 4 + j, written here
    from the model's own weights; the table's biases hold bias + x_offset * the row's weight sum
    (the input's zero point is 5: offset -5), its last pair the flag of every channel folded."""
    import aot
    model, _ = CASES["k12_o4"]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    (call,) = res.plan.calls
    rng = np.random.default_rng(0)            # fc_model's draws, in its order
    w = rng.integers(-127, 128, (4, 12)).astype(np.int64)
    b = rng.integers(-500, 500, 4).astype(np.int64)
    packed = res.plan.constants[call.args[1].index][1]
    O, K = w.shape
    want = np.zeros(O * K, np.int64)
    for r in range(O):
        for k in range(K):
            want[((r // 4 * (K // 4) + k // 4) * 4 + r % 4) * 4 + k % 4] = w[r, k]
    np.testing.assert_array_equal(packed.astype(np.int64), want)
    table = res.plan.constants[call.args[2].index][1].astype(np.int64)
    np.testing.assert_array_equal(table[0:2 * O:2], b - 5 * w.sum(axis=1))
    # then the pair saying whether every channel takes the folded requantisation
    assert table.shape == (2 * O + 2,) and table[2 * O] == 0 and table[2 * O + 1] == int(table[1:2 * O:2].all())


@tflm
@pytest.mark.parametrize("name", sorted(CASES))
def test_fc_s8x4_plain_body_on_the_host_is_bit_exact(name):
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert _fc_kernels(res)
    _check(res, _feeds(shape), model, sanitize=True)


def test_the_verifier_checks_every_weight_fc_s8x4_reads():
    """The packed weights are one of the call's checked pointers: one element short is refused."""
    import aot
    from aot.tir.stmt import Buffer
    from aot.tir.verify import AccessError, verify_accesses
    from test_arm_pointwise_q15 import _rebind
    model, _ = CASES["k12_o4"]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    (call,) = res.plan.calls
    assert verify_accesses(call.func).checked > 0
    old = call.func.params[1]
    short = Buffer(old.name, old.dtype, (old.size - 1,))
    func = call.func.with_body(call.func.body, params=[short if p is old else p for p in call.func.params])
    with pytest.raises(AccessError, match="outside its"):
        verify_accesses(_rebind(func, old, short))


@pytest.mark.parametrize("cc,flags", STRICT_COMPILES)
def test_fc_s8x4_compiles_warning_free(cc, flags, tmp_path):
    """Both quantisations, strict C99 with -Werror (-O0 too: the assembly's operands)."""
    compile_strict(cc, flags, tmp_path, [(CASES["k12_o4"]()[0], "aot_fc_s8x4t(&"),
                                         (CASES["k36_o12_per_channel"]()[0], "aot_fc_s8x4(&")])
