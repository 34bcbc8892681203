"""The Cortex-M float schedules (tests/host/test_arm_float_schedules.py) on QEMU Cortex-M boards,
against onnxruntime."""
import pytest

from test_arm_float_schedules import CASES, _compare, _feeds, ds_block_model, needs_boards  # noqa: F401
from conftest import is_staged


@needs_boards
@pytest.mark.board
@pytest.mark.parametrize("board", ["qemu-cortex-m4", "qemu-cortex-m55", "qemu-cortex-m3"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_float_schedule_on_cortex_m_matches_onnxruntime(name, board):
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model.SerializeToString(), target=f"c -mcpu={board.split('-', 1)[1]}")
    feeds = _feeds(shape)
    _compare(model, feeds, aot.run(res, feeds, board=board))


@needs_boards
@pytest.mark.board
@pytest.mark.parametrize("board", ["qemu-cortex-m4", "qemu-cortex-m55"])
def test_staged_float_block_on_cortex_m_matches_onnxruntime(board):
    import aot
    model, shape = ds_block_model()
    res = aot.compile(model.SerializeToString(), target=f"c -mcpu={board.split('-', 1)[1]}")
    assert any(is_staged(c) for c in res.plan.calls)
    feeds = _feeds(shape)
    _compare(model, feeds, aot.run(res, feeds, board=board))
