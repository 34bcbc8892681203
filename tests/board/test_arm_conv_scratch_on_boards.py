"""pw_s8x2 over gathered windows (tests/host/test_arm_conv_scratch.py) on QEMU Cortex-M boards, bit
for bit with TFLite Micro: the DSP bodies (widen_q15x's, pw_s8's blocks with the assembly loop,
the folded and the exact requantisation)."""
import pytest

from test_arm_conv_scratch import CASES, _check_all, _scratch_kernels, tflm  # noqa: F401


@tflm
@pytest.mark.board
@pytest.mark.parametrize("name", sorted(CASES))
def test_pw_s8x2_on_cortex_m4_is_bit_exact(name):
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert _scratch_kernels(res)
    _check_all(res, model, shape, 2, board="qemu-cortex-m4")


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board", ["qemu-cortex-m7", "qemu-cortex-m33"])
def test_pw_s8x2_on_the_other_dsp_cores_is_bit_exact(board):
    """The M7's C loop (no assembly: it dual-issues) and the M33's assembly."""
    import aot
    model, shape = CASES["c8_o8_add"]()
    res = aot.compile(model, target=f"c -mcpu={board.split('-', 1)[1]}")
    assert _scratch_kernels(res)
    _check_all(res, model, shape, 2, board=board)


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board,opt", [("qemu-cortex-m4", "-O1"), ("qemu-cortex-m4", "-Os"), ("qemu-cortex-m4", "-O3"),
                                       ("qemu-cortex-m33", "-O1"), ("qemu-cortex-m33", "-Os"),
                                       ("qemu-cortex-m7", "-Os"), ("qemu-cortex-m7", "-O2")])
@pytest.mark.parametrize("name", ["c16_o20_full", "c32_o8_relu_full"])
def test_pw_s8x2_whole_blocks_build_and_are_bit_exact_at_every_optimisation(name, board, opt):
    """The whole blocks' one assembly statement (windows of a multiple of 16 values) takes all
    fourteen registers inlined into the gather kernel: it must still build at every -O and on
    every DSP core, and give TFLM's bits."""
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target=f"c -mcpu=cortex-{board.split('-')[-1]}")
    assert _scratch_kernels(res)
    _check_all(res, model, shape, 1, board=board, opt=opt)
