"""Several output channels per micro-kernel call (Cortex-M): after tensorize, a conv or dense
whose innermost output loop runs over channels makes, for each channel, one dot_s8 or
dot_s8_rows call that reads the same input run with the next weight row. Where the channel's
epilogue is, or starts with, TFLite's requantisation, four channels go to one dot_s8x4q call
(dot_s8x4qt with one multiplier and shift for all: per tensor), which also requantises them
(on Helium as one vector) and returns the four int8 results packed in 32 bits; the rest of the
epilogue (a fused residual add) then runs on each byte. Other channels go two to a dot_s8x2
call, which returns both sums packed in 64 bits, each then requantised as before. Either call
loads and widens each input vector or word once for all its weight rows. An odd channel left
over keeps its single call.
"""
from __future__ import annotations

from ..tir.expr import Bin, Call, Cast, Const, Load, Var, substitute, transform, walk
from ..tir.intrin.arm import step, flat_index
from ..tir.intrin.arm_add import add_call
from ..tir.intrin.requant import find_requant
from ..tir.simplify import const_value
from ..tir.simplify import simplify
from ..tir.stmt import Allocate, Buffer, Evaluate, For, Seq, Store, map_exprs
from .nests import map_staged_parts

PAIR = "dot_s8x2"
QUAD = "dot_s8x4q"
QUAD_T = "dot_s8x4qt"      # one multiplier and shift for every channel
SINGLE = ("dot_s8", "dot_s8_rows")
RUN, RUN_T = "dot_s8xq", "dot_s8xqt"     # Helium: a run of quads stored through the output pointer


def _subst(s, mapping):
    return map_exprs(s, lambda e: substitute(e, mapping))


def _quads(oc, acc, store, ptrs, args, sw, rq, helium=False):
    """The channel loop oc (acc = dot(ptrs, args); store: out = f(requant(acc)), requant(acc) being
    rq.node) as a loop of dot_s8x4q calls, four channels each, then f of each byte; and the first
    channel it leaves over. With helium: the requantised channels stored by one dot_s8xq call
    when f is nothing, they are consecutive in the output and the window is one row (pointwise
    convs, dense: aot/tir/intrin/arm_quads.py; a k x k window's quads unrolled by the CPU rules
    run fewer instructions on ResNet-8), and
    when f is an int8 ADD, that of the run of them as one add_s8q call (_vector_add)."""
    rows, n, sa, sb, off = args
    node = rq.node
    bias, mult, shift, zp, lo, hi = rq.parts()
    n_out = const_value(oc.extent)
    v = Var(oc.var.name + "_quad", oc.var.dtype)
    at = {id(oc.var): v * 4}
    packed = Buffer(acc.name + "_quad", "uint32", (1,), "local")
    if isinstance(mult, int):
        fn, scale = QUAD_T, [Const(mult, "int32"), Const(shift, "int32")]
    else:
        fn, scale = QUAD, [substitute(mult, at), substitute(shift, at)]
    call = Call(fn, [substitute(ptrs[0], at), substitute(ptrs[1], at), rows, n, sa, sb, Const(sw, "int32"), off,
                     substitute(bias, at), *scale, Const(zp, "int32"), Const(lo, "int32"), Const(hi, "int32")],
                "uint32")
    got = Load(packed, (Const(0, "int32"),))
    first = n_out - n_out % 4
    at0 = {id(oc.var): Const(0, oc.var.dtype)}

    def run_into(out):      # the quads as one dot_s8xq call storing the run at out
        return Evaluate(Call(RUN if fn == QUAD else RUN_T,
                             [out, substitute(ptrs[0], at0), substitute(ptrs[1], at0), Const(first, "int32"), rows, n,
                              sa, sb, Const(sw, "int32"), off, substitute(bias, at0),
                              *(scale if fn == QUAD_T else [substitute(mult, at0), substitute(shift, at0)]),
                              Const(zp, "int32"), Const(lo, "int32"), Const(hi, "int32")], "int32"))
    one_row = helium and const_value(rows) == 1
    if one_row and node is store.value and step(store.index, oc.var) == 1:
        return run_into(Load(store.buffer, (simplify(substitute(store.index, at0)),))), first
    if helium and node is not store.value:
        fused = _vector_add(oc, v, store, node, call, packed, got, first, run_into if one_row else None)
        if fused is not None:
            return fused, first
    outs = []
    for j in range(4):
        byte = Cast("int8", Bin(">>", got, Const(8 * j, "uint32")) if j else got)
        value = transform(store.value, lambda e, b=byte: b if e.key() == node.key() else None)
        at_j = {id(oc.var): v * 4 + j}
        outs.append(Store(store.buffer, substitute(store.index, at_j), substitute(value, at_j)))
    body = Allocate(packed, Seq([Store(packed, Const(0, "int32"), call)] + outs))
    return For(v, 0, n_out // 4, body), first


def _vector_add(oc, v, store, node, call, packed, got, first, run_into=None):
    """The quads' channels requantised into a local run of `first` bytes, then the residual add
    over the run as one add_s8q call (Helium: four lanes a step instead of ~40 scalar instructions
    a byte); None when the rest of the epilogue is not TFLite's int8 ADD of the run and one
    consecutive input (aot/tir/intrin/arm_add.py)."""
    run = Buffer(store.buffer.name + "_run", "int8", (first,), "local")
    c = Var(oc.var.name + "_run", oc.var.dtype)
    rest = transform(store.value, lambda e: Load(run, (c,)) if e.key() == node.key() else None)
    rest = substitute(rest, {id(oc.var): c})
    evaluate, _ = add_call(For(c, 0, first, Store(store.buffer, substitute(store.index, {id(oc.var): c}), rest)))
    if evaluate is None:
        return None
    if run_into is not None:         # (a one-row window: the quads' run stored by one dot_s8xq call)
        return Allocate(run, Seq([run_into(Load(run, (Const(0, "int32"),))), evaluate]))
    fill = [Store(run, v * 4 + j, Cast("int8", Bin(">>", got, Const(8 * j, "uint32")) if j else got))
            for j in range(4)]
    quads = For(v, 0, first // 4, Allocate(packed, Seq([Store(packed, Const(0, "int32"), call)] + fill)))
    return Allocate(run, Seq([quads, evaluate]))


def pair_outputs(nest, quads=False, helium=False):
    """nest (output loops around one accumulator whose reduction is one dot_s8/dot_s8_rows call)
    with its channel loop on dot_s8x4q calls (quads, and a per-channel requantisation), then
    dot_s8x2 calls; None when it is not that shape."""
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
    if step(flat_index(args[0]), oc.var) != 0 or any(v is oc.var for a in args[2:] for v in walk(a)):
        return None
    sw = step(flat_index(args[1]), oc.var)
    if not sw or sw < 0:
        return None
    if call.fn == "dot_s8":
        rows, n, sa, sb, off = Const(1, "int32"), args[2], Const(0, "int32"), Const(0, "int32"), args[3]
    else:
        rows, n, sa, sb, off = args[2:7]
    rq = find_requant(store.value, acc, oc.var) if quads and n_out >= 4 else None
    head, first = [], 0
    if rq:
        q, first = _quads(oc, acc, store, args[:2], (rows, n, sa, sb, off), sw, rq, helium)
        head = [q]
    v = Var(oc.var.name + "_pair", oc.var.dtype)
    even, odd = {id(oc.var): v * 2 + first}, {id(oc.var): v * 2 + first + 1}
    pair = Buffer(acc.name + "_pair", "uint64", (1,), "local")
    packed = Call(PAIR, [substitute(args[0], even), substitute(args[1], even), rows, n, sa, sb,
                         Const(sw, "int32"), off], "uint64")
    got = Load(pair, (Const(0, "int32"),))
    lo = Cast("int32", got)
    hi = Cast("int32", Bin(">>", got, Const(32, "uint64")))
    body = Allocate(pair, Seq([Store(pair, Const(0, "int32"), packed),
                               Allocate(acc, Seq([Store(acc, init.index, lo), _subst(store, even),
                                                  Store(acc, init.index, hi), _subst(store, odd)]))]))
    parts = head + ([For(v, 0, (n_out - first) // 2, body)] if n_out - first >= 2 else [])
    if (n_out - first) % 2:
        parts.append(oc.with_body(x, min=Const(n_out - 1, oc.min.dtype), extent=Const(1, oc.extent.dtype)))
    out = Seq(parts) if len(parts) > 1 else parts[0]
    for lp in reversed(loops[:-1]):
        out = lp.with_body(out)
    return out


def pair_channels(nest, quads=False, helium=False):
    """nest with every output-channel loop of micro-kernel calls paired (pair_outputs), a staged
    kernel's parts (loops around a Seq) each in turn; None when nothing pairs."""
    got = pair_outputs(nest, quads, helium)
    if got is not None:
        return got
    return map_staged_parts(nest, lambda part, _: pair_channels(part, quads, helium))
