"""dot_s8xq(t) and copy_s8 (tests/host/test_arm_helium_quads_and_copy.py) on QEMU Cortex-M boards, bit for
bit with TFLite Micro."""
import pytest

from test_arm_helium_quads_and_copy import CASES, _check, _compile, _feeds, _source, tflm  # noqa: F401


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board", ["qemu-cortex-m55", "qemu-cortex-m4"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_on_cortex_m_are_bit_exact(name, board):
    build, calls = CASES[name]
    model, shape = build()
    res = _compile(model, f"c -mcpu={board.split('-', 1)[1]}")
    src = _source(res)
    assert all((c in src) == (board == "qemu-cortex-m55") for c in calls), name
    _check(res, _feeds(shape, 1), model, board=board)
