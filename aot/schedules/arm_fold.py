"""The input offset folded into the bias at compile time (Helium). A dot call sums
(x + off) * w; where the call is its output's whole reduction, off * sum(w) over the channel's
weight row is a constant, which the schedule adds to the channel's bias (the OffsetFold layout:
the executor applies it to the array it links) and the call passes off = 0, which lets the
Helium bodies skip the weight sums (one vaddva per weight vector, and the registers holding
them). A call whose window is clipped at a border (it reads fewer than the row's taps) keeps
its offset and reads the bias as it was, which the constant holds after the folded half.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tir.expr import Bin, Call, Const, Load, Select, Var, transform, walk
from ..tir.intrin.arm import flat_index, step
from ..tir.intrin.requant import find_requant
from ..tir.simplify import bounds, const_value, loop_ranges, simplify
from ..tir.stmt import Allocate, Buffer, For, Seq, Store, map_exprs, own_exprs, walk_stmts

DOTS = ("dot_s8", "dot_s8_rows")


def _loads_of(stmt, buf):
    return [x for s in walk_stmts(stmt) for e in own_exprs(s) for x in walk(e)
            if isinstance(x, Load) and x.buffer is buf]


@dataclass(frozen=True)
class OffsetFold:
    """The bias of O channels as [bias[c] + off * sum(weights[c])] (int32, wrapping as the
    kernel's own sum would), then, with keep, the bias as it was (for the calls whose window is
    clipped: they add the offset themselves). `reads` names the weights' parameter, whose array
    the executor passes to apply."""
    reads: tuple
    weight_shape: tuple
    off: int
    keep: bool

    def shape(self, shape):
        return (shape[0] * (2 if self.keep else 1),)

    def apply(self, bias: np.ndarray, weights: np.ndarray) -> np.ndarray:
        w = np.broadcast_to(weights, self.weight_shape).reshape(self.weight_shape[0], -1).astype(np.int64)
        b = bias.reshape(-1).astype(np.int64)
        folded = b + self.off * w.sum(axis=1)
        out = np.concatenate([folded, b]) if self.keep else folded
        return (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _whole(nest, call):
    """(accumulator's Allocate, output loops' ranges) when call is its accumulator's whole
    reduction (no loop of more than one iteration around it); Nones otherwise."""
    def visit(s, ranges):
        if isinstance(s, For):
            return visit(s.body, loop_ranges(ranges, s))
        if isinstance(s, Allocate) and isinstance(s.body, Seq) and len(s.body.stmts) == 3:
            red, inner = s.body.stmts[1], ranges
            while isinstance(red, For) and const_value(red.extent) == 1:
                inner = loop_ranges(inner, red)
                red = red.body
            if isinstance(red, Store) and red.buffer is s.buffer and any(x is call for x in walk(red.value)):
                return s, inner
        kids = s.stmts if isinstance(s, Seq) else [s.body] if isinstance(s, Allocate) else []
        for k in kids:
            got = visit(k, ranges)
            if got[0] is not None:
                return got
        return None, None
    return visit(nest, {})


def fold_offset(func, nest):
    """(func's params, nest) with the offset of nest's one dot call folded into the bias where
    its window is whole (the call's off 0 there, and the bias from the folded half), and the
    layout {bias parameter: OffsetFold}; (params, nest, {}) where it does not apply."""
    none = func.params, nest, {}
    calls = [x for s in walk_stmts(nest) for e in own_exprs(s) for x in walk(e)
             if isinstance(x, Call) and x.fn in DOTS]
    if len(calls) != 1:
        return none
    call = calls[0]
    if call.fn == "dot_s8":
        w, rows, n, sb, off = call.args[1], Const(1, "int32"), call.args[2], Const(0, "int32"), call.args[3]
    else:
        w, rows, n, sb, off = call.args[1], call.args[2], call.args[3], call.args[5], call.args[6]
    off, sb = const_value(off), const_value(sb)
    if not off or sb is None:
        return none
    consts, layouts = func.attrs.get("constants", ()), func.attrs.get("layouts", {})
    params = {id(b): k for k, b in enumerate(func.params)}
    kw = params.get(id(w.buffer))
    if kw is None or kw not in consts or kw in layouts:
        return none
    acc, ranges = _whole(nest, call)
    if acc is None:
        return none
    # the bias: the one the requantisation adds to the accumulator, read there alone
    oc, bias = None, None
    for v in {id(x): x for x in walk(flat_index(w)) if isinstance(x, Var)}.values():
        rq = find_requant(acc.body.stmts[2].value, acc.buffer, v)
        if rq is not None and simplify(flat_index(rq.bias)).key() == v.key():
            oc, bias = v, rq.bias
    if bias is None or params.get(id(bias.buffer)) not in consts:
        return none
    kb, O = params[id(bias.buffer)], bias.buffer.shape[0]
    if kb in layouts or len(_loads_of(func.body, bias.buffer)) != 1 or len(bias.buffer.shape) != 1:
        return none
    # each channel's call reads inside its own weight row, each element once; whole when it
    # reads rows * n = the row's length
    row = int(np.prod(w.buffer.shape[1:]))
    if w.buffer.shape[0] != O or step(flat_index(w), oc) != row:
        return none
    start = simplify(flat_index(w) - oc * row)
    first, last = bounds(start, ranges), bounds(simplify(start + (rows - 1) * sb + n - 1), ranges)
    most_n = bounds(n, ranges)
    if None in (first, last, most_n) or first[0] < 0 or last[1] >= row or \
            (sb < most_n[1] and (bounds(rows, ranges) or (0, 2))[1] > 1):
        return none
    taps = simplify(rows * n)
    whole = const_value(taps)
    if whole is not None and whole != row:
        return none
    clipped = None if whole == row else Bin("!=", taps, Const(row, taps.dtype))
    new_bias = Buffer(bias.buffer.name, bias.buffer.dtype, (O * 2,) if clipped is not None else (O,),
                      bias.buffer.scope)
    shift = Select(clipped, Const(O, "int32"), Const(0, "int32")) if clipped is not None else None
    new_off = Select(clipped, Const(off, "int32"), Const(0, "int32")) if clipped is not None else Const(0, "int32")
    args = list(call.args)
    args[3 if call.fn == "dot_s8" else 6] = new_off
    new_call = Call(call.fn, args, call.dtype)

    def rewrite(x):
        if x is call or (isinstance(x, Call) and x.key() == call.key()):
            return new_call
        if isinstance(x, Load) and x.buffer is bias.buffer:
            (i,) = x.indices
            return Load(new_bias, (i + shift if shift is not None else i,))
        return None
    out = map_exprs(nest, lambda e: transform(e, rewrite))
    new_params = [new_bias if k == kb else b for k, b in enumerate(func.params)]
    return new_params, out, {kb: OffsetFold((kw,), tuple(w.buffer.shape), off, clipped is not None)}
