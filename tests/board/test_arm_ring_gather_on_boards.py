"""The ring of widened input rows (tests/host/test_arm_ring_gather.py) on QEMU Cortex-M boards, bit
for bit with TFLite Micro: the DSP bodies (widen_q15w's, gconv_ring's assembly and pw_s8's register
requantisation, the copy and pw_s8x2 where the table or the clamp rule the kernel out)."""
import pytest

from test_arm_ring_gather import CASES, _check_all, _ring, tflm  # noqa: F401


@tflm
@pytest.mark.board
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_ring_on_cortex_m4_is_bit_exact(name):
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert _ring(res)
    _check_all(res, model, shape, 2, board="qemu-cortex-m4")


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board,opt", [("qemu-cortex-m4", "-O1"), ("qemu-cortex-m4", "-Os"), ("qemu-cortex-m4", "-O3"),
                                       ("qemu-cortex-m4", "-O0"), ("qemu-cortex-m33", "-O1"), ("qemu-cortex-m33", "-O2"),
                                       ("qemu-cortex-m7", "-Os"), ("qemu-cortex-m7", "-O2")])
def test_the_ring_builds_and_is_bit_exact_at_every_optimisation(board, opt):
    """gconv_ring's one assembly statement takes fourteen registers and 30 operands: it must
    build at every -O and on every DSP core (its C at -O0), and give TFLM's bits."""
    import aot
    model, shape = CASES["o16_same_zp127"]()
    res = aot.compile(model, target=f"c -mcpu=cortex-{board.split('-')[-1]}")
    assert _ring(res)
    _check_all(res, model, shape, 1, board=board, opt=opt)
