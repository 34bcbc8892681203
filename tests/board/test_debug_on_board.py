"""aot debug on a QEMU Cortex-M board (the host side: tests/host/test_debug.py)."""
import pytest

from aot.debug import debug_mlf

from test_debug import MISSING, _statuses, corrupt_kernel, model  # noqa: F401


@pytest.mark.parametrize("board", ["qemu-cortex-m4"])
@pytest.mark.board
@pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed (CI installs them)")
def test_on_board(model, board):
    m, feeds, tar = model
    rep = debug_mlf(tar, m, feeds, board=board)
    assert rep.board == board and rep.ok, rep.table()
    rep = debug_mlf(corrupt_kernel(tar, 2), m, feeds, board=board)
    assert _statuses(rep) == ["ok", "ok", "DIVERGES", "DIVERGES", "DIVERGES", "DIVERGES"], rep.table()
    assert rep.first_divergent["kernel"] == 2 and rep.failure is None
