"""Shapes of lowered loop nests that schedule rules recognise, shared by the CPU and GPU rules."""
from __future__ import annotations

from ..tir.stmt import Allocate, For, Seq, Store


def nests(body):
    return list(body.stmts) if isinstance(body, Seq) else [body]


def accumulation(nest):
    """(output loops, reduce loops, accumulator) when nest is a perfect nest of output loops
    around one scalar accumulator: init; reduce loops; store the output. Else None."""
    loops, x = [], nest
    while isinstance(x, For):
        loops.append(x)
        x = x.body
    if not loops or not isinstance(x, Allocate) or x.buffer.size != 1 or not isinstance(x.body, Seq):
        return None
    acc, parts = x.buffer, x.body.stmts
    if len(parts) != 3 or not all(isinstance(p, (Store, For)) for p in parts) or \
            not isinstance(parts[0], Store) or parts[0].buffer is not acc or \
            not isinstance(parts[2], Store) or parts[2].buffer is acc:
        return None
    red, y = [], parts[1]
    while isinstance(y, For):
        red.append(y)
        y = y.body
    if not isinstance(y, Store) or y.buffer is not acc:
        return None
    return loops, red, acc


def staged_compute(nest):
    """(the accumulation nest, a function putting its replacement back in place): nest itself,
    or, in a kernel staged to write over its input (aot/schedules/inplace_conv.py: loops around
    [compute into the scratch, copy back]), its compute half; (None, None) for other shapes."""
    outer, x = [], nest
    while isinstance(x, For) and not accumulation(x):
        outer.append(x)
        x = x.body
    if not outer:
        return nest, lambda new: new
    if not (isinstance(x, Seq) and len(x.stmts) == 2 and accumulation(x.stmts[0])):
        return None, None
    copy = x.stmts[1]

    def put_back(new):
        s = Seq([new, copy])
        for lp in reversed(outer):
            s = For(lp.var, lp.min, lp.extent, s, lp.kind)
        return s
    return x.stmts[0], put_back


def map_staged_parts(nest, fn):
    """A staged kernel (loops around a Seq of parts) with fn(part, loops) in place of each part
    fn rewrites (fn returns None to keep one); None when nest is not that shape or no part is
    rewritten."""
    loops, x = [], nest
    while isinstance(x, For):
        loops.append(x)
        x = x.body
    if not loops or not isinstance(x, Seq):
        return None
    parts = [fn(p, loops) for p in x.stmts]
    if all(p is None for p in parts):
        return None
    x = Seq([p if p is not None else q for p, q in zip(parts, x.stmts)])
    for lp in reversed(loops):
        x = lp.with_body(x)
    return x
