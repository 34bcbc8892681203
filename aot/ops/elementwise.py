"""Elementwise (unary), broadcasting (binary/variadic) and comparison ops."""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import (Bin, Call, Cast, Const, and_, call, cast, eq, ge, gt, is_float, le, lt, max_, max_nan, min_,
                        min_nan, ne, not_, or_, select)
from ..tir.expr import Unary as UnaryExpr
from .registry import INTS
from .registry import (ALL, FLOATS, NUMERIC, ONNX_DTYPES, Op, Pattern, broadcast_shapes, register, same_as_input)


def _f(x, v):
    return Const(v, x.dtype)


def _erf(x):
    import math as m
    return np.vectorize(m.erf, otypes=[x.dtype])(x) if x.size else x.copy()


def _softplus(x):
    """log(1 + exp(x)) without overflow: x + log1p(exp(-x)) for x > 0 (exp(x) is inf past ~88
    in float32, while the result is just x), log1p(exp(x)) otherwise; NaN takes the second arm."""
    one_side = lambda v: call("log1p", call("exp", v))  # noqa: E731
    return select(gt(x, _f(x, 0)), x + one_side(-x), one_side(x))


# name: (te fn(x, attrs), numpy fn(x, attrs), dtypes)
# Selu's defaults: float32 values of the self-normalising constants (ONNX spec)
SELU_ALPHA, SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875

UNARY = {
    "Relu": (lambda x, a: select(lt(x, _f(x, 0)), _f(x, 0), x), lambda x, a: np.maximum(x, x.dtype.type(0)), NUMERIC),
    "LeakyRelu": (lambda x, a: select(lt(x, _f(x, 0)), x * a.get("alpha", 0.01), x),
                  lambda x, a: np.where(x < 0, x * np.float32(a.get("alpha", 0.01)), x), FLOATS),
    "Sigmoid": (lambda x, a: _f(x, 1) / (_f(x, 1) + call("exp", -x)),
                lambda x, a: (1 / (1 + np.exp(-x))).astype(x.dtype), FLOATS),
    "Tanh": (lambda x, a: call("tanh", x), lambda x, a: np.tanh(x), FLOATS),
    "HardSigmoid": (lambda x, a: max_(_f(x, 0), min_(_f(x, 1), x * a.get("alpha", 0.2) + _f(x, a.get("beta", 0.5)))),
                    lambda x, a: np.clip(x * np.float32(a.get("alpha", 0.2)) + np.float32(a.get("beta", 0.5)), 0, 1).astype(x.dtype), FLOATS),
    "HardSwish": (lambda x, a: x * max_(_f(x, 0), min_(_f(x, 1), x * (1 / 6) + _f(x, 0.5))),
                  lambda x, a: (x * np.clip(x / np.float32(6) + np.float32(0.5), 0, 1)).astype(x.dtype), FLOATS),
    "Exp": (lambda x, a: call("exp", x), lambda x, a: np.exp(x), FLOATS),
    "Log": (lambda x, a: call("log", x), lambda x, a: np.log(x), FLOATS),
    "Sqrt": (lambda x, a: call("sqrt", x), lambda x, a: np.sqrt(x), FLOATS),
    "Neg": (lambda x, a: -x, lambda x, a: -x, NUMERIC),
    "Abs": (lambda x, a: call("fabs", x) if is_float(x.dtype) else select(lt(x, _f(x, 0)), -x, x),
            lambda x, a: np.abs(x), NUMERIC),
    "Erf": (lambda x, a: call("erf", x), lambda x, a: _erf(x), FLOATS),
    "Floor": (lambda x, a: call("floor", x), lambda x, a: np.floor(x), FLOATS),
    "Ceil": (lambda x, a: call("ceil", x), lambda x, a: np.ceil(x), FLOATS),
    "Reciprocal": (lambda x, a: _f(x, 1) / x, lambda x, a: (1 / x).astype(x.dtype), FLOATS),
    "Softplus": (lambda x, a: _softplus(x), lambda x, a: np.logaddexp(x.dtype.type(0), x), FLOATS),
    "Softsign": (lambda x, a: x / (_f(x, 1) + call("fabs", x)), lambda x, a: (x / (1 + np.abs(x))).astype(x.dtype), FLOATS),
    "Elu": (lambda x, a: select(lt(x, _f(x, 0)), (call("exp", x) - _f(x, 1)) * a.get("alpha", 1.0), x),
            lambda x, a: np.where(x < 0, (np.exp(x) - 1) * np.float32(a.get("alpha", 1.0)), x).astype(x.dtype), FLOATS),
    "Selu": (lambda x, a: select(gt(x, _f(x, 0)), x * a.get("gamma", SELU_GAMMA),
                                 (call("exp", x) * a.get("alpha", SELU_ALPHA) - _f(x, a.get("alpha", SELU_ALPHA)))
                                 * a.get("gamma", SELU_GAMMA)),
             lambda x, a: (np.float32(a.get("gamma", SELU_GAMMA)) * np.where(
                 x > 0, x, np.float32(a.get("alpha", SELU_ALPHA)) * np.exp(x) - np.float32(a.get("alpha", SELU_ALPHA)))
             ).astype(x.dtype), FLOATS),
    "Sin": (lambda x, a: call("sin", x), lambda x, a: np.sin(x), FLOATS),
    "Cos": (lambda x, a: call("cos", x), lambda x, a: np.cos(x), FLOATS),
    "Not": (lambda x, a: not_(x), lambda x, a: np.logical_not(x), ("bool",)),
    "Tan": (lambda x, a: call("tan", x), lambda x, a: np.tan(x), FLOATS),
    "Asin": (lambda x, a: call("asin", x), lambda x, a: np.arcsin(x), FLOATS),
    "Acos": (lambda x, a: call("acos", x), lambda x, a: np.arccos(x), FLOATS),
    "Atan": (lambda x, a: call("atan", x), lambda x, a: np.arctan(x), FLOATS),
    "Sinh": (lambda x, a: call("sinh", x), lambda x, a: np.sinh(x), FLOATS),
    "Cosh": (lambda x, a: call("cosh", x), lambda x, a: np.cosh(x), FLOATS),
    "Asinh": (lambda x, a: call("asinh", x), lambda x, a: np.arcsinh(x), FLOATS),
    "Acosh": (lambda x, a: call("acosh", x), lambda x, a: np.arccosh(x), FLOATS),
    "Atanh": (lambda x, a: call("atanh", x), lambda x, a: np.arctanh(x), FLOATS),
    "Round": (lambda x, a: call("nearbyint", x), lambda x, a: np.round(x), FLOATS),  # half to even
    "Sign": (lambda x, a: select(gt(x, _f(x, 0)), _f(x, 1), select(lt(x, _f(x, 0)), _f(x, -1), _f(x, 0))),
             lambda x, a: np.sign(x), NUMERIC),
    "IsNaN": (lambda x, a: Call("isnan", [x], "bool"), lambda x, a: np.isnan(x), FLOATS),
    "IsInf": (lambda x, a: and_(Call("isinf", [x], "bool"),
                                select(gt(x, _f(x, 0)), Const(bool(a.get("detect_positive", 1)), "bool"),
                                       Const(bool(a.get("detect_negative", 1)), "bool"))),
              lambda x, a: (np.isposinf(x) & bool(a.get("detect_positive", 1))) | (np.isneginf(x) & bool(a.get("detect_negative", 1))),
              FLOATS),
    "BitwiseNot": (lambda x, a: UnaryExpr("bnot", x), lambda x, a: np.invert(x), INTS),
    # Identity/Dropout are removed by the simplify pass; compute exists for the rare copy
    "Identity": (lambda x, a: x, lambda x, a: x, ALL),
    "Dropout": (lambda x, a: x, lambda x, a: x, ALL),
}


class Unary(Op):
    names = tuple(UNARY)
    pattern = Pattern.ELEMWISE

    def canon(self, ctx):
        if ctx.op == "Dropout":
            mode = ctx.const_input(2, "training_mode") if ctx.opset >= 12 else None
            ratio = ctx.const_input(1, "ratio") if ctx.opset >= 12 else None
            if mode is not None and bool(mode) and not (ratio is not None and float(ratio) == 0.0):
                ctx.error("Dropout in training mode (random masks) is not supported")
            ctx.drop_inputs_from(1)

    def infer(self, node):
        out = same_as_input(node)
        if node.op in ("IsNaN", "IsInf"):
            out = [TensorType(node.inputs[0].type.shape, "bool")]
        if node.op == "Dropout" and len(node.outputs) > 1:   # inference: the mask is all ones
            out.append(TensorType(node.inputs[0].type.shape, "bool"))
        return out

    def check(self, node):
        dt = node.inputs[0].type.dtype
        if dt not in UNARY[node.op][2]:
            raise OpError(node, f"input dtype {dt} is not supported")

    def reference(self, node, x):
        out = [np.asarray(UNARY[node.op][1](x, node.attrs)).astype(node.outputs[0].type.dtype)]
        if len(node.outputs) > 1:
            out.append(np.broadcast_to(np.True_, x.shape))
        return out

    def compute(self, node, x):
        f = UNARY[node.op][0]
        return [te.compute(x.shape, lambda *i: f(x(*i), node.attrs), node.op.lower())]


register(Unary)




@register
class Clip(Op):
    name = "Clip"
    pattern = Pattern.ELEMWISE
    dtypes = NUMERIC

    def canon(self, ctx):
        if ctx.opset >= 11:
            lo, hi = ctx.const_input(1, "min"), ctx.const_input(2, "max")
            ctx.attrs["min"] = None if lo is None else lo.item()
            ctx.attrs["max"] = None if hi is None else hi.item()
            ctx.drop_inputs_from(1)
        else:
            ctx.attrs.setdefault("min", -3.4028234663852886e38)
            ctx.attrs.setdefault("max", 3.4028234663852886e38)

    def infer(self, node):
        return same_as_input(node)

    def reference(self, node, x):
        lo, hi = node.attrs.get("min"), node.attrs.get("max")
        y = x
        if lo is not None:
            y = np.maximum(y, x.dtype.type(lo))
        if hi is not None:
            y = np.minimum(y, x.dtype.type(hi))
        return [y.astype(x.dtype)]

    def compute(self, node, x):
        lo, hi = node.attrs.get("min"), node.attrs.get("max")

        def f(*i):
            y = x(*i)
            # the spec's function body: Where(Less(x, min), min, x), then Where(Less(max, y), max, y);
            # a NaN compares false and passes through, as in onnxruntime
            if lo is not None:
                y = select(lt(y, Const(lo, x.dtype)), Const(lo, x.dtype), y)
            if hi is not None:
                y = select(lt(Const(hi, x.dtype), y), Const(hi, x.dtype), y)
            return y
        return [te.compute(x.shape, f, "clip")]


@register
class CastOp(Op):
    name = "Cast"
    pattern = Pattern.ELEMWISE

    def canon(self, ctx):
        to = ctx.attrs.get("to")
        if to not in ONNX_DTYPES:
            import onnx
            ctx.error(f"Cast to {onnx.TensorProto.DataType.Name(to) if to in onnx.TensorProto.DataType.values() else to} "
                      "is not supported")
        ctx.attrs = {"to": ONNX_DTYPES[to]}

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, node.attrs["to"])]

    def reference(self, node, x):
        return [x.astype(node.attrs["to"])]

    def compute(self, node, x):
        to = node.attrs["to"]

        def f(*i):
            v = x(*i)
            if to == "bool":
                return ne(v, Const(0, v.dtype))
            return Cast(to, v)
        return [te.compute(x.shape, f, "cast")]


@register
class CastLike(CastOp):
    """Cast to the dtype of a second input: the same op once the target is known."""
    name = "CastLike"
    min_inputs = 2

    def canon(self, ctx):
        ctx.attrs = {"to": ctx.inputs[1].type.dtype}
        ctx.drop_inputs_from(1)


def _trunc_div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        q = np.floor_divide(a, b)
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        return (q + fix).astype(a.dtype)
    return (a / b).astype(a.dtype)


def _te_div(a, b):
    return a / b   # C '/' truncates for integers, as ONNX requires


def _te_pow(a, b):
    return call("pow", a, cast(a.dtype, b))


def _np_pow(a, b):
    return np.power(a, b.astype(a.dtype)).astype(a.dtype)


BINARY = {
    "Add": (lambda a, b: a + b, lambda a, b: a + b, NUMERIC),
    "Sub": (lambda a, b: a - b, lambda a, b: a - b, NUMERIC),
    "Mul": (lambda a, b: a * b, lambda a, b: a * b, NUMERIC),
    "Div": (_te_div, _trunc_div, NUMERIC),
    "Pow": (_te_pow, _np_pow, FLOATS),
    "PRelu": (lambda a, b: select(lt(a, Const(0, a.dtype)), a * b, a), lambda a, b: np.where(a < 0, a * b, a), FLOATS),
    "Equal": (eq, np.equal, ALL), "Less": (lt, np.less, NUMERIC), "Greater": (gt, np.greater, NUMERIC),
    "LessOrEqual": (le, np.less_equal, NUMERIC), "GreaterOrEqual": (ge, np.greater_equal, NUMERIC),
    "And": (and_, np.logical_and, ("bool",)), "Or": (or_, np.logical_or, ("bool",)),
    "Xor": (ne, np.logical_xor, ("bool",)),
    "BitwiseAnd": (lambda a, b: Bin("&", a, b), np.bitwise_and, INTS),
    "BitwiseOr": (lambda a, b: Bin("|", a, b), np.bitwise_or, INTS),
    "BitwiseXor": (lambda a, b: Bin("^", a, b), np.bitwise_xor, INTS),
}
BOOL_OUT = ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor")


class Binary(Op):
    names = tuple(BINARY)
    pattern = Pattern.BROADCAST
    min_inputs = 2

    def infer(self, node):
        a, b = node.inputs[0].type, node.inputs[1].type
        if a.dtype != b.dtype and node.op != "Pow":
            raise OpError(node, f"input dtypes differ: {a.dtype} and {b.dtype}")
        shape = broadcast_shapes(node, a.shape, b.shape)
        return [TensorType(shape, "bool" if node.op in BOOL_OUT else a.dtype)]

    def check(self, node):
        dt = node.inputs[0].type.dtype
        if dt not in BINARY[node.op][2]:
            raise OpError(node, f"input dtype {dt} is not supported")

    def reference(self, node, a, b):
        out = BINARY[node.op][1](a, b)
        return [np.asarray(out).astype("bool" if node.op in BOOL_OUT else a.dtype)]

    def compute(self, node, a, b):
        f = BINARY[node.op][0]
        shape = node.outputs[0].type.shape
        return [te.compute(shape, lambda *i: f(a(te.broadcast_index(i, a.shape)), b(te.broadcast_index(i, b.shape))),
                           node.op.lower())]


register(Binary)


@register
class Mod(Binary):
    """fmod=0: the result takes the divisor's sign (integers); fmod=1: C fmod / % semantics."""
    names = ("Mod",)
    dtypes = NUMERIC

    def check(self, node):
        Op.check(self, node)

    def reference(self, node, a, b):
        if node.attrs.get("fmod", 0):
            return [np.fmod(a, b).astype(a.dtype)]
        return [np.mod(a, b).astype(a.dtype)]

    def compute(self, node, a, b):
        fm = node.attrs.get("fmod", 0)

        def f(x, y):
            if is_float(x.dtype):
                r = call("fmod", x, y)
                if fm:
                    return r
                # the result takes the divisor's sign, as numpy's and Python's % do
                zero = Const(0, x.dtype)
                return select(and_(ne(r, zero), ne(lt(r, zero), lt(y, zero))), r + y, r)
            unsigned = x.dtype.startswith("uint")
            return Bin("%", x, y) if fm or unsigned else Bin("floormod", x, y)
        shape = node.outputs[0].type.shape
        return [te.compute(shape, lambda *i: f(a(te.broadcast_index(i, a.shape)), b(te.broadcast_index(i, b.shape))), "mod")]


@register
class BitShift(Binary):
    names = ("BitShift",)
    dtypes = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")

    def check(self, node):
        Op.check(self, node)

    def reference(self, node, a, b):
        left = node.attrs.get("direction", "LEFT") == "LEFT"
        bits = a.dtype.itemsize * 8
        ok = (b >= 0) & (b < bits)
        safe = np.where(ok, b, 0).astype(a.dtype)
        v = np.left_shift(a, safe) if left else np.right_shift(a, safe)
        fill = np.where(a < 0, -1, 0).astype(a.dtype) if (not left and a.dtype.kind == "i") else np.zeros_like(a)
        return [np.where(ok, v, fill).astype(a.dtype)]

    def compute(self, node, a, b):
        left = node.attrs.get("direction", "LEFT") == "LEFT"
        bits = np.dtype(a.dtype).itemsize * 8

        signed = not a.dtype.startswith("uint")

        def f(x, y):
            # shifting by the width or more, or a negative value left, is undefined in C:
            # shift the unsigned bit pattern (wrapping, as numpy does) and keep right shifts arithmetic
            if signed and left:
                u = "u" + a.dtype
                v = Cast(a.dtype, Bin("<<", Cast(u, x), Cast(u, y)))
            else:
                v = Bin("<<" if left else ">>", x, y)
            in_range = and_(ge(y, Const(0, y.dtype)), lt(y, Const(bits, y.dtype))) if signed \
                else lt(y, Const(bits, y.dtype))
            # out-of-range shift amounts: left gives 0, right fills with the sign bit
            fill = select(lt(x, Const(0, x.dtype)), Const(-1, x.dtype), Const(0, x.dtype)) \
                if signed and not left else Const(0, x.dtype)
            return select(in_range, v, fill)
        shape = node.outputs[0].type.shape
        return [te.compute(shape, lambda *i: f(a(te.broadcast_index(i, a.shape)), b(te.broadcast_index(i, b.shape))), "shift")]

# up to this many inputs a variadic op folds left to right, as onnxruntime sums; beyond, pairwise
BALANCED_VARIADIC = 64
VARIADIC = {"Sum": (lambda a, b: a + b, np.add), "Max": (max_nan, np.maximum), "Min": (min_nan, np.minimum),
            "Mean": (lambda a, b: a + b, np.add)}


class Variadic(Op):
    names = tuple(VARIADIC)
    pattern = Pattern.BROADCAST
    dtypes = NUMERIC

    def infer(self, node):
        dts = {v.type.dtype for v in node.inputs}
        if len(dts) != 1:
            raise OpError(node, f"input dtypes differ: {', '.join(sorted(dts))}")
        return [TensorType(broadcast_shapes(node, *[v.type.shape for v in node.inputs]), dts.pop())]

    def check(self, node):
        super().check(node)
        if node.op == "Mean" and not is_float(node.inputs[0].type.dtype):
            raise OpError(node, "Mean needs float inputs")

    def reference(self, node, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = VARIADIC[node.op][1](out, x)
        if node.op == "Mean":
            out = out / np.float32(len(xs))
        return [np.asarray(out).astype(xs[0].dtype)]

    def compute(self, node, *xs):
        f = VARIADIC[node.op][0]
        shape = node.outputs[0].type.shape

        def body(*i):
            terms = [x(te.broadcast_index(i, x.shape)) for x in xs]
            if len(terms) <= BALANCED_VARIADIC:
                acc = terms[0]
                for t in terms[1:]:
                    acc = f(acc, t)
            else:       # pairwise, so the expression is log2(n) deep, not n (the walkers recurse)
                while len(terms) > 1:
                    terms = [f(terms[k], terms[k + 1]) if k + 1 < len(terms) else terms[k]
                             for k in range(0, len(terms), 2)]
                acc = terms[0]
            if node.op == "Mean":
                acc = acc / Const(len(xs), acc.dtype)
            return acc
        return [te.compute(shape, body, node.op.lower())]


register(Variadic)


@register
class Where(Op):
    name = "Where"
    pattern = Pattern.BROADCAST
    dtypes = ("bool",)
    min_inputs = 3

    def infer(self, node):
        c, x, y = (v.type for v in node.inputs)
        if x.dtype != y.dtype:
            raise OpError(node, f"X and Y dtypes differ: {x.dtype} and {y.dtype}")
        return [TensorType(broadcast_shapes(node, c.shape, x.shape, y.shape), x.dtype)]

    def reference(self, node, c, x, y):
        return [np.where(c, x, y).astype(x.dtype)]

    def compute(self, node, c, x, y):
        shape = node.outputs[0].type.shape
        return [te.compute(shape, lambda *i: select(c(te.broadcast_index(i, c.shape)),
                                                    x(te.broadcast_index(i, x.shape)),
                                                    y(te.broadcast_index(i, y.shape))), "where")]
