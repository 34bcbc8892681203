"""Two output channels per micro-kernel call (Cortex-M): after tensorize, a conv or dense
whose innermost output loop runs over channels makes, for each channel, one dot_s8 or
dot_s8_rows call that reads the same input run with the next weight row. Pairing the channels
lets one call (dot_s8x2, aot/tir/intrin/arm.py) load and widen each input vector or word once
for two weight rows, and halves the calls; it returns both sums packed in 64 bits, each then
requantised as before. An odd channel count keeps one single call for the last channel.
"""
from __future__ import annotations

from ..tir.expr import Bin, Call, Cast, Const, Load, Var, substitute, walk
from ..tir.intrin.arm import _step, flat_index
from ..tir.simplify import const_value
from ..tir.stmt import Allocate, Buffer, For, Seq, Store, map_exprs

PAIR = "dot_s8x2"
SINGLE = ("dot_s8", "dot_s8_rows")


def _subst(s, mapping):
    return map_exprs(s, lambda e: substitute(e, mapping))


def pair_outputs(nest):
    """nest (output loops around one accumulator whose reduction is one dot_s8/dot_s8_rows call)
    with its channel loop paired onto dot_s8x2 calls; None when it is not that shape."""
    loops, x = [], nest
    while isinstance(x, For):
        loops.append(x)
        x = x.body
    if not loops or not isinstance(x, Allocate) or not isinstance(x.body, Seq) or len(x.body.stmts) != 3:
        return None
    acc, (init, red, store) = x.buffer, x.body.stmts
    fixed = {}
    while isinstance(red, For):              # loops of one iteration left around the call
        if const_value(red.extent) != 1:
            return None
        fixed[id(red.var)] = red.min
        red = red.body
    if not (isinstance(red, Store) and red.buffer is acc and isinstance(red.value, Bin) and red.value.op == "+"
            and isinstance(red.value.b, Call) and red.value.b.fn in SINGLE):
        return None
    call = red.value.b
    args = [substitute(a, fixed) for a in call.args]
    oc = loops[-1]
    n_out = const_value(oc.extent)
    if n_out is None or n_out < 2 or const_value(oc.min) != 0 or oc.kind != "serial":
        return None
    if _step(flat_index(args[0]), oc.var) != 0 or any(v is oc.var for a in args[2:] for v in walk(a)):
        return None
    sw = _step(flat_index(args[1]), oc.var)
    if not sw or sw < 0:
        return None
    if call.fn == "dot_s8":
        rows, n, sa, sb, off = Const(1, "int32"), args[2], Const(0, "int32"), Const(0, "int32"), args[3]
    else:
        rows, n, sa, sb, off = args[2:7]
    v = Var(oc.var.name + "_pair", oc.var.dtype)
    even, odd = {id(oc.var): v * 2}, {id(oc.var): v * 2 + 1}
    pair = Buffer(acc.name + "_pair", "uint64", (1,), "local")
    packed = Call(PAIR, [substitute(args[0], even), substitute(args[1], even), rows, n, sa, sb,
                         Const(sw, "int32"), off], "uint64")
    got = Load(pair, (Const(0, "int32"),))
    lo = Cast("int32", got)
    hi = Cast("int32", Bin(">>", got, Const(32, "uint64")))
    body = Allocate(pair, Seq([Store(pair, Const(0, "int32"), packed),
                               Allocate(acc, Seq([Store(acc, init.index, lo), _subst(store, even),
                                                  Store(acc, init.index, hi), _subst(store, odd)]))]))
    parts = [For(v, 0, n_out // 2, body)]
    if n_out % 2:
        parts.append(oc.with_body(x, min=Const(n_out - 1, oc.min.dtype), extent=Const(1, oc.extent.dtype)))
    out = Seq(parts) if len(parts) > 1 else parts[0]
    for lp in reversed(loops[:-1]):
        out = lp.with_body(out)
    return out


def pair_channels(nest):
    """nest with every output-channel loop of micro-kernel calls paired (pair_outputs), a staged
    kernel's parts (loops around a Seq) each in turn; None when nothing pairs."""
    got = pair_outputs(nest)
    if got is not None:
        return got
    loops, x = [], nest
    while isinstance(x, For):
        loops.append(x)
        x = x.body
    if not loops or not isinstance(x, Seq):
        return None
    parts = [pair_channels(p) for p in x.stmts]
    if all(p is None for p in parts):
        return None
    x = Seq([p if p is not None else q for p, q in zip(parts, x.stmts)])
    for lp in reversed(loops):
        x = lp.with_body(x)
    return x
