"""Depthwise convs written over their input, with dw_s8 (tests/host/test_arm_dw_in_place.py), on QEMU
Cortex-M boards, bit for bit with TFLite Micro."""
import numpy as np
import pytest

from test_arm_dw_microkernel import BOARDS, _check, _feeds, dw_schedule

from test_arm_dw_in_place import dw_net, tflm  # noqa: F401
from conftest import is_shrunk, is_staged


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board", sorted(BOARDS))
def test_dw_in_place_on_cortex_m_is_bit_exact(board):
    """Staged by rows and written over the input's start, each with its dw_s8 call: against TFLM
    and against the plain loop nests (target "c", nothing written in place) on the same board."""
    import aot
    model, shape = dw_net(20, 6, 8, strides=(1, 1, 2))
    res = aot.compile(model, target=f"c -mcpu={board.split('-', 1)[1]}")
    kept = [c.func.attrs.get("schedule") for c in res.plan.calls
            if is_staged(c) and c.func.params[-1].name.endswith("_rows")
            or is_shrunk(c)]
    assert kept == [dw_schedule(BOARDS[board])] * 2
    feeds = _feeds(shape, 2)
    _check(res, feeds, model, board=board)
    plain = aot.compile(model, target="c", in_place=False)
    x, out = res.graph.inputs[0].name, res.graph.output_names[0]
    for k, feed in enumerate(feeds):
        np.testing.assert_array_equal(aot.run(res, {x: feed}, board=board)[out],
                                      aot.run(plain, {x: feed}, board=board)[out], err_msg=f"input {k}")
