"""simplify_stmt (aot/tir/simplify.py): what a split loop's pieces leave behind is dropped, and
nothing they still use."""
import aot.tir.intrin  # noqa: F401 -- registers the micro-kernels a Call may name
from aot.tir.expr import Call, Const, Load, Var
from aot.tir.simplify import simplify_stmt
from aot.tir.stmt import Allocate, Buffer, Evaluate, For, IfThenElse, Seq, Store


def _i(v):
    return Const(v, "int32")


def test_an_allocation_no_piece_uses_is_dropped():
    """A window buffer used only on a branch the loop's range rules out (an interior piece of a
    padded conv) goes with the branch; C would warn it unused."""
    out = Buffer("out", "int8", (16,))
    win = Buffer("win", "int8", (4,), "local")
    i = Var("i", "int32")
    border = Store(win, _i(0), Const(-128, "int8"))
    body = For(i, _i(0), _i(8), Seq([IfThenElse(i > _i(10), border), Store(out, i, Const(1, "int8"))]))
    got = simplify_stmt(Allocate(win, body))
    assert not isinstance(got, Allocate) and isinstance(got, For)


def test_an_allocation_still_used_is_kept():
    out = Buffer("out", "int8", (16,))
    win = Buffer("win", "int8", (4,), "local")
    i = Var("i", "int32")
    # used only as a pointer a call takes: still used
    call = Evaluate(Call("copy_s8", [Load(win, (_i(0),)), Load(out, (i,)), _i(1)], "int32"))
    got = simplify_stmt(Allocate(win, For(i, _i(0), _i(8), call)))
    assert isinstance(got, Allocate) and got.buffer is win
    stored = simplify_stmt(Allocate(win, For(i, _i(0), _i(4), Store(win, i, Const(0, "int8")))))
    assert isinstance(stored, Allocate)
