"""pw_s8 through a q15 scratch (tests/host/test_arm_pointwise_q15.py) on QEMU Cortex-M boards, bit for bit
with TFLite Micro."""
import pytest

from test_arm_dot_microkernels import _check, _feeds, _schedules

from test_arm_pointwise_q15 import CASES, _pw_kernels, tflm  # noqa: F401


@tflm
@pytest.mark.board
@pytest.mark.parametrize("name", sorted(CASES))
def test_pw_s8_on_cortex_m4_is_bit_exact(name):
    """The DSP body on qemu-cortex-m4 (the extremes of every sum among the inputs)."""
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert _pw_kernels(res)
    _check(res, _feeds(shape, 2), model, board="qemu-cortex-m4")


@tflm
@pytest.mark.board
@pytest.mark.parametrize("name", ["chain_c33", "c33_o7_px15"])
def test_helium_keeps_its_kernels_on_cortex_m55(name):
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m55")
    assert set(_schedules(res).values()) == {"dot_s8 (mve)"}
    _check(res, _feeds(shape, 2), model, board="qemu-cortex-m55")


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board,opt", [("qemu-cortex-m4", "-O0"), ("qemu-cortex-m4", "-O1"), ("qemu-cortex-m4", "-Os"),
                                       ("qemu-cortex-m4", "-O3"),
                                       ("qemu-cortex-m33", "-O1"), ("qemu-cortex-m33", "-Os"),
                                       ("qemu-cortex-m7", "-Os"), ("qemu-cortex-m7", "-O2")])
@pytest.mark.parametrize("name", ["c48_o20_full", "c32_o8_px7_full", "c16_o6_full", "c8_o16_px71"])
def test_pw_s8_whole_blocks_build_and_are_bit_exact_at_every_optimisation(name, board, opt):
    """The whole blocks' one assembly statement (cin a multiple of 16) and the 8 -> 16 channels'
    one (aot_pw_s8_cols8) take all fourteen registers: it must still build at every -O and on
    every DSP core, and give TFLM's bits; at -O0 the DSP body's C paths take the doubled weights
    (their sums shifted one less)."""
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target=f"c -mcpu=cortex-{board.split('-')[-1]}")
    assert _pw_kernels(res)
    _check(res, _feeds(shape, 1), model, board=board, opt=opt)
