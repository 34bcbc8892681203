"""Layout and indexing ops: reshape-likes (aliases), transpose, concat, split, slice, pad, gather."""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Const, all_of, and_, ge, lt, select
from ..tir.flatten import flat_index
from .registry import AxisOp, Op, Pattern, norm_axis, register


class _ReshapeLike(Op):
    """Output has the input's bytes in the same order: an alias, never a copy when avoidable."""
    pattern = Pattern.INJECTIVE
    alias = True

    def reference(self, node, x):
        return [x.reshape(node.outputs[0].type.shape)]

    def compute(self, node, x):
        shape = node.outputs[0].type.shape
        return [te.compute(shape, lambda *i: x.flat(flat_index(i, shape)), "copy")]

    def infer(self, node):
        shape = self.out_shape(node, node.inputs[0].type.shape)
        if int(np.prod(shape)) != node.inputs[0].type.size:
            raise OpError(node, f"cannot reshape {list(node.inputs[0].type.shape)} to {list(shape)}")
        return [TensorType(tuple(shape), node.inputs[0].type.dtype)]


@register
class Reshape(_ReshapeLike):
    name = "Reshape"

    def canon(self, ctx):
        if ctx.opset >= 5:
            ctx.attrs["shape"] = ctx.ints_input(1, "shape", required=True)
            ctx.drop_inputs_from(1)

    def out_shape(self, node, in_shape):
        spec = list(node.attrs["shape"])
        allowzero = node.attrs.get("allowzero", 0)
        out = [in_shape[k] if (s == 0 and not allowzero) else s for k, s in enumerate(spec)]
        if out.count(-1) > 1:
            raise OpError(node, f"shape {spec} has more than one -1")
        if -1 in out:
            known = int(np.prod([s for s in out if s != -1]))
            total = int(np.prod(in_shape))
            if known == 0 or total % known:
                raise OpError(node, f"cannot reshape {list(in_shape)} to {spec}")
            out[out.index(-1)] = total // known
        return out


@register
class Flatten(_ReshapeLike):
    name = "Flatten"

    def out_shape(self, node, in_shape):
        r = len(in_shape)
        axis = node.attrs.get("axis", 1)
        axis = axis + r if axis < 0 else axis
        if not 0 <= axis <= r:
            raise OpError(node, f"axis {node.attrs.get('axis')} out of range")
        return [int(np.prod(in_shape[:axis])), int(np.prod(in_shape[axis:]))]


@register
class Squeeze(_ReshapeLike):
    name = "Squeeze"

    def canon(self, ctx):
        if ctx.opset >= 13:
            axes = ctx.ints_input(1, "axes")
            if axes is not None:
                ctx.attrs["axes"] = axes
            ctx.drop_inputs_from(1)

    def out_shape(self, node, in_shape):
        r = len(in_shape)
        axes = node.attrs.get("axes")
        if axes is None:
            return [s for s in in_shape if s != 1]
        axes = {norm_axis(node, a, r) for a in axes}
        for a in axes:
            if in_shape[a] != 1:
                raise OpError(node, f"cannot squeeze axis {a} of size {in_shape[a]}")
        return [s for k, s in enumerate(in_shape) if k not in axes]


@register
class Unsqueeze(_ReshapeLike):
    name = "Unsqueeze"

    def canon(self, ctx):
        if ctx.opset >= 13:
            ctx.attrs["axes"] = ctx.ints_input(1, "axes", required=True)
            ctx.drop_inputs_from(1)

    def out_shape(self, node, in_shape):
        r = len(in_shape) + len(node.attrs["axes"])
        axes = sorted(norm_axis(node, a, r) for a in node.attrs["axes"])
        out, it = [], iter(in_shape)
        for k in range(r):
            out.append(1 if k in axes else next(it))
        return out


@register
class Copy(_ReshapeLike):
    """Internal: an explicit copy (e.g. a graph output that is also an input or a constant)."""
    name = "Copy"
    internal = True
    alias = False

    def out_shape(self, node, in_shape):
        return list(in_shape)


@register
class Transpose(Op):
    name = "Transpose"
    pattern = Pattern.INJECTIVE

    def canon(self, ctx):
        ctx.attrs["perm"] = list(ctx.attrs.get("perm") or list(range(len(ctx.input(0).type.shape)))[::-1])

    def infer(self, node):
        x = node.inputs[0].type
        perm = node.attrs["perm"]
        if sorted(perm) != list(range(len(x.shape))):
            raise OpError(node, f"perm {perm} is not a permutation of rank {len(x.shape)}")
        return [TensorType(tuple(x.shape[p] for p in perm), x.dtype)]

    def reference(self, node, x):
        return [np.transpose(x, node.attrs["perm"])]

    def compute(self, node, x):
        perm = node.attrs["perm"]
        shape = node.outputs[0].type.shape

        def body(*i):
            src = [None] * len(perm)
            for k, p in enumerate(perm):
                src[p] = i[k]
            return x(*src)
        return [te.compute(shape, body, "transpose")]


# up to this many inputs a Concat selects its input by a chain of tests (the code aot always
# generated); more are selected by halving the axis' range
BALANCED_CONCAT = 64


@register
class Concat(AxisOp):
    name = "Concat"
    pattern = Pattern.INJECTIVE

    def infer(self, node):
        ts = [v.type for v in node.inputs]
        r = len(ts[0].shape)
        axis = node.attrs["axis"]
        for t in ts[1:]:
            if len(t.shape) != r or t.dtype != ts[0].dtype or any(
                    a != b for k, (a, b) in enumerate(zip(t.shape, ts[0].shape)) if k != axis):
                raise OpError(node, f"inputs {[list(t.shape) for t in ts]} cannot be concatenated on axis {axis}")
        shape = list(ts[0].shape)
        shape[axis] = sum(t.shape[axis] for t in ts)
        return [TensorType(tuple(shape), ts[0].dtype)]

    def reference(self, node, *xs):
        return [np.concatenate(xs, axis=node.attrs["axis"])]

    def compute(self, node, *xs):
        axis = node.attrs["axis"]
        shape = node.outputs[0].type.shape
        parts = [x for x in xs if x.shape[axis] > 0]

        def body(*i):
            offs = np.cumsum([0] + [x.shape[axis] for x in parts])

            def load(k):
                idx = list(i)
                idx[axis] = i[axis] - int(offs[k])
                return parts[k](*idx)
            if len(parts) <= BALANCED_CONCAT:
                expr = None
                for k in reversed(range(len(parts))):
                    v = load(k)
                    expr = v if expr is None else select(lt(i[axis], Const(int(offs[k + 1]), "int32")), v, expr)
                return expr

            # many inputs: a chain of selects as deep as the inputs are many would overflow the
            # recursion of every expression walker; halving the range keeps the depth at log2
            def pick(lo, hi):
                if hi - lo == 1:
                    return load(lo)
                mid = (lo + hi) // 2
                return select(lt(i[axis], Const(int(offs[mid]), "int32")), pick(lo, mid), pick(mid, hi))
            return pick(0, len(parts))
        return [te.compute(shape, body, "concat")]


@register
class Split(Op):
    name = "Split"
    pattern = Pattern.INJECTIVE

    def canon(self, ctx):
        rank = len(ctx.inputs[0].type.shape)
        axis = norm_axis(ctx, int(ctx.attrs.get("axis", 0)), rank)
        size = ctx.inputs[0].type.shape[axis]
        split = ctx.attrs.get("split")
        if ctx.opset >= 13:
            split = ctx.ints_input(1, "split")
            ctx.drop_inputs_from(1)
        if split is None:
            n = int(ctx.attrs.get("num_outputs", ctx.n_outputs))
            chunk = -(-size // n)
            split = [min(chunk, size - k * chunk) for k in range(n)]
        if sum(split) != size or len(split) != ctx.n_outputs:
            ctx.error(f"split sizes {split} do not match axis size {size} and {ctx.n_outputs} outputs")
        ctx.attrs = {"axis": axis, "split": split}

    def infer(self, node):
        x = node.inputs[0].type
        out = []
        for s in node.attrs["split"]:
            shape = list(x.shape)
            shape[node.attrs["axis"]] = s
            out.append(TensorType(tuple(shape), x.dtype))
        return out

    def reference(self, node, x):
        idx = np.cumsum(node.attrs["split"])[:-1]
        return list(np.split(x, idx, axis=node.attrs["axis"]))

    def compute(self, node, x):
        axis, outs, off = node.attrs["axis"], [], 0
        for k, o in enumerate(node.outputs):
            def body(*i, off=off):
                idx = list(i)
                idx[axis] = i[axis] + off
                return x(*idx)
            outs.append(te.compute(o.type.shape, body, f"split{k}"))
            off += node.attrs["split"][k]
        return outs


@register
class Slice(Op):
    name = "Slice"
    pattern = Pattern.INJECTIVE

    def canon(self, ctx):
        rank = len(ctx.inputs[0].type.shape)
        if ctx.opset >= 10:
            starts, ends = ctx.const_input(1, "starts"), ctx.const_input(2, "ends")
            axes, steps = ctx.const_input(3, "axes"), ctx.const_input(4, "steps")
            if starts is None or ends is None:
                ctx.error("starts and ends are required")
            ctx.drop_inputs_from(1)
        else:
            starts, ends, axes, steps = ctx.attrs.get("starts"), ctx.attrs.get("ends"), ctx.attrs.get("axes"), None
        starts = [int(v) for v in np.reshape(starts, -1)]
        ends = [int(v) for v in np.reshape(ends, -1)]
        axes = list(range(len(starts))) if axes is None else [norm_axis(ctx, int(a), rank) for a in np.reshape(axes, -1)]
        steps = [1] * len(starts) if steps is None else [int(v) for v in np.reshape(steps, -1)]
        if any(s == 0 for s in steps):
            ctx.error("slice step 0 is invalid")
        shape = ctx.inputs[0].type.shape
        begin, step, count = [0] * rank, [1] * rank, list(shape)
        for s, e, a, st in zip(starts, ends, axes, steps):
            n = shape[a]
            if st > 0:
                s = min(max(s + n if s < 0 else s, 0), n)
                e = min(max(e + n if e < 0 else e, 0), n)
                c = max(0, -(-(e - s) // st))
            else:
                s = min(max(s + n if s < 0 else s, -1), n - 1)
                e = min(max(e + n if e < 0 else e, -1), n - 1)
                c = max(0, -(-(s - e) // -st))
            begin[a], step[a], count[a] = s, st, c
        ctx.attrs = {"begin": begin, "step": step, "count": count}

    def infer(self, node):
        return [TensorType(tuple(node.attrs["count"]), node.inputs[0].type.dtype)]

    def reference(self, node, x):
        a = node.attrs
        # explicit indices per axis: a slice object cannot stop "before index 0" with a negative step
        idx = [b + np.arange(c) * st for b, st, c in zip(a["begin"], a["step"], a["count"])]
        return [x[np.ix_(*idx)] if idx else x.copy()]

    def compute(self, node, x):
        a = node.attrs
        return [te.compute(tuple(a["count"]), lambda *i: x(*[b + ii * st for ii, b, st in zip(i, a["begin"], a["step"])]),
                           "slice")]


@register
class Pad(Op):
    name = "Pad"
    pattern = Pattern.INJECTIVE

    def canon(self, ctx):
        rank = len(ctx.inputs[0].type.shape)
        mode = ctx.attrs.get("mode", "constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if mode not in ("constant", "reflect", "edge", "wrap"):
            ctx.error(f"Pad mode '{mode}' is not supported")
        if ctx.opset >= 11:
            pads = ctx.const_input(1, "pads")
            value = ctx.const_input(2, "constant_value")
            axes = ctx.const_input(3, "axes")
            value = 0 if value is None or value.size == 0 else value.reshape(-1)[0].item()
            ctx.drop_inputs_from(1)
        else:
            pads, value, axes = ctx.attrs.get("pads"), ctx.attrs.get("value", 0.0), None
        pads = [int(p) for p in np.reshape(pads, -1)]
        if axes is not None:
            ax = [norm_axis(ctx, int(v), rank) for v in np.reshape(axes, -1)]
            full = [0] * (2 * rank)
            for k, a in enumerate(ax):
                full[a], full[a + rank] = pads[k], pads[k + len(ax)]
            pads = full
        if len(pads) != 2 * rank:
            ctx.error(f"pads has {len(pads)} values for rank {rank}")
        ctx.attrs = {"pads": pads, "value": value, "mode": mode}

    def infer(self, node):
        x = node.inputs[0].type
        r = len(x.shape)
        p = node.attrs["pads"]
        shape = tuple(s + p[k] + p[k + r] for k, s in enumerate(x.shape))
        if any(s < 0 for s in shape):
            raise OpError(node, f"pads {p} give a negative size")
        return [TensorType(shape, x.dtype)]

    def reference(self, node, x):
        r, p = x.ndim, node.attrs["pads"]
        crop = tuple(slice(max(0, -p[k]), x.shape[k] - max(0, -p[k + r])) for k in range(r))
        xc = x[crop]
        widths = [(max(0, p[k]), max(0, p[k + r])) for k in range(r)]
        mode = node.attrs.get("mode", "constant")
        if mode == "constant":
            return [np.pad(xc, widths, constant_values=node.attrs["value"])]
        return [np.pad(xc, widths, mode={"edge": "edge", "reflect": "reflect", "wrap": "wrap"}[mode])]

    def compute(self, node, x):
        p = node.attrs["pads"]
        shape = node.outputs[0].type.shape

        mode = node.attrs.get("mode", "constant")

        def fold(s, n):
            """The source index of a padded position for the non-constant modes."""
            from ..tir.expr import Bin, max_, min_
            zero, last = Const(0, "int32"), Const(n - 1, "int32")
            if mode == "edge":
                return min_(max_(s, zero), last)
            if mode == "wrap":
                return Bin("floormod", s, Const(n, "int32"))
            if n == 1:
                return zero
            period = Const(2 * (n - 1), "int32")          # reflect without repeating the edge
            m = Bin("floormod", s, period)
            return select(lt(m, Const(n, "int32")), m, period - m)

        def body(*i):
            src = [ii - p[k] for k, ii in enumerate(i)]
            if mode != "constant":
                return x(*[fold(s, x.shape[k]) for k, s in enumerate(src)])
            inside = all_of([and_(ge(s, Const(0, "int32")), lt(s, Const(x.shape[k], "int32"))) for k, s in enumerate(src)])
            return select(inside, x(*src), Const(node.attrs["value"], x.dtype))
        return [te.compute(shape, body, "pad")]


@register
class Gather(AxisOp):
    name = "Gather"
    pattern = Pattern.INJECTIVE
    min_inputs = 2

    def infer(self, node):
        x, ind = node.inputs[0].type, node.inputs[1].type
        axis = node.attrs["axis"]
        if ind.dtype not in ("int32", "int64"):
            raise OpError(node, f"indices dtype {ind.dtype} must be int32 or int64")
        return [TensorType(x.shape[:axis] + ind.shape + x.shape[axis + 1:], x.dtype)]

    def reference(self, node, x, ind):
        return [np.take(x, ind.astype(np.int64), axis=node.attrs["axis"])]

    def compute(self, node, x, ind):
        from ..tir.expr import cast
        axis = node.attrs["axis"]
        n, ri = x.shape[axis], len(ind.shape)

        def body(*i):
            k = cast("int32", ind(*i[axis:axis + ri]))
            k = select(lt(k, Const(0, "int32")), k + n, k)
            return x(*i[:axis], k, *i[axis + ri:])
        return [te.compute(node.outputs[0].type.shape, body, "gather")]


@register
class Expand(Op):
    name = "Expand"
    pattern = Pattern.BROADCAST

    def canon(self, ctx):
        ctx.attrs["shape"] = ctx.ints_input(1, "shape", required=True)
        ctx.drop_inputs_from(1)

    def infer(self, node):
        from .registry import broadcast_shapes
        x = node.inputs[0].type
        return [TensorType(broadcast_shapes(node, x.shape, tuple(node.attrs["shape"])), x.dtype)]

    def reference(self, node, x):
        return [np.broadcast_to(x, node.outputs[0].type.shape)]

    def compute(self, node, x):
        return [te.compute(node.outputs[0].type.shape, lambda *i: x(te.broadcast_index(i, x.shape)), "expand")]
