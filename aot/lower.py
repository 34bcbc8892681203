"""Lower a fused group to one loop-IR PrimFunc.

Each node's compute definition contributes tensor-expression stages. Stages without a
reduction are inlined into their readers. A reduction read by the output at indices that
are plain output loop variables is computed into a scalar accumulator placed inside just
those loops (the loops it depends on are moved outermost), so conv + bias + relu, softmax's
max/sum/normalise, and pooling's divide all become a single loop nest.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import te
from .errors import AotError
from .ops import get_op
from .tir.expr import Const, Load, Var, max_nan, min_nan, substitute, transform, walk
from .tir.simplify import simplify_stmt
from .tir.stmt import Allocate, Buffer, For, PrimFunc, Seq, Store, stmt_children, walk_stmts


class LowerError(AotError):
    pass


def const_param_array(v):
    """The array a constant is stored as: broadcast dims dropped (a splat is one element)."""
    a = v.const
    if a.ndim and any(st == 0 for st in a.strides):
        a = a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
    return np.ascontiguousarray(a)


def is_scalar_const(v):
    return v.is_const and const_param_array(v).size == 1


class _Lowering:
    def __init__(self, group, name):
        self.group, self.name = group, name
        self.params = {}         # tensor uid -> (Buffer, stored shape) | ("scalar", Const)
        self.param_bufs = []     # (Value, Buffer, stored array or None)
        self.const_uids = {}     # tensor uid -> index in param_bufs, for constant params
        self.packed = {}         # tensor uid -> dim whose tile lanes are stored innermost
        self.tile = None         # (axis var, outer var, lane var, tile) while lowering a tiled nest
        self.counter = itertools.count()

    # -- building stages ------------------------------------------------------
    def build(self):
        vt = {}
        for k, v in enumerate(self.group.inputs):
            t = te.placeholder(v.type.shape, v.type.dtype, f"p{k}")
            vt[id(v)] = t
            if is_scalar_const(v):
                self.params[t.uid] = ("scalar", Const(const_param_array(v).reshape(-1)[0].item(), v.type.dtype))
            else:
                stored = const_param_array(v).shape if v.is_const else v.type.shape
                buf = Buffer(f"p{k}", v.type.dtype, stored)
                self.params[t.uid] = (buf, stored)
                if v.is_const:
                    self.const_uids[t.uid] = len(self.param_bufs)
                self.param_bufs.append([v, buf, None])
        for n in self.group.nodes:
            op = get_op(n.op)
            ins = [vt[id(v)] if v is not None else None for v in n.inputs]
            outs = op.compute(n, *ins)
            for o, t in zip(n.outputs, outs):
                vt[id(o)] = t
        return [vt[id(o)] for o in self.group.outputs]

    # -- expression expansion ---------------------------------------------------
    def load_param(self, ref):
        entry = self.params[ref.tensor.uid]
        if entry[0] == "scalar":
            return entry[1]
        buf, stored = entry
        full = ref.tensor.shape
        idx = list(ref.indices)
        if ref.tensor.uid in self.packed and self.tile is not None:
            d = self.packed[ref.tensor.uid]
            _, outer, lane, tile = self.tile
            idx = idx[:d] + [outer] + idx[d + 1:] + [lane]
            stored = tuple(stored[:d]) + (stored[d] // tile,) + tuple(stored[d + 1:]) + (tile,)
        if ref.flat:
            if tuple(stored) == tuple(full):
                return Load(buf, idx[0])
            # un-flatten for a compact constant read in row-major order
            rem, multi = idx[0], []
            for s in reversed(full):
                multi.append(rem % s)
                rem = rem // s
            idx = multi[::-1]
        flat = Const(0, "int32")
        for i, s in zip(idx, stored):
            flat = flat * s + (i if s != 1 else Const(0, "int32"))
        return Load(buf, flat)

    def expand(self, expr, scalars):
        """Inline injective stages and resolve param/reduction reads."""
        def f(e):
            if not isinstance(e, te.TensorRef):
                return None
            t = e.tensor
            if t.uid in self.params:
                return self.load_param(e)
            if t.uid in scalars:
                return scalars[t.uid]
            body = t.op.body
            if isinstance(body, te.Reduce):
                return None     # left in place; attach() decides where it is computed
            idx = e.indices
            if e.flat:
                rem, multi = idx[0], []
                for s in reversed(t.shape):
                    multi.append(rem % s)
                    rem = rem // s
                idx = multi[::-1]
            inlined = substitute(body, {id(a): i for a, i in zip(t.op.axes, idx)})
            return _f16_boundary(self.expand(inlined, scalars))
        return transform(expr, f)

    @staticmethod
    def reduction_refs(expr):
        return [e for e in walk(expr) if isinstance(e, te.TensorRef) and not e.tensor.is_placeholder
                and isinstance(e.tensor.op.body, te.Reduce)]

    # -- loop nests -----------------------------------------------------------------
    def lower_output(self, t, out_buf):
        axes = list(t.op.axes) if isinstance(t.op, te.ComputeOp) else []
        value = te.TensorRef(t, axes) if isinstance(t.op.body, te.Reduce) else t.op.body
        value = self.expand(value, {})
        order = []           # reductions in dependency order with their index tuple
        seen = {}

        def collect(expr):
            for r in self.reduction_refs(expr):
                uid = r.tensor.uid
                key = tuple(i.key() for i in r.indices)
                if uid in seen:
                    if seen[uid] != key:
                        raise LowerError(f"{self.name}: reduction {r.tensor.name} is read at different indices")
                    continue
                red = r.tensor.op.body
                src = substitute(red.source, {id(a): i for a, i in zip(r.tensor.op.axes, r.indices)})
                collect(self.expand(src, {}))
                seen[uid] = key
                order.append(r)
        collect(value)

        axis_ids = {id(a): k for k, a in enumerate(axes)}
        used = set()
        for r in order:
            for d, i in enumerate(r.indices):
                if isinstance(i, Var) and id(i) in axis_ids:
                    used.add(axis_ids[id(i)])
                elif not (isinstance(i, Const) and i.value == 0 and r.tensor.shape[d] == 1):
                    raise LowerError(f"{self.name}: reduction {r.tensor.name} is read at a computed index")
        outer = [a for k, a in enumerate(axes) if k in used]
        inner = [a for k, a in enumerate(axes) if k not in used]

        tiled = self.tile_plan(t, axes, order)
        if tiled is not None:
            return self.lower_tiled(t, axes, order[0], value, out_buf, *tiled)
        accs = {r.tensor.uid: Buffer(f"{r.tensor.name}_acc{next(self.counter)}", r.dtype, (1,), "local")
                for r in order}
        scalars = {uid: Load(b, Const(0, "int32")) for uid, b in accs.items()}
        flat = Const(0, "int32")
        for a, s in zip(axes, t.shape):
            flat = flat * s + a
        body = Store(out_buf, flat, self.expand(value, scalars))
        for a in reversed(inner):
            body = For(a, 0, t.shape[axes.index(a)], body)
        # each reduction is computed before (outside) everything that reads it
        for r in reversed(order):
            body = self.reduction_at(r, accs[r.tensor.uid], scalars, body)
        for a in reversed(outer):
            body = For(a, 0, t.shape[axes.index(a)], body)
        return body

    # -- register tiling --------------------------------------------------------------
    MAX_TILE = 8

    def tile_plan(self, t, axes, order):
        """(axis index, tile) when one full-depth reduction can keep `tile` accumulators along an
        output axis its reduce bounds do not depend on (conv: output channels; dense: columns)."""
        if len(order) != 1 or not axes:
            return None
        r = order[0]
        if len(r.indices) != len(axes) or not all(
                i is a or (isinstance(i, Const) and i.value == 0 and n == 1)
                for i, a, n in zip(r.indices, axes, t.shape)):
            return None
        red = r.tensor.op.body
        mapping = {id(a): i for a, i in zip(r.tensor.op.axes, r.indices)}
        bound_vars = set()
        for ax in red.axes:
            for e in (substitute(ax.min, mapping), substitute(ax.extent, mapping)):
                bound_vars.update(id(x) for x in walk(e) if isinstance(x, Var))
        # prefer the channel axis of NC... layouts, then the innermost free axis
        candidates = [k for k in range(len(axes)) if id(axes[k]) not in bound_vars and t.shape[k] > 1]
        if not candidates:
            return None
        k = 1 if 1 in candidates and len(axes) >= 3 else candidates[-1]
        ext = t.shape[k]
        for tile in range(self.MAX_TILE, 1, -1):
            if ext % tile == 0:
                return k, tile
        return None

    def pack_constants(self, exprs, axis, tile):
        """Store constants read with the tiled axis as a plain index of one non-innermost dim
        with that dim's tile lanes innermost, so the lanes read consecutive elements."""
        uses = {}
        for e in exprs:
            for x in walk(self.expand_injective(e)):
                if isinstance(x, te.TensorRef) and x.tensor.uid in self.const_uids:
                    uses.setdefault(x.tensor.uid, []).append(x)
        for uid, refs in uses.items():
            dims = set()
            ok = not any(r.flat for r in refs)
            for r in refs:
                hit = [d for d, i in enumerate(r.indices) if i is axis]
                other = any(any(y is axis for y in walk(i)) for d, i in enumerate(r.indices) if d not in hit)
                if len(hit) != 1 or other:
                    ok = False
                dims.update(hit)
            if not ok or len(dims) != 1:
                continue
            d = dims.pop()
            entry = self.param_bufs[self.const_uids[uid]]
            v, buf = entry[0], entry[1]
            arr = const_param_array(v)
            if d == arr.ndim - 1 or arr.shape[d] != v.type.shape[d] or arr.shape[d] % tile:
                continue        # already contiguous, broadcast along it, or not a whole number of tiles
            packed = np.moveaxis(arr.reshape(arr.shape[:d] + (arr.shape[d] // tile, tile) + arr.shape[d + 1:]), d + 1, -1)
            entry[2] = np.ascontiguousarray(packed)
            entry[1] = Buffer(buf.name, buf.dtype, packed.shape)
            self.params[uid] = (entry[1], arr.shape)
            self.packed[uid] = d

    def expand_injective(self, expr):
        """expr with injective stages inlined (constants still as TensorRefs)."""
        def f(e):
            if isinstance(e, te.TensorRef) and not e.tensor.is_placeholder and not isinstance(e.tensor.op.body, te.Reduce) \
                    and not e.flat:
                return self.expand_injective(substitute(e.tensor.op.body, {id(a): i for a, i in zip(e.tensor.op.axes, e.indices)}))
            return None
        return transform(expr, f)

    def lanes_vectorize(self, red, mapping, t, k, before_pack):
        """Keep the lane loops as loops (C compilers vectorize them) when the lanes read
        consecutive weights and the reduction is one channel axis (pointwise conv, dense); else
        unroll them into independent scalar accumulators, which C compilers keep in registers."""
        from .tir.simplify import const_value, simplify
        contiguous = len(self.packed) > before_pack or k == len(t.shape) - 1
        rest = [simplify(substitute(ax.extent, mapping)) for ax in red.axes[1:]]
        return contiguous and all(const_value(e) == 1 for e in rest)

    def lower_tiled(self, t, axes, ref, value, out_buf, k, tile):
        from .tir.schedule import unroll
        red = ref.tensor.op.body
        acc = Buffer(f"{ref.tensor.name}_acc{next(self.counter)}", red.dtype, (tile,), "local")
        outer_v, lane = Var(axes[k].name + "_o"), Var(axes[k].name + "_t")
        pos = outer_v * tile + lane

        def at_lane(e):
            return substitute(e, {id(axes[k]): pos})
        zero_lane = Load(acc, lane)
        scalars = {ref.tensor.uid: zero_lane}
        mapping = {id(a): i for a, i in zip(ref.tensor.op.axes, ref.indices)}
        raw_src = substitute(red.source, mapping)
        before_pack = len(self.packed)
        self.pack_constants([raw_src, value], axes[k], tile)
        self.tile = (axes[k], outer_v, lane, tile)
        src = at_lane(self.expand(raw_src, scalars))
        comb = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b,
                "max": max_nan, "min": min_nan}[red.combiner](Load(acc, lane), src)
        lanes = lambda body: For(lane, 0, tile, body, "vectorize")  # noqa: E731
        loop = lanes(Store(acc, lane, comb))
        for ax in reversed(red.axes):
            v = Var(ax.var.name)
            loop = For(v, substitute(ax.min, mapping), substitute(ax.extent, mapping), _rename(loop, ax.var, v))
        flat = Const(0, "int32")
        for a, s in zip(axes, t.shape):
            flat = flat * s + a
        epi = lanes(Store(out_buf, at_lane(flat), at_lane(self.expand(value, scalars))))
        self.tile = None
        body = Allocate(acc, Seq([lanes(Store(acc, lane, red.init)), loop, epi]))
        if not self.lanes_vectorize(red, mapping, t, k, before_pack):
            body = unroll(body, lane)
        for j in reversed(range(len(axes))):
            if j == k:
                body = For(outer_v, 0, t.shape[k] // tile, body)
            else:
                body = For(axes[j], 0, t.shape[j], body)
        return body

    def reduction_at(self, ref, acc, scalars, rest):
        red = ref.tensor.op.body
        mapping = {id(a): i for a, i in zip(ref.tensor.op.axes, ref.indices)}
        zero = Const(0, "int32")
        src = self.expand(substitute(red.source, mapping), scalars)
        cur = Load(acc, zero)
        # max/min propagate NaN (numpy, the ONNX reference): `a > b ? a : b` would keep or
        # drop a NaN depending on where it falls in the loop order
        comb = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b,
                "max": max_nan, "min": min_nan}[red.combiner](cur, src)
        loop = Store(acc, zero, comb)
        for ax in reversed(red.axes):
            v = Var(ax.var.name)
            loop = For(v, substitute(ax.min, mapping), substitute(ax.extent, mapping),
                       _rename(loop, ax.var, v))
        return Allocate(acc, Seq([Store(acc, zero, red.init), loop, rest]))


def _f16_boundary(e):
    """float16 values are computed in float; each op's result is rounded to half precision,
    as a float16 runtime stores it, so fused groups give the same numbers as op-by-op ones."""
    from .tir.expr import Call
    fn = {"float16": "f16round", "bfloat16": "bf16round"}.get(e.dtype)
    if fn and not (isinstance(e, Call) and e.fn == fn) and not isinstance(e, Const):
        return Call(fn, [e], e.dtype)
    return e


def _rename(stmt, old, new):
    from .tir.stmt import map_stmt
    return map_stmt(stmt, fexpr=lambda e: substitute(e, {id(old): new}))


def lower_group(group, name) -> tuple:
    """(PrimFunc, [(input Value, stored array or None)] in parameter order) for one fused group.

    A stored array is given for constants the kernel reads in a packed layout."""
    lw = _Lowering(group, name)
    out_tensors = lw.build()
    out_bufs = [Buffer(f"T_{t.name}" if len(out_tensors) == 1 else f"T_{t.name}_{k}", t.dtype, t.shape)
                for k, t in enumerate(out_tensors)]
    nests = []
    for t, b in zip(out_tensors, out_bufs):
        if t.is_placeholder:
            raise LowerError(f"{name}: output is an unmodified input")
        nests.append(lw.lower_output(t, b))
    body = simplify_stmt(Seq(nests)) or Seq([])
    params = [(v, arr) for v, _, arr in lw.param_bufs]
    func = PrimFunc(name, [b for _, b, _ in lw.param_bufs] + out_bufs, body, len(lw.param_bufs))
    return default_schedule(func), params


def default_schedule(func: PrimFunc) -> PrimFunc:
    """Unroll short constant innermost loops (3x3 taps without padding, small channel counts)."""
    from .tir.schedule import unroll
    from .tir.simplify import const_value
    from .tir.stmt import For as _For

    targets = []

    def visit(s):
        if isinstance(s, _For):
            if not any(isinstance(x, _For) for x in walk_stmts(s.body)):
                if (s.kind == "serial" and const_value(s.extent) is not None and const_value(s.min) is not None
                        and const_value(s.extent) <= 4 and all(v is not s.var for v in targets)):
                    targets.append(s.var)
            else:
                visit(s.body)
        else:
            for c in stmt_children(s):
                visit(c)
    visit(func.body)
    if not targets:
        return func
    body = func.body
    for v in targets:
        body = unroll(body, v)
    body = simplify_stmt(body) or Seq([])
    return PrimFunc(func.name, func.params, body, func.num_inputs, func.attrs)

