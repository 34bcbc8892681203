"""Data-dependent indexing: gathers, scatters, one-hot, triangular masks, tiling, space/depth moves."""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Cast, Const, all_of, and_, eq, ge, le, lt, select
from .registry import ALL, ONNX_DTYPES, AxisOp, Op, Pattern, norm_axis, register

I32 = "int32"


def _idx(v, n):
    """An index tensor element as int32, negative values counted from the end."""
    k = Cast(I32, v) if v.dtype != I32 else v
    return select(lt(k, Const(0, I32)), k + n, k)


def _np_idx(a, n):
    a = a.astype(np.int64)
    return np.where(a < 0, a + n, a)


@register
class GatherElements(AxisOp):
    name = "GatherElements"
    pattern = Pattern.INJECTIVE
    min_inputs = 2

    def infer(self, node):
        x, ind = node.inputs[0].type, node.inputs[1].type
        if len(ind.shape) != len(x.shape):
            raise OpError(node, "indices must have the data's rank")
        return [TensorType(ind.shape, x.dtype)]

    def reference(self, node, x, ind):
        a = node.attrs["axis"]
        return [np.take_along_axis(x, _np_idx(ind, x.shape[a]), axis=a)]

    def compute(self, node, x, ind):
        a = node.attrs["axis"]

        def body(*i):
            src = list(i)
            src[a] = _idx(ind(*i), x.shape[a])
            return x(*src)
        return [te.compute(ind.shape, body, "gather_elements")]


@register
class GatherND(Op):
    name = "GatherND"
    pattern = Pattern.INJECTIVE
    min_inputs = 2

    def infer(self, node):
        x, ind = node.inputs[0].type, node.inputs[1].type
        b, k = node.attrs.get("batch_dims", 0), ind.shape[-1]
        if b + k > len(x.shape):
            raise OpError(node, "indices address more dimensions than the data has")
        return [TensorType(ind.shape[:-1] + x.shape[b + k:], x.dtype)]

    def reference(self, node, x, ind):
        b = node.attrs.get("batch_dims", 0)
        out = np.zeros(node.outputs[0].type.shape, x.dtype)
        for pos in np.ndindex(*ind.shape[:-1]):
            key = tuple(int(v) if v >= 0 else int(v) + x.shape[b + j] for j, v in enumerate(ind[pos]))
            out[pos] = x[pos[:b] + key]
        return [out]

    def compute(self, node, x, ind):
        b, q = node.attrs.get("batch_dims", 0), len(ind.shape)
        k = ind.shape[-1]

        def body(*o):
            lead = list(o[:q - 1])
            key = [_idx(ind(*lead, Const(j, I32)), x.shape[b + j]) for j in range(k)]
            return x(*o[:b], *key, *o[q - 1:])
        return [te.compute(node.outputs[0].type.shape, body, "gather_nd")]


_COMBINE = {"add": ("sum", lambda a, b: a + b), "mul": ("prod", lambda a, b: a * b),
            "max": ("max", None), "min": ("min", None)}


def _combine(red, a, b):
    from ..tir.expr import max_, min_
    return {"sum": lambda: a + b, "prod": lambda: a * b, "max": lambda: max_(a, b), "min": lambda: min_(a, b)}[red]()


@register
class ScatterElements(AxisOp):
    names = ("ScatterElements", "Scatter")
    pattern = Pattern.OPAQUE
    min_inputs = 3

    def infer(self, node):
        x = node.inputs[0].type
        if node.inputs[1].type.shape != node.inputs[2].type.shape:
            raise OpError(node, "indices and updates must have the same shape")
        return [TensorType(x.shape, x.dtype)]

    def reference(self, node, x, ind, upd):
        a, red = node.attrs["axis"], node.attrs.get("reduction", "none")
        out = x.copy()
        for pos in np.ndindex(*ind.shape):
            tgt = list(pos)
            tgt[a] = int(_np_idx(ind[pos], x.shape[a]))
            tgt = tuple(tgt)
            out[tgt] = {"none": lambda o, u: u, "add": np.add, "mul": np.multiply, "max": np.maximum,
                        "min": np.minimum}[red](out[tgt], upd[pos])
        return [out]

    def compute(self, node, x, ind, upd):
        a, red = node.attrs["axis"], node.attrs.get("reduction", "none")
        n_upd = upd.shape[a]

        def hits(p, r):
            """Update element r along the axis lands on output position p."""
            src = list(p)
            src[a] = r
            inside = all_of([lt(p[d], Const(upd.shape[d], I32)) for d in range(len(p)) if d != a])
            return and_(inside, eq(_idx(ind(*src), x.shape[a]), p[a])), src

        if red == "none":
            def flast(*p):
                r = te.reduce_axis(n_upd, "r")
                h, _ = hits(p, r.var)
                return te.max(select(h, r.var, Const(-1, I32)), r)
            last = te.compute(x.shape, flast, "last_hit")

            def out(*p):
                src = list(p)
                src[a] = last(*p)
                return select(ge(last(*p), Const(0, I32)), upd(*src), x(*p))
            return [te.compute(x.shape, out, "scatter")]
        comb = _COMBINE[red][0]

        def fred(*p):
            r = te.reduce_axis(n_upd, "r")
            h, src = hits(p, r.var)
            return te.Reduce(comb, select(h, upd(*src), te.identity(comb, x.dtype)), [r])
        acc = te.compute(x.shape, fred, "scatter_acc")
        return [te.compute(x.shape, lambda *p: _combine(comb, x(*p), acc(*p)), "scatter")]


@register
class ScatterND(Op):
    name = "ScatterND"
    pattern = Pattern.OPAQUE
    min_inputs = 3

    def infer(self, node):
        x, ind, upd = (v.type for v in node.inputs)
        k = ind.shape[-1]
        if upd.shape != ind.shape[:-1] + x.shape[k:]:
            raise OpError(node, "updates shape does not match indices and data")
        return [TensorType(x.shape, x.dtype)]

    def reference(self, node, x, ind, upd):
        red = node.attrs.get("reduction", "none")
        out = x.copy()
        for pos in np.ndindex(*ind.shape[:-1]):
            key = tuple(int(v) if v >= 0 else int(v) + x.shape[j] for j, v in enumerate(ind[pos]))
            out[key] = {"none": lambda o, u: u, "add": np.add, "mul": np.multiply, "max": np.maximum,
                        "min": np.minimum}[red](out[key], upd[pos])
        return [out]

    def compute(self, node, x, ind, upd):
        red = node.attrs.get("reduction", "none")
        lead = ind.shape[:-1]
        k = ind.shape[-1]

        def hits(p, rs):
            return all_of([eq(_idx(ind(*rs, Const(j, I32)), x.shape[j]), p[j]) for j in range(k)])

        if red == "none":
            def flast(*p):
                rs = [te.reduce_axis(n, f"r{d}") for d, n in enumerate(lead)]
                flat = Const(0, I32)
                for r, n in zip(rs, lead):
                    flat = flat * n + r.var
                return te.max(select(hits(p, [r.var for r in rs]), flat, Const(-1, I32)), rs)
            last = te.compute(x.shape, flast, "last_hit")

            def out(*p):
                rem, js = last(*p), []
                for n in reversed(lead):
                    js.append(rem % n)
                    rem = rem // n
                return select(ge(last(*p), Const(0, I32)), upd(*js[::-1], *p[k:]), x(*p))
            return [te.compute(x.shape, out, "scatter_nd")]
        comb = _COMBINE[red][0]

        def fred(*p):
            rs = [te.reduce_axis(n, f"r{d}") for d, n in enumerate(lead)]
            v = [r.var for r in rs]
            return te.Reduce(comb, select(hits(p, v), upd(*v, *p[k:]), te.identity(comb, x.dtype)), rs)
        acc = te.compute(x.shape, fred, "scatter_acc")
        return [te.compute(x.shape, lambda *p: _combine(comb, x(*p), acc(*p)), "scatter_nd")]


@register
class Trilu(Op):
    name = "Trilu"
    pattern = Pattern.INJECTIVE

    def canon(self, ctx):
        k = ctx.const_input(1, "k")
        ctx.attrs = {"upper": int(ctx.attrs.get("upper", 1)), "k": 0 if k is None else int(k.reshape(-1)[0])}
        ctx.drop_inputs_from(1)

    def infer(self, node):
        if len(node.inputs[0].type.shape) < 2:
            raise OpError(node, "input must have rank >= 2")
        return [node.inputs[0].type]

    def reference(self, node, x):
        k = node.attrs["k"]
        return [np.triu(x, k) if node.attrs["upper"] else np.tril(x, k)]

    def compute(self, node, x):
        k, up = node.attrs["k"], node.attrs["upper"]

        def body(*i):
            d = i[-1] - i[-2]
            keep = ge(d, Const(k, I32)) if up else le(d, Const(k, I32))
            return select(keep, x(*i), Const(0, x.dtype))
        return [te.compute(x.shape, body, "trilu")]


@register
class Tile(Op):
    name = "Tile"
    pattern = Pattern.INJECTIVE

    def canon(self, ctx):
        ctx.attrs = {"repeats": ctx.ints_input(1, "repeats", required=True)}
        ctx.drop_inputs_from(1)

    def infer(self, node):
        x = node.inputs[0].type
        if len(node.attrs["repeats"]) != len(x.shape):
            raise OpError(node, "repeats must have one value per dimension")
        return [TensorType(tuple(s * r for s, r in zip(x.shape, node.attrs["repeats"])), x.dtype)]

    def reference(self, node, x):
        return [np.tile(x, node.attrs["repeats"])]

    def compute(self, node, x):
        return [te.compute(node.outputs[0].type.shape, lambda *i: x(*[ii % s for ii, s in zip(i, x.shape)]), "tile")]


@register
class DepthToSpace(Op):
    names = ("DepthToSpace", "SpaceToDepth")
    pattern = Pattern.INJECTIVE

    def infer(self, node):
        n, c, h, w = node.inputs[0].type.shape
        b = node.attrs["blocksize"]
        if node.op == "DepthToSpace":
            if c % (b * b):
                raise OpError(node, "channels must be a multiple of blocksize^2")
            shape = (n, c // (b * b), h * b, w * b)
        else:
            if h % b or w % b:
                raise OpError(node, "height and width must be multiples of blocksize")
            shape = (n, c * b * b, h // b, w // b)
        return [TensorType(shape, node.inputs[0].type.dtype)]

    def reference(self, node, x):
        n, c, h, w = x.shape
        b = node.attrs["blocksize"]
        if node.op == "SpaceToDepth":
            t = x.reshape(n, c, h // b, b, w // b, b)
            t = t.transpose(0, 1, 3, 5, 2, 4) if node.attrs.get("mode", "DCR") == "CRD" else t.transpose(0, 3, 5, 1, 2, 4)
            return [t.reshape(n, c * b * b, h // b, w // b)]
        if node.attrs.get("mode", "DCR") == "DCR":
            t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return [t.reshape(n, c // (b * b), h * b, w * b)]

    def compute(self, node, x):
        b = node.attrs["blocksize"]
        shape = node.outputs[0].type.shape
        c_in = x.shape[1]
        if node.op == "SpaceToDepth" and node.attrs.get("mode", "DCR") == "CRD":
            def body(n, c, h, w):
                blk = c % (b * b)
                return x(n, c // (b * b), h * b + blk // b, w * b + blk % b)
        elif node.op == "SpaceToDepth":
            def body(n, c, h, w):
                blk = c // c_in
                return x(n, c % c_in, h * b + blk // b, w * b + blk % b)
        elif node.attrs.get("mode", "DCR") == "DCR":
            cout = shape[1]

            def body(n, c, h, w):
                return x(n, ((h % b) * b + w % b) * cout + c, h // b, w // b)
        else:
            def body(n, c, h, w):
                return x(n, c * (b * b) + (h % b) * b + w % b, h // b, w // b)
        return [te.compute(shape, body, node.op.lower())]


@register
class OneHot(Op):
    name = "OneHot"
    pattern = Pattern.INJECTIVE
    min_inputs = 3

    def canon(self, ctx):
        depth = ctx.const_input(1, "depth")
        axis = int(ctx.attrs.get("axis", -1))
        r = len(ctx.input(0).type.shape) + 1
        a = axis + r if axis < 0 else axis
        if not 0 <= a < r:
            ctx.error(f"axis {axis} out of range")
        ctx.attrs = {"depth": int(depth.reshape(-1)[0]), "axis": a}
        ctx.inputs = [ctx.inputs[0], ctx.inputs[2]]

    def infer(self, node):
        ind, vals = node.inputs[0].type, node.inputs[1].type
        a = node.attrs["axis"]
        return [TensorType(ind.shape[:a] + (node.attrs["depth"],) + ind.shape[a:], vals.dtype)]

    def reference(self, node, ind, vals):
        d, a = node.attrs["depth"], node.attrs["axis"]
        k = ind.astype(np.int64)
        k = np.where(k < 0, k + d, k)
        pos = np.arange(d).reshape((1,) * a + (d,) + (1,) * (ind.ndim - a))
        hit = np.expand_dims(k, a) == pos
        return [np.where(hit, vals.reshape(-1)[1], vals.reshape(-1)[0]).astype(vals.dtype)]

    def compute(self, node, ind, vals):
        d, a = node.attrs["depth"], node.attrs["axis"]
        flat = len(vals.shape) == 1

        def v(j):
            return vals(Const(j, I32)) if flat else vals.flat(Const(j, I32))

        def body(*o):
            k = _idx(ind(*o[:a], *o[a + 1:]), d)
            return select(eq(k, o[a]), v(1), v(0))
        return [te.compute(node.outputs[0].type.shape, body, "one_hot")]


@register
class EyeLike(Op):
    name = "EyeLike"
    pattern = Pattern.OPAQUE
    fold_from_types = True

    def infer(self, node):
        x = node.inputs[0].type
        dt = node.attrs.get("dtype")
        if len(x.shape) != 2:
            raise OpError(node, "input must be 2-D")
        return [TensorType(x.shape, ONNX_DTYPES.get(dt, x.dtype) if dt is not None else x.dtype)]

    def reference(self, node, x=None):
        t = node.outputs[0].type
        return [np.eye(t.shape[0], t.shape[1], k=node.attrs.get("k", 0), dtype=t.dtype)]


__all__ = ["ALL"]


@register
class ReverseSequence(Op):
    name = "ReverseSequence"
    pattern = Pattern.INJECTIVE
    min_inputs = 2

    def canon(self, ctx):
        ctx.attrs["batch_axis"] = ctx.attrs.get("batch_axis", 1)
        ctx.attrs["time_axis"] = ctx.attrs.get("time_axis", 0)

    def infer(self, node):
        return [node.inputs[0].type]

    def reference(self, node, x, lens):
        b, t = node.attrs["batch_axis"], node.attrs["time_axis"]
        y = x.copy()
        for i, n in enumerate(lens.astype(np.int64)):
            src = [slice(None)] * x.ndim
            src[b] = i
            src[t] = slice(0, int(n))
            y[tuple(src)] = np.flip(x[tuple(src)], axis=t - (1 if b < t else 0))
        return [y]

    def compute(self, node, x, lens):
        b, t = node.attrs["batch_axis"], node.attrs["time_axis"]

        def body(*i):
            n = Cast(I32, lens(i[b]))
            src = list(i)
            src[t] = select(lt(i[t], n), n - 1 - i[t], i[t])
            return x(*src)
        return [te.compute(x.shape, body, "reverse_sequence")]


@register
class Compress(Op):
    """Keeps the slices whose condition is true; the condition must be known at compile time
    (the output's shape depends on it)."""
    name = "Compress"
    pattern = Pattern.INJECTIVE
    min_inputs = 2

    def canon(self, ctx):
        cond = ctx.const_input(1, "condition")
        axis = ctx.attrs.get("axis")
        if axis is not None:
            axis = norm_axis(ctx, axis, len(ctx.input(0).type.shape))
        ctx.attrs = {"keep": [int(i) for i in np.nonzero(cond.reshape(-1))[0]], "axis": axis}
        ctx.drop_inputs_from(1)

    def infer(self, node):
        x = node.inputs[0].type
        keep, a = node.attrs["keep"], node.attrs["axis"]
        if a is None:
            return [TensorType((len(keep),), x.dtype)]
        if keep and keep[-1] >= x.shape[a]:
            raise OpError(node, "condition is longer than the axis")
        return [TensorType(x.shape[:a] + (len(keep),) + x.shape[a + 1:], x.dtype)]

    def reference(self, node, x):
        keep, axis = np.array(node.attrs["keep"], np.int64), node.attrs["axis"]
        return [np.take(x.reshape(-1), keep) if axis is None else np.take(x, keep, axis=axis)]

    def compute(self, node, x):
        keep, axis = node.attrs["keep"], node.attrs["axis"]

        def pick(i):   # a select chain over the (compile-time) kept positions
            e = Const(keep[-1] if keep else 0, I32)
            for j in range(len(keep) - 2, -1, -1):
                e = select(eq(i, Const(j, I32)), Const(keep[j], I32), e)
            return e
        if axis is None:
            return [te.compute(node.outputs[0].type.shape, lambda i: x.flat(pick(i)), "compress")]

        def body(*o):
            src = list(o)
            src[axis] = pick(o[axis])
            return x(*src)
        return [te.compute(node.outputs[0].type.shape, body, "compress")]


@register
class Col2Im(Op):
    """Sums sliding blocks back into an image: out[y] = sum over taps k with (y + pad - k*d)
    an exact multiple of the stride, of the column holding that block position."""
    name = "Col2Im"
    pattern = Pattern.OPAQUE
    min_inputs = 3

    def canon(self, ctx):
        image = ctx.ints_input(1, "image_shape", required=True)
        block = ctx.ints_input(2, "block_shape", required=True)
        n = len(image)
        a = ctx.attrs
        ctx.attrs = {"image": image, "block": block, "dilations": list(a.get("dilations") or [1] * n),
                     "pads": list(a.get("pads") or [0] * (2 * n)), "strides": list(a.get("strides") or [1] * n)}
        ctx.drop_inputs_from(1)

    def _blocks(self, node):
        a = node.attrs
        n = len(a["image"])
        return [(a["image"][d] + a["pads"][d] + a["pads"][d + n] - a["dilations"][d] * (a["block"][d] - 1) - 1)
                // a["strides"][d] + 1 for d in range(n)]

    def infer(self, node):
        x = node.inputs[0].type
        kprod = int(np.prod(node.attrs["block"]))
        if x.shape[1] % kprod or int(np.prod(self._blocks(node))) != x.shape[2]:
            raise OpError(node, "input shape does not match image_shape, block_shape and the attributes")
        return [TensorType((x.shape[0], x.shape[1] // kprod, *node.attrs["image"]), x.dtype)]

    def reference(self, node, x):
        a = node.attrs
        n = len(a["image"])
        nb = self._blocks(node)
        out = np.zeros(node.outputs[0].type.shape, np.float64)
        C = out.shape[1]
        for l, pos in enumerate(np.ndindex(*nb)):
            for kk, k in enumerate(np.ndindex(*a["block"])):
                y = [pos[d] * a["strides"][d] - a["pads"][d] + k[d] * a["dilations"][d] for d in range(n)]
                if all(0 <= y[d] < a["image"][d] for d in range(n)):
                    out[(slice(None), slice(None)) + tuple(y)] += x[:, np.arange(C) * len(list(np.ndindex(*a["block"]))) + kk, l]
        return [out.astype(x.dtype)]

    def compute(self, node, x):
        from ..tir.expr import Bin
        a = node.attrs
        n = len(a["image"])
        nb = self._blocks(node)
        kprod = int(np.prod(a["block"]))

        def body(b, c, *y):
            rs = [te.reduce_axis(k, f"k{d}") for d, k in enumerate(a["block"])]
            ok, pos = None, []
            for d in range(n):
                num = y[d] + a["pads"][d] - rs[d].var * a["dilations"][d]
                s = a["strides"][d]
                cond = and_(ge(num, Const(0, I32)), lt(num, Const(s * nb[d], I32)))
                if s > 1:
                    cond = and_(cond, eq(Bin("floormod", num, Const(s, I32)), Const(0, I32)))
                    num = Bin("floordiv", num, Const(s, I32))
                pos.append(num)
                ok = cond if ok is None else and_(ok, cond)
            col, kk = Const(0, I32), Const(0, I32)
            for d in range(n):
                col = col * nb[d] + pos[d]
                kk = kk * a["block"][d] + rs[d].var
            v = x(b, c * kprod + kk, col)
            return te.sum(select(ok, v, Const(0, x.dtype)), rs)
        return [te.compute(node.outputs[0].type.shape, body, "col2im")]
