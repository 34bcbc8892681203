"""fc_s8x4(t) (tests/host/test_arm_fc_rows.py) on QEMU Cortex-M boards, bit for bit with TFLite
Micro: the M4's and M33's assembly loop, the M7's C loop."""
import pytest

from test_arm_dot_microkernels import _check

from test_arm_fc_rows import CASES, _fc_kernels, _feeds, tflm  # noqa: F401


@tflm
@pytest.mark.board
@pytest.mark.parametrize("name", sorted(CASES))
def test_fc_s8x4_on_cortex_m4_is_bit_exact(name):
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert _fc_kernels(res)
    _check(res, _feeds(shape, 2), model, board="qemu-cortex-m4")


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board", ["qemu-cortex-m7", "qemu-cortex-m33"])
@pytest.mark.parametrize("name", ["k640_o128", "k12_o4"])
def test_fc_s8x4_on_the_other_dsp_cores_is_bit_exact(board, name):
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target=f"c -mcpu={board.split('-', 1)[1]}")
    assert _fc_kernels(res)
    _check(res, _feeds(shape, 2), model, board=board)
