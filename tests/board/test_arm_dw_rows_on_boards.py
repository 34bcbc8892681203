"""dw3_s8r (tests/host/test_arm_dw_rows.py) on the QEMU boards with the DSP extension: its DSP body
and assembly, bit for bit with TFLite Micro, convs by themselves and written over their input."""
import pytest

from test_arm_dw_microkernel import _check, _feeds, dw_chain
from test_arm_dw_rows import CASES, CASES2, ROWS, ROWS2, _calls, case, rows_of, tflm

BOARD_CASES = [("qemu-cortex-m4", name) for name in sorted(CASES) + sorted(CASES2)] + \
    [(board, name) for board in ("qemu-cortex-m7", "qemu-cortex-m33")
     for name in ("9x17x16_same_odd_width", "10x16x16_same_left_shifts", "27x5x64_valid_by_columns",
                  "48x48x16_same_stride2", "50x50x16_same_stride2_odd_width")]


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board,name", BOARD_CASES)
def test_dw3_on_the_boards_is_bit_exact(board, name):
    import aot
    model, shape = case(name)
    res = aot.compile(model, target=f"c -mcpu={board.split('-', 1)[1]}", in_place=False)
    assert _calls(res, rows_of(name))
    _check(res, _feeds(shape, 3), model, board=board)


@tflm
@pytest.mark.board
@pytest.mark.parametrize("rows,cols,C", [(12, 16, 16), (26, 5, 64)])
def test_dw3_over_its_input_on_the_m4_is_bit_exact(rows, cols, C):
    import aot
    model, shape = dw_chain(rows, cols, C)
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert any(c.in_place is not None and c.in_place.kind == "ordered" and c.func.attrs.get("schedule") == ROWS
               for c in res.plan.calls)
    _check(res, _feeds(shape, 3), model, board="qemu-cortex-m4")


@tflm
@pytest.mark.board
def test_dw3_at_stride_2_over_its_input_on_the_m4_is_bit_exact():
    import aot
    model, shape = dw_chain(48, 48, 16, strides=(1, 2, 1))
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert any(c.in_place is not None and c.func.attrs.get("schedule") == ROWS2 for c in res.plan.calls)
    _check(res, _feeds(shape, 3), model, board="qemu-cortex-m4")
