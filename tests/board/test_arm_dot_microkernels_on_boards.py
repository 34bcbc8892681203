"""The int8 dot-product micro-kernels (tests/host/test_arm_dot_microkernels.py) on QEMU Cortex-M boards,
bit for bit with TFLite Micro."""
import pytest

from test_arm_dot_microkernels import test_conv_with_a_fused_add_keeps_its_quad_calls as _fused_add
from test_arm_dot_microkernels import test_staged_pointwise_conv_keeps_its_micro_kernel as _staged_pointwise
from test_arm_dot_microkernels import BOARDS, CASES, _assert_schedule, _check, _feeds, tflm  # noqa: F401


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board", sorted(BOARDS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_microkernel_on_cortex_m_is_bit_exact(name, board):
    """The DSP body on qemu-cortex-m4, the Helium body on qemu-cortex-m55."""
    import aot
    build, _ = CASES[name]
    model, shape = build()
    res = aot.compile(model, target=f"c -mcpu={board.split('-', 1)[1]}")
    _assert_schedule(res, name, BOARDS[board])
    _check(res, _feeds(shape, 2), model, board=board)


@pytest.mark.board
@pytest.mark.parametrize("board", sorted(BOARDS))
def test_staged_pointwise_conv_keeps_its_micro_kernel_on_boards(board):
    _staged_pointwise(board)


@pytest.mark.board
@pytest.mark.parametrize("board", sorted(BOARDS))
def test_conv_with_a_fused_add_keeps_its_quad_calls_on_boards(board):
    _fused_add(board)
