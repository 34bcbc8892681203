"""Loop-IR expressions (also used by the tensor-expression layer in aot/te.py).

Expressions are immutable trees. Arithmetic operators build nodes; comparisons use
functions (lt, le, ...) so that == keeps its Python meaning for structural keys.
"""
from __future__ import annotations

import numpy as np

from ..dtypes import FLOATS
from ..errors import InternalError

INDEX = "int32"          # dtype of loop variables and flat indices
FLOAT_TYPES = FLOATS


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_TYPES


class Expr:
    # _lin: the linear form aot/tir/simplify.py found for this (immutable) node, kept so that
    # simplifying a long sum does not walk it again at every level; _canon: set on the sums and
    # products simplify.from_linear builds, which are their own canonical form
    # _free: ids of the Vars under this node, for substitute to leave alone a subtree without them
    __slots__ = ("dtype", "_key", "_lin", "_canon", "_free")

    def __getstate__(self):
        """A copy (pickle, deepcopy) leaves the caches out: they hold ids of this process's Vars."""
        state = {}
        for cls in type(self).__mro__:
            for k in getattr(cls, "__slots__", ()):
                if k not in ("_key", "_lin", "_canon", "_free") and hasattr(self, k):
                    state[k] = getattr(self, k)
        return (None, state)

    def key(self):
        """Structural identity (hashable)."""
        k = getattr(self, "_key", None)
        if k is None:
            k = self._make_key()
            self._key = k
        return k

    # arithmetic -----------------------------------------------------------
    def __add__(self, o): return Bin("+", self, wrap(o, self.dtype))
    def __radd__(self, o): return Bin("+", wrap(o, self.dtype), self)
    def __sub__(self, o): return Bin("-", self, wrap(o, self.dtype))
    def __rsub__(self, o): return Bin("-", wrap(o, self.dtype), self)
    def __mul__(self, o): return Bin("*", self, wrap(o, self.dtype))
    def __rmul__(self, o): return Bin("*", wrap(o, self.dtype), self)
    def __truediv__(self, o): return Bin("/", self, wrap(o, self.dtype))
    def __rtruediv__(self, o): return Bin("/", wrap(o, self.dtype), self)
    def __floordiv__(self, o): return Bin("floordiv", self, wrap(o, self.dtype))
    def __mod__(self, o): return Bin("floormod", self, wrap(o, self.dtype))
    def __neg__(self): return Unary("neg", self)

    # TVM's PrimExpr ordering comparisons build expressions (== keeps its Python meaning here: use .equal)
    def __lt__(self, o): return Bin("<", self, wrap(o, self.dtype))
    def __le__(self, o): return Bin("<=", self, wrap(o, self.dtype))
    def __gt__(self, o): return Bin(">", self, wrap(o, self.dtype))
    def __ge__(self, o): return Bin(">=", self, wrap(o, self.dtype))
    __hash__ = object.__hash__

    def equal(self, o):
        """TVM's PrimExpr.equal: the comparison self == o as an expression."""
        return Bin("==", self, wrap(o, self.dtype))


def wrap(x, dtype=INDEX) -> Expr:
    if isinstance(x, Expr):
        return x
    v = getattr(x, "var", None)         # a te.IterVar stands for its variable
    if isinstance(v, Var):
        return v
    if isinstance(x, (bool, np.bool_)):
        return Const(bool(x), "bool")
    if isinstance(x, (int, np.integer)) and not is_float(dtype):
        return Const(int(x), dtype)
    return Const(x, dtype)


class Var(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str, dtype: str = INDEX):
        self.name, self.dtype, self._key = name, dtype, None

    def _make_key(self):
        return ("var", id(self))

    def __repr__(self):
        return self.name


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value, dtype: str):
        if dtype == "bool":
            value = bool(value)
        elif is_float(dtype):
            value = float(np.dtype(dtype).type(value))
        else:
            value = int(value)
        self.value, self.dtype, self._key = value, dtype, None

    def _make_key(self):
        v = self.value
        # distinguish -0.0 and NaN reliably
        if isinstance(v, float):
            v = np.float64(v).tobytes()
        return ("const", v, self.dtype)

    def __repr__(self):
        return repr(self.value)


BIN_OPS = ("+", "-", "*", "/", "%", "floordiv", "floormod", "min", "max", "&&", "||", "<<", ">>", "&", "|", "^",
           "<", "<=", ">", ">=", "==", "!=")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=", "&&", "||")
_BIN_OPS = frozenset(BIN_OPS)


class Bin(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr):
        if op not in _BIN_OPS:
            raise InternalError(f"unknown binary op {op!r}")
        if not (isinstance(a, Expr) and isinstance(b, Expr)):
            a, b = wrap(a, getattr(b, "dtype", INDEX)), wrap(b, getattr(a, "dtype", INDEX))
        if op not in ("&&", "||") and a.dtype != b.dtype:
            raise InternalError(f"dtype mismatch in {op}: {a.dtype} vs {b.dtype}")
        self.op, self.a, self.b, self._key = op, a, b, None
        self.dtype = "bool" if op in CMP_OPS else a.dtype

    def _make_key(self):
        return ("bin", self.op, self.a.key(), self.b.key())

    def __bool__(self):
        if self.op in ("<", "<=", ">", ">="):
            raise InternalError(f"the comparison {self!r} is an expression, not a Python bool (builtin min/max or "
                                "`if` on expressions: use tir.min/max or tir.if_then_else)")
        return True

    def __repr__(self):
        return f"({self.a!r} {self.op} {self.b!r})"


class Unary(Expr):
    __slots__ = ("op", "a")

    def __init__(self, op: str, a: Expr):
        if op not in ("neg", "not", "bnot"):
            raise InternalError(f"unknown unary op {op!r}")
        self.op, self.a, self._key = op, a, None
        self.dtype = "bool" if op == "not" else a.dtype

    def _make_key(self):
        return ("un", self.op, self.a.key())


class Select(Expr):
    __slots__ = ("cond", "t", "f")

    def __init__(self, cond: Expr, t, f):
        t = wrap(t, getattr(f, "dtype", INDEX))
        f = wrap(f, t.dtype)
        if t.dtype != f.dtype:
            raise InternalError(f"select branches differ: {t.dtype} vs {f.dtype}")
        self.cond, self.t, self.f, self.dtype, self._key = cond, t, f, t.dtype, None

    def _make_key(self):
        return ("sel", self.cond.key(), self.t.key(), self.f.key())


MATH_FUNCS = ("exp", "log", "sqrt", "tanh", "erf", "fabs", "pow", "floor", "ceil", "round",
              "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
              "atanh", "fmod", "isnan", "isinf", "nearbyint", "log1p", "expm1",
              "fma",       # fma(x, y, z) = x * y + z rounded once (schedules contract accumulations)
              "f16round", "bf16round",   # round to the nearest float16 / bfloat16 (per-op semantics)
              # gemmlowp's int32 fixed point (aot/ops/fixed_point.py): SaturatingRoundingDoublingHighMul
              # and RoundingDivideByPOT, one call each so that a requantisation reads its operand once
              "srdhm", "rdbpot")


TENSOR_INTRINSICS = set()    # names of the micro-kernels aot/tir/intrin/ registers (tensorize)


class Call(Expr):
    """A pure math intrinsic, or a tensor intrinsic (aot/tir/intrin/) whose pointer arguments
    are loads of the first elements it reads; renderers map the name to their own function."""
    __slots__ = ("fn", "args")

    def __init__(self, fn: str, args, dtype: str | None = None):
        if fn not in MATH_FUNCS and fn not in TENSOR_INTRINSICS:
            raise InternalError(f"unknown math function {fn!r}")
        self.fn, self.args = fn, tuple(args)
        self.dtype = dtype or self.args[0].dtype
        self._key = None

    def _make_key(self):
        return ("call", self.fn, self.dtype, tuple(a.key() for a in self.args))


class Cast(Expr):
    __slots__ = ("a",)

    def __init__(self, dtype: str, a: Expr):
        self.dtype, self.a, self._key = dtype, a, None

    def _make_key(self):
        return ("cast", self.dtype, self.a.key())


class Load(Expr):
    """Read buffer[index]. The index is one flat element index, or (between lowering and
    flattening, so that schedules can change a buffer's layout) one index per dimension of
    the buffer's shape. Only flat loads reach the verifier and the renderers."""
    __slots__ = ("buffer", "indices")

    def __init__(self, buffer, index):
        idx = tuple(wrap(i) for i in index) if isinstance(index, (tuple, list)) else (wrap(index),)
        if len(idx) != 1 and len(idx) != len(buffer.shape):
            raise InternalError(f"load of {buffer!r} with {len(idx)} indices")
        self.buffer, self.indices, self.dtype, self._key = buffer, idx, buffer.dtype, None

    @property
    def index(self):
        if len(self.indices) != 1:
            raise InternalError(f"load of {self.buffer!r} is not flattened")
        return self.indices[0]

    def _make_key(self):
        return ("load", id(self.buffer), tuple(i.key() for i in self.indices))


# helpers -------------------------------------------------------------------
def lt(a, b): return Bin("<", a, b)
def le(a, b): return Bin("<=", a, b)
def gt(a, b): return Bin(">", a, b)
def ge(a, b): return Bin(">=", a, b)
def eq(a, b): return Bin("==", a, b)
def ne(a, b): return Bin("!=", a, b)
def and_(a, b): return Bin("&&", a, b)
def or_(a, b): return Bin("||", a, b)
def not_(a): return Unary("not", a)
def min_(a, b): return Bin("min", a, b)
def max_(a, b): return Bin("max", a, b)
def select(c, t, f): return Select(c, t, f)
def cast(dtype, a): return a if a.dtype == dtype else Cast(dtype, a)
def call(fn, *args, dtype=None): return Call(fn, [wrap(a, args[0].dtype) for a in args], dtype)
def const(v, dtype=None):
    if dtype is None:
        dtype = "bool" if isinstance(v, bool) else INDEX if isinstance(v, (int, np.integer)) else "float32"
    return Const(v, dtype)


# TVM's tir index arithmetic: floor division and modulo (non-negative remainder)
def indexdiv(a, b): return Bin("floordiv", wrap(a), wrap(b))
def indexmod(a, b): return Bin("floormod", wrap(a), wrap(b))
def floordiv(a, b): return Bin("floordiv", wrap(a), wrap(b))
def floormod(a, b): return Bin("floormod", wrap(a), wrap(b))


def max_nan(a, b):
    """max that propagates a NaN from either side, as numpy.maximum and onnxruntime's Max,
    Relu and Clip do; plain `max` is `a > b ? a : b`, which drops a NaN in a."""
    if not is_float(a.dtype):
        return max_(a, b)
    return Select(or_(gt(a, b), Call("isnan", [a], "bool")), a, b)


def holds_extreme(v, ext):
    """v is the value a NaN-propagating max/min over a set containing v returned: equal to
    it, or NaN (the extreme is NaN exactly when the set holds one, and NaN != NaN)."""
    if not is_float(v.dtype):
        return eq(v, ext)
    return or_(eq(v, ext), Call("isnan", [v], "bool"))


def min_nan(a, b):
    """min that propagates a NaN from either side (see max_nan)."""
    if not is_float(a.dtype):
        return min_(a, b)
    return Select(or_(lt(a, b), Call("isnan", [a], "bool")), a, b)


def all_of(conds):
    out = None
    for c in conds:
        out = c if out is None else and_(out, c)
    return out if out is not None else Const(True, "bool")


def children(e: Expr):
    t = type(e)         # the exact classes first: this runs for every node of every walk
    if t is Bin:
        return (e.a, e.b)
    if t is Var or t is Const:
        return ()
    if t is Load:
        return e.indices
    if t is Cast or t is Unary:
        return (e.a,)
    if isinstance(e, Bin):
        return (e.a, e.b)
    if isinstance(e, (Unary, Cast)):
        return (e.a,)
    if isinstance(e, Select):
        return (e.cond, e.t, e.f)
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Load):
        return e.indices
    ext = getattr(e, "_children", None)     # nodes defined by the TE layer
    return ext() if ext is not None else ()


def rebuild(e: Expr, kids):
    """The same node with new children (returns e itself if nothing changed)."""
    if type(e) is Bin:
        a, b = kids
        return e if (a is e.a and b is e.b) else Bin(e.op, a, b)
    old = children(e)
    if len(old) == len(kids) and all(a is b for a, b in zip(old, kids)):
        return e
    if isinstance(e, Bin):
        return Bin(e.op, *kids)
    if isinstance(e, Unary):
        return Unary(e.op, kids[0])
    if isinstance(e, Cast):
        return Cast(e.dtype, kids[0])
    if isinstance(e, Select):
        return Select(*kids)
    if isinstance(e, Call):
        return Call(e.fn, kids, e.dtype)
    if isinstance(e, Load):
        return Load(e.buffer, tuple(kids) if len(kids) > 1 else kids[0])
    return e._rebuild(kids)


def transform(e: Expr, fn, memo: dict | None = None):
    """Post-order rewrite: fn(node_with_new_children) -> replacement or None to keep.
    With a memo (kept by the caller across calls; only for an fn without side effects whose
    answer depends on the node alone) a shared sub-expression is rewritten once."""
    if memo is not None:
        hit = memo.get(id(e))
        if hit is not None:
            return hit[1]
    orig = e
    kids = children(e)
    if kids:
        e = rebuild(e, [transform(k, fn, memo) for k in kids])
    r = fn(e)
    out = e if r is None else r
    if memo is not None:
        memo[id(orig)] = (orig, out)     # holding orig keeps its id from being reused
    return out


def substitute(e: Expr, mapping: dict) -> Expr:
    """Replace Vars (keyed by id) with expressions."""
    if not mapping:
        return e
    return substituter(mapping)(e)


def substituter(mapping: dict):
    """substitute(., mapping) as one function for many expressions: a sub-expression they
    share (the unrolled and tiled bodies share most of theirs) is rewritten once."""
    memo = {}       # id(node) -> (node, result); holding node keeps its id from being reused
    keys = mapping.keys()

    def sub(x):
        hit = memo.get(id(x))
        if hit is not None:
            return hit[1]
        if isinstance(x, Var):
            r = mapping.get(id(x), x)
        elif keys.isdisjoint(free_vars(x)):
            r = x
        else:
            r = rebuild(x, [sub(k) for k in children(x)])
        memo[id(x)] = (x, r)
        return r
    return sub if mapping else (lambda x: x)


_NO_VARS = frozenset()


def free_vars(e: Expr) -> frozenset:
    """The ids of the Vars e reads (cached on the node: expressions are immutable)."""
    f = getattr(e, "_free", None)
    if f is None:
        if isinstance(e, Var):
            f = frozenset((id(e),))
        else:
            f = _NO_VARS
            for k in children(e):
                kf = free_vars(k)
                if kf:
                    f = kf if not f else (f if kf <= f else f | kf)
        e._free = f
    return f


def preorder(root, kids_of):
    """Every node under root, pre-order (iterative: deep trees cost no generator chain)."""
    stack = [root]
    while stack:
        x = stack.pop()
        yield x
        kids = kids_of(x)
        if kids:
            stack.extend(reversed(kids))


def walk(e: Expr):
    """Every node of e, pre-order."""
    return preorder(e, children)
