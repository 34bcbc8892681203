"""The input offset folded into the bias at compile time (Helium). A dot call sums
(x + off) * w; the off * sum(w) part depends only on the weights a channel's call reads, so
where every call of a nest reads the same weights for its channel (no window clipped at a
border: pointwise convs, dense layers, unpadded convs) the schedule adds it to the channel's
bias constant (the OffsetFold layout, which the executor applies to the array it links) and
passes off = 0, which lets the Helium bodies skip the weight sums (one vaddva per weight vector,
and the scalar registers holding them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tir.expr import Call, Const, Load, Var, substitute, transform, walk
from ..tir.intrin.arm import _step, flat_index
from ..tir.simplify import const_value, simplify
from ..tir.stmt import Allocate, Seq, Store, map_exprs, own_exprs, walk_stmts
from .arm_pairs import _find_requant

DOTS = ("dot_s8", "dot_s8_rows")


@dataclass(frozen=True)
class OffsetFold:
    """bias[c] + off * sum over r < rows, k < n of weights[base + c * sw + r * sb + k] (int32,
    wrapping as the kernel's own sum would). `reads` names the weights' parameter, whose array
    the executor passes to apply."""
    reads: tuple
    weight_shape: tuple
    off: int
    base: int
    sw: int
    sb: int
    rows: int
    n: int

    def shape(self, shape):
        return tuple(shape)

    def apply(self, bias: np.ndarray, weights: np.ndarray) -> np.ndarray:
        w = np.broadcast_to(weights, self.weight_shape).reshape(-1).astype(np.int64)
        c = np.arange(bias.size).reshape(-1, 1, 1)
        idx = self.base + c * self.sw + np.arange(self.rows).reshape(1, -1, 1) * self.sb + \
            np.arange(self.n).reshape(1, 1, -1)
        folded = bias.reshape(-1).astype(np.int64) + self.off * w[idx].sum(axis=(1, 2))
        return (folded & 0xFFFFFFFF).astype(np.uint32).view(np.int32).reshape(bias.shape)


def _loads_of(stmt, buf):
    return [x for s in walk_stmts(stmt) for e in own_exprs(s) for x in walk(e)
            if isinstance(x, Load) and x.buffer is buf]


def fold_offset(func, nest):
    """(nest with its one dot call's offset 0, {bias parameter: OffsetFold}) when the fold
    applies; (nest, {}) otherwise."""
    calls = [x for s in walk_stmts(nest) for e in own_exprs(s) for x in walk(e)
             if isinstance(x, Call) and x.fn in DOTS]
    if len(calls) != 1:
        return nest, {}
    call = calls[0]
    if call.fn == "dot_s8":
        w, rows, n, sb, off = call.args[1], 1, call.args[2], 0, call.args[3]
    else:
        w, rows, n, sb, off = call.args[1], call.args[2], call.args[3], call.args[5], call.args[6]
    rows, n, sb, off = (const_value(x) if not isinstance(x, int) else x for x in (rows, n, sb, off))
    if None in (rows, n, sb, off) or off == 0 or rows < 1 or n < 1:
        return nest, {}
    consts, layouts = func.attrs.get("constants", ()), func.attrs.get("layouts", {})
    params = {id(b): k for k, b in enumerate(func.params)}
    kw = params.get(id(w.buffer))
    if kw is None or kw not in consts or kw in layouts:
        return nest, {}
    f = simplify(flat_index(w))
    free = {id(v): v for v in walk(f) if isinstance(v, Var)}
    if len(free) != 1:                      # the channel alone moves the weights
        return nest, {}
    oc = next(iter(free.values()))
    sw = _step(f, oc)
    base = const_value(simplify(substitute(f, {id(oc): Const(0, oc.dtype)})))
    if not sw or sw < 0 or base is None:
        return nest, {}
    # the bias: the one the requantisation adds to the accumulator, read there alone
    bias = None
    for x in walk_stmts(nest):
        if isinstance(x, Allocate) and isinstance(x.body, Seq) and len(x.body.stmts) == 3 and \
                isinstance(x.body.stmts[2], Store):
            _, parts = _find_requant(x.body.stmts[2].value, x.buffer, oc)
            if parts is not None:
                bias = parts[0]
    if bias is None or simplify(flat_index(bias)).key() != oc.key() or params.get(id(bias.buffer)) not in consts:
        return nest, {}
    bias = bias.buffer
    kb = params[id(bias)]
    if kb in layouts or len(_loads_of(func.body, bias)) != 1 or len(bias.shape) != 1:
        return nest, {}
    n_ch = bias.shape[0]
    w_size = int(np.prod(w.buffer.shape))
    if base + (n_ch - 1) * sw + (rows - 1) * sb + n - 1 >= w_size:
        return nest, {}
    fold = OffsetFold((kw,), tuple(w.buffer.shape), off, base, sw, sb, rows, n)
    args = list(call.args)
    args[3 if call.fn == "dot_s8" else 6] = Const(0, "int32")
    new = Call(call.fn, args, call.dtype)
    key = call.key()
    out = map_exprs(nest, lambda e: _replace(e, key, new))
    return out, {kb: fold}


def _replace(e, key, new):
    return transform(e, lambda x: new if isinstance(x, Call) and x.key() == key else None)
