"""The Helium int8 ADD kernels (tests/host/test_arm_helium_int8_add.py) on QEMU Cortex-M boards,
bit for bit with TFLite Micro."""
import pytest

from test_arm_helium_int8_add import ADDS, FUSED, _check, _compile, _feeds, _source, tflm  # noqa: F401


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board", ["qemu-cortex-m55", "qemu-cortex-m4"])
@pytest.mark.parametrize("name", sorted(ADDS) + sorted(FUSED))
def test_add_on_cortex_m_is_bit_exact(name, board):
    """The Helium body on qemu-cortex-m55; the M4 keeps its scalar epilogue (no add_s8q)."""
    model, shapes = {**ADDS, **FUSED}[name]()
    res = _compile(model, f"c -mcpu={board.split('-', 1)[1]}")
    assert ("aot_add_s8q(&" in _source(res)) == (board == "qemu-cortex-m55")
    _check(res, _feeds(shapes, 1), model, board=board)
