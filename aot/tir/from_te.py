"""te.create_prim_func: tensor expressions as a TensorIR PrimFunc, one block per computed tensor
(as TVM makes it): each stage's loops over its axes (then its reduce axes), a block named after
the tensor whose iterators are bound to those loops, a reduction's first value as the block's
init. Placeholders and the tensors listed become parameters; tensors computed on the way (a
padding stage) are the root block's own buffers. aot.tir.Schedule schedules the result,
aot.build builds it (aot/tir/blocks.py erases the blocks first).
"""
from __future__ import annotations

from ..errors import AotError
from .expr import Load, Var, substitute, transform, walk
from .flatten import flat_index
from .simplify import simplify
from .stmt import Allocate, Block, Buffer, For, IterVar, PrimFunc, Seq, Store


def _te():
    from ..te import tensor as te
    return te


def _stages(outputs):
    """Computed tensors in producer-first order, and the placeholders they read in first-read order."""
    te = _te()
    order, seen, placeholders = [], set(), []

    def visit(t):
        if t.uid in seen:
            return
        seen.add(t.uid)
        if t.is_placeholder:
            placeholders.append(t)
            return
        for e in walk(t.op.body if not isinstance(t.op.body, te.Reduce) else t.op.body.source):
            if isinstance(e, te.TensorRef):
                visit(e.tensor)
        order.append(t)
    for t in outputs:
        visit(t)
    return order, placeholders


def create_prim_func(ops, index_dtype_override=None):
    """te.create_prim_func([A, B]): the arguments are the function's parameters in order
    (placeholders and computed tensors)."""
    te = _te()
    args = list(ops)
    for t in args:
        if not isinstance(t, te.Tensor):
            raise AotError(f"create_prim_func takes te tensors (placeholders and computed ones), "
                           f"not {type(t).__name__}")
    outputs = [t for t in args if not t.is_placeholder]
    if not outputs:
        raise AotError("create_prim_func: no computed tensor among the arguments")
    stages, reads = _stages(outputs)
    missing = [t.name for t in reads if not any(t is a for a in args)]
    if missing:
        raise AotError(f"create_prim_func: the arguments leave out {', '.join(missing)}, which the computation reads")
    bufs = {t.uid: Buffer(t.name, t.dtype, t.shape) for t in args}
    inner = [t for t in stages if t.uid not in bufs]
    for t in inner:
        bufs[t.uid] = Buffer(t.name, t.dtype, t.shape)     # the root block's own buffer
    nests = [_stage(t, bufs, te) for t in stages]
    body = Seq(nests) if len(nests) > 1 else nests[0]
    for t in reversed(inner):
        body = Allocate(bufs[t.uid], body)
    params = [bufs[t.uid] for t in args]
    n_in = sum(1 for t in args if t.is_placeholder)
    if [t.is_placeholder for t in args] != [True] * n_in + [False] * (len(args) - n_in):
        raise AotError("create_prim_func: list the placeholders first, then the computed tensors")
    return PrimFunc("main", params, body, n_in, {"func_attr": {"tir.noalias": True}})


def _stage(t, bufs, te):
    axes = list(t.op.axis)
    axis_vars = [getattr(a, "var", a) for a in axes]
    body = t.op.body
    red = body if isinstance(body, te.Reduce) else None
    loops, ivs, values, mapping = [], [], [], {}
    for v, n in zip(axis_vars, t.shape):
        lv, bv = Var(v.name), Var(f"v_{v.name}")
        loops.append((lv, 0, n))
        ivs.append(IterVar(bv, n, "S"))
        values.append(lv)
        mapping[id(v)] = bv
    if red is not None:
        for ax in red.axes:
            lv, bv = Var(ax.var.name), Var(f"v_{ax.var.name}")
            mn, ext = substitute(ax.min, mapping), substitute(ax.extent, mapping)
            if any(isinstance(x, Var) and any(x is b.var for b in ivs) for e in (mn, ext) for x in walk(e)):
                raise AotError(f"create_prim_func {t.name}: reduce axis {ax.var.name} has bounds that depend on "
                               "the output's axes; a block's domain is fixed")
            loops.append((lv, mn, ext))
            ivs.append(IterVar(bv, ext, "R", mn))
            values.append(lv + mn if not _is_zero(mn) else lv)
            mapping[id(ax.var)] = bv

    def expr(e):
        def f(x):
            if isinstance(x, te.TensorRef):
                b = bufs[x.tensor.uid]
                idx = [substitute(i, mapping) for i in x.indices]
                return Load(b, tuple(idx) if len(idx) > 1 else idx[0])
            return None
        return transform(substitute(e, mapping), f)

    out = bufs[t.uid]
    index = simplify(flat_index([iv.var for iv in ivs[:len(axis_vars)]], t.shape))
    if red is None:
        for e in walk(body):
            if isinstance(e, te.Reduce):
                raise AotError(f"create_prim_func {t.name}: a reduction inside an expression (TVM's blocks take "
                               "a reduction only as the whole body)")
        stmt, init = Store(out, index, expr(body)), None
    else:
        cur = Load(out, index)
        stmt = Store(out, index, te.combine(red.combiner)(cur, expr(red.source)))
        init = Store(out, index, red.init)
    nest = Block(t.name, ivs, values, stmt, init)
    for lv, mn, ext in reversed(loops):
        nest = For(lv, 0, ext, nest)
    return nest


def _is_zero(e):
    return getattr(e, "value", e) == 0

