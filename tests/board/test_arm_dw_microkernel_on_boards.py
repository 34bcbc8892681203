"""The int8 depthwise micro-kernel dw_s8 (tests/host/test_arm_dw_microkernel.py) on QEMU Cortex-M boards,
bit for bit with TFLite Micro."""
import numpy as np
import pytest

from test_arm_dw_microkernel import (BOARDS, CASES, _check, _feeds, _no_gather, _schedules, dw_chain, dw_schedule, dw_schedules,  # noqa: F401
                                     tflm)
from conftest import is_staged


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board", sorted(BOARDS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_dw_microkernel_on_cortex_m_is_bit_exact(name, board, monkeypatch):
    """The DSP body on qemu-cortex-m4, the Helium body on qemu-cortex-m55; the DSP body's
    broadcast input too, which the rule leaves to the register tiles."""
    import aot
    from aot.schedules import arm_dw
    build, takes = CASES[name]
    if name.startswith("conv1_"):
        monkeypatch.setattr(arm_dw, "_broadcast_pays", lambda *a: True)
        takes = {"mve", "dsp"}
    model, shape = build()
    res = aot.compile(model, target=f"c -mcpu={board.split('-', 1)[1]}", in_place=False)
    assert bool(set(dw_schedules(BOARDS[board])) & _schedules(res)) == (BOARDS[board] in takes)
    feeds = _feeds(shape, 2)
    _check(res, feeds, model, board=board)
    # and the plain loop nest (target "c": no micro-kernel) on the same board, output for output
    plain = aot.compile(model, target="c", in_place=False)
    assert not any(s and s.startswith("dw_s8") for s in _schedules(plain))
    x, out = res.graph.inputs[0].name, res.graph.output_names[0]
    for k, feed in enumerate(feeds):
        np.testing.assert_array_equal(aot.run(res, {x: feed}, board=board)[out],
                                      aot.run(plain, {x: feed}, board=board)[out], err_msg=f"input {k}")


@tflm
@pytest.mark.board
@pytest.mark.parametrize("board,C", [(b, 64) for b in sorted(BOARDS)] + [("qemu-cortex-m55", 8)])
def test_staged_depthwise_on_cortex_m_is_bit_exact(board, C):
    """A DS-CNN's layers in place: the staged depthwise conv with its dw_s8 call per block, the
    staged pointwise conv with its dot_s8 call per output channel of the pixel in the scratch
    (pw_s8 on the M4: every pixel's channels in one call through its q15 scratch)."""
    import aot
    model, shape = dw_chain(6, 5, C, layers="ddpd")
    res = aot.compile(model, target=f"c -mcpu={board.split('-', 1)[1]}")
    staged = [c.func.attrs.get("schedule") for c in res.plan.calls if is_staged(c)]
    pointwise = "dot_s8" if BOARDS[board] == "mve" else "pw_s8"      # (the DSP cores': tests/host/test_arm_pointwise_q15.py)
    assert staged[0] == dw_schedule(BOARDS[board]) and staged[1].startswith(pointwise)
    assert staged[1].endswith(f"({BOARDS[board]})") and len(staged) == 2
    _check(res, _feeds(shape, 2), model, board=board)
