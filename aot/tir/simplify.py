"""Index and arithmetic simplification for loop IR.

Integer expressions built from +, -, and * by constants are brought to a canonical linear
form (sum of coeff*atom + const), which collapses the nested index arithmetic that
flattening multi-dimensional accesses produces. Interval bounds of loop variables let
min/max/floordiv/floormod/comparisons fold where their result is known.
"""
from __future__ import annotations

import math

from .expr import Bin, Cast, Const, Expr, Select, Unary, Var, children, is_float, rebuild, substituter
from .stmt import Allocate, For, IfThenElse, Seq, Stmt, StmtMutator, map_exprs, uses_buffer

Ranges = dict  # id(Var) -> (lo, hi) inclusive integer bounds


def const_value(e):
    return e.value if isinstance(e, Const) else None


def bounds(e: Expr, ranges: Ranges, memo: dict | None = None):
    """Inclusive integer interval of e, or None when unknown. memo (id(node) -> (node,
    interval), the caller's, for one `ranges`) shares the intervals of sub-expressions
    between calls on the nodes of one tree."""
    if memo is None:
        return _bounds(e, ranges, None)
    hit = memo.get(id(e))
    if hit is None:
        hit = memo[id(e)] = (e, _bounds(e, ranges, memo))
    return hit[1]


def _bounds(e, ranges, memo):
    sub = _bounds if memo is None else bounds
    if isinstance(e, Const) and not is_float(e.dtype):
        return (int(e.value), int(e.value))
    if isinstance(e, Var):
        return ranges.get(id(e))
    if isinstance(e, Bin) and not is_float(e.dtype):
        a, b = sub(e.a, ranges, memo), sub(e.b, ranges, memo)
        if a is None or b is None:
            return None
        if e.op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if e.op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if e.op == "*":
            c = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
            return (min(c), max(c))
        if e.op == "min":
            return (min(a[0], b[0]), min(a[1], b[1]))
        if e.op == "max":
            return (max(a[0], b[0]), max(a[1], b[1]))
        if e.op == "floordiv" and b[0] == b[1] and b[0] > 0:
            return (a[0] // b[0], a[1] // b[0])
        if e.op in ("floormod", "%") and b[0] == b[1] and b[0] > 0 and (e.op == "floormod" or a[0] >= 0):
            if a[0] >= 0 and a[1] < b[0]:       # (C's % of a non-negative value: the same)
                return a
            return (0, b[0] - 1)
    if isinstance(e, Select):
        t, f = sub(e.t, ranges, memo), sub(e.f, ranges, memo)
        if t is None or f is None:
            return None
        return (min(t[0], f[0]), max(t[1], f[1]))
    return None


# linear form -----------------------------------------------------------------
def _linear(e: Expr):
    """{atom_key: (atom, coeff)} and constant, or None if e is not linear over ints.
    The form is cached on the node: callers read it and never change it."""
    if is_float(e.dtype) or e.dtype == "bool":
        return None
    lin = getattr(e, "_lin", None)
    if lin is None:
        lin = e._lin = _linear_uncached(e)
    return lin


def _linear_uncached(e: Expr):
    if isinstance(e, Const):
        return {}, int(e.value)
    if isinstance(e, Bin) and e.op in ("+", "-"):
        la, lb = _linear(e.a), _linear(e.b)
        if la is None or lb is None:
            return None
        terms = dict(la[0])
        s = 1 if e.op == "+" else -1
        for k, (atom, c) in lb[0].items():
            old = terms.get(k, (atom, 0))[1]
            terms[k] = (atom, old + s * c)
        return terms, la[1] + s * lb[1]
    if isinstance(e, Bin) and e.op == "*":
        la, lb = _linear(e.a), _linear(e.b)
        if la is not None and lb is not None:
            if not la[0]:
                la, lb = lb, la
            if not lb[0]:
                c = lb[1]
                return {k: (a, v * c) for k, (a, v) in la[0].items()}, la[1] * c
    if isinstance(e, Unary) and e.op == "neg":
        la = _linear(e.a)
        if la is not None:
            return {k: (a, -v) for k, (a, v) in la[0].items()}, -la[1]
    return {e.key(): (e, 1)}, 0


def linear_form(e: Expr):
    """e as ({atom_key: (atom, coeff)}, constant), or None when e is not an integer expression.
    Atoms are the maximal sub-expressions that are not sums or constant multiples."""
    return _linear(e)


def from_linear(terms, c, dtype):
    """Rebuild sum(coeff*atom) + c with positive terms first: (i*8 + j - 9), (1 - i).
    Every sum and product built here is marked canonical: rebuilding it from its own linear
    form gives the same tree, so _simplify_node keeps it as it is."""
    def bin_(op, a, b):
        out = Bin(op, a, b)
        out._canon = True
        return out

    def term(atom, k):
        return atom if k == 1 else bin_("*", atom, Const(k, dtype))
    const = c
    pos = [(a, k) for a, k in terms.values() if k > 0]
    neg = [(a, -k) for a, k in terms.values() if k < 0]
    out = None
    for a, k in pos:
        out = term(a, k) if out is None else bin_("+", out, term(a, k))
    if out is None:
        out = Const(c, dtype)
        c = 0
    elif c > 0:
        out = bin_("+", out, Const(c, dtype))
    for a, k in neg:
        out = bin_("-", out, term(a, k))
    if c < 0:
        out = bin_("-", out, Const(-c, dtype))
    if getattr(out, "_lin", None) is None and not (is_float(dtype) or dtype == "bool"):
        # what _linear would find walking out: its terms, positive ones first, zeros dropped
        out._lin = ({a.key(): (a, k) for a, k in pos} | {a.key(): (a, -k) for a, k in neg}, const)
    return out


def _fold_const_bin(op, a, b, dtype):
    fl = is_float(dtype)
    try:
        if op == "+": return a + b
        if op == "-": return a - b
        if op == "*": return a * b
        if op == "/":
            if fl:
                return a / b if b != 0 else None
            if b == 0:
                return None
            q = abs(int(a)) // abs(int(b))          # C truncating division, exact for int64
            return q if (a < 0) == (b < 0) else -q
        if op == "floordiv": return a // b if b != 0 and not fl else None
        if op == "floormod": return a % b if b != 0 and not fl else None
        if op == "min": return min(a, b)
        if op == "max": return max(a, b)
        if op == "<": return a < b
        if op == "<=": return a <= b
        if op == ">": return a > b
        if op == ">=": return a >= b
        if op == "==": return a == b
        if op == "!=": return a != b
        if op == "&&": return bool(a) and bool(b)
        if op == "||": return bool(a) or bool(b)
    except (OverflowError, ZeroDivisionError):
        return None
    return None


def _simplify_node(e: Expr, ranges: Ranges) -> Expr:
    if isinstance(e, Bin):
        a, b = e.a, e.b
        ca, cb = const_value(a), const_value(b)
        if ca is not None and cb is not None:
            v = _fold_const_bin(e.op, ca, cb, a.dtype)
            if v is not None and not (isinstance(v, float) and math.isnan(v) and not is_float(e.dtype)):
                return Const(v, e.dtype)
        fl = is_float(e.dtype) or is_float(a.dtype)
        op = e.op
        # float x + 0.0 is not x when x is -0.0, so only the exact identities fold
        if not fl and op in ("+", "-") and cb == 0:
            return a
        if fl and op == "-" and cb == 0.0 and str(cb) == "0.0":
            return a
        if op == "+" and ca == 0 and not fl:
            return b
        if op == "*" and not fl:
            if cb == 1: return a
            if ca == 1: return b
            if cb == 0 or ca == 0: return Const(0, e.dtype)
        if op == "*" and fl and cb == 1.0:
            return a
        if op == "/" and cb == 1:
            return a
        if not fl and e.dtype != "bool" and op in ("+", "-", "*"):
            if getattr(e, "_canon", False):
                return e
            lin = _linear(e)
            if lin is not None:
                return from_linear(lin[0], lin[1], e.dtype)
        if not fl and op in ("floordiv", "floormod") and cb is not None and cb > 0:
            if cb == 1:
                return a if op == "floordiv" else Const(0, e.dtype)
            ba = bounds(a, ranges)
            if ba is not None and 0 <= ba[0] and ba[1] < cb:
                return Const(0, e.dtype) if op == "floordiv" else a
            lin = _linear(a)
            if lin is not None and all(c % cb == 0 for _, c in lin[0].values()):
                # (k*cb*x + c) // cb == k*x + c // cb  (exact for floor semantics)
                q = {k: (at, c // cb) for k, (at, c) in lin[0].items()}
                if op == "floordiv":
                    return from_linear(q, lin[1] // cb, e.dtype)
                return Const(lin[1] % cb, e.dtype)
            if lin is not None:
                # (cb*q + r) // cb == q + m and (cb*q + r) % cb == r - m*cb when every value of r
                # lies in [m*cb, (m+1)*cb): how a split or packed index splits back into its parts
                q = {k: (at, c // cb) for k, (at, c) in lin[0].items() if c % cb == 0}
                r = {k: v for k, v in lin[0].items() if v[1] % cb}
                br = bounds(from_linear(r, lin[1], e.dtype), ranges) if q else None
                if br is not None and br[0] // cb == br[1] // cb:
                    m = br[0] // cb
                    if op == "floordiv":
                        return from_linear(q, m, e.dtype)
                    return from_linear(r, lin[1] - m * cb, e.dtype)
                out = _split_by_factor(lin, cb, op, e.dtype, ranges)
                if out is not None:
                    return out
        if op in ("min", "max", "<", "<=", ">", ">=", "==", "!=") and not fl:
            ba, bb = bounds(a, ranges), bounds(b, ranges)
            if ba is not None and bb is not None:
                if op == "min":
                    if ba[1] <= bb[0]: return a
                    if bb[1] <= ba[0]: return b
                elif op == "max":
                    if ba[0] >= bb[1]: return a
                    if bb[0] >= ba[1]: return b
                else:
                    lo = _fold_const_bin(op, ba[0], bb[1], a.dtype), _fold_const_bin(op, ba[1], bb[0], a.dtype)
                    hi = _fold_const_bin(op, ba[1], bb[0], a.dtype), _fold_const_bin(op, ba[0], bb[1], a.dtype)
                    outcomes = set(lo) | set(hi)
                    if op in ("<", "<=", ">", ">=") and len(outcomes) == 1:
                        return Const(outcomes.pop(), "bool")
                    if op == "==" and (ba[1] < bb[0] or bb[1] < ba[0]):
                        return Const(False, "bool")
        if op == "&&":
            if ca is True: return b
            if cb is True: return a
            if ca is False or cb is False: return Const(False, "bool")
        if op == "||":
            if ca is False: return b
            if cb is False: return a
            if ca is True or cb is True: return Const(True, "bool")
        return e
    if isinstance(e, Select):
        c = const_value(e.cond)
        if c is not None:
            return e.t if c else e.f
        if e.t.key() == e.f.key():
            return e.t
        return e
    if isinstance(e, Unary):
        c = const_value(e.a)
        if c is not None:
            return Const((not c) if e.op == "not" else -c, e.dtype)
        if e.op == "neg" and isinstance(e.a, Unary) and e.a.op == "neg":
            return e.a.a
        return e
    if isinstance(e, Cast):
        c = const_value(e.a)
        if c is not None and not is_float(e.dtype) and not is_float(e.a.dtype) and e.dtype != "bool":
            return Const(c, e.dtype)
        if c is not None and is_float(e.dtype) and not isinstance(c, bool):
            return Const(float(c), e.dtype)
        if e.a.dtype == e.dtype:
            return e.a
        return e
    return e


def _merge_divmod(lin):
    """(x // c) * c*k + (x % c) * k == x * k: a fused or split index put back together (the
    identity x == (x // c) * c + x % c, exact for floor division)."""
    terms, c0 = lin
    mods = {(a.a.key(), a.b.value): (key, a, k) for key, (a, k) in terms.items()
            if isinstance(a, Bin) and a.op == "floormod" and isinstance(a.b, Const) and a.b.value > 0}
    if not mods:
        return lin
    out, changed = dict(terms), False
    for key, (a, k) in terms.items():
        if not (isinstance(a, Bin) and a.op == "floordiv" and isinstance(a.b, Const)) or key not in out:
            continue
        m = mods.get((a.a.key(), a.b.value))
        if m is None or m[0] not in out or k != a.b.value * m[2]:
            continue
        del out[key], out[m[0]]
        inner = _linear(a.a)
        if inner is None:
            inner = ({a.a.key(): (a.a, 1)}, 0)
        for ik, (ia, ic) in inner[0].items():
            old = out.get(ik, (ia, 0))[1]
            out[ik] = (ia, old + ic * m[2])
        c0 += inner[1] * m[2]
        changed = True
    if not changed:
        return lin
    return {k: v for k, v in out.items() if v[1] != 0}, c0


def _split_by_factor(lin, cb, op, dtype, ranges):
    """(k*q + r) // cb == q // (cb/k) and (k*q + r) % cb == (q % (cb/k))*k + r, for k dividing cb
    and every value of r in [0, k): a channel index split into lanes that do not straddle a
    group, c = 17*co + ci (ci < 17) over groups of 68 channels, is group co // 4. None when no
    such k is found."""
    terms, c0 = lin
    for k in sorted({math.gcd(c, cb) for _, c in terms.values()}, reverse=True):
        if k <= 1 or k == cb:
            continue
        q = {key: (at, c // k) for key, (at, c) in terms.items() if c % k == 0}
        r = {key: v for key, v in terms.items() if v[1] % k}
        if not q:
            continue
        br = bounds(from_linear(r, c0, dtype), ranges)
        if br is None or br[0] < 0 or br[1] >= k:
            continue
        qe = from_linear(q, 0, dtype)
        if op == "floordiv":
            return Bin("floordiv", qe, Const(cb // k, dtype))
        return Bin("floormod", qe, Const(cb // k, dtype)) * k + from_linear(r, c0, dtype)
    return None


def simplify(e: Expr, ranges: Ranges | None = None) -> Expr:
    return _simplify(e, ranges or {}, {})


def _simplify(e, ranges, memo):
    """memo: id(node) -> (node, result) under these ranges; a sub-expression shared by several
    expressions (unrolled lanes share most of theirs) is simplified once. Holding the node
    keeps its id from being reused while the memo lives."""
    hit = memo.get(id(e))
    if hit is not None:
        return hit[1]
    orig = e
    kids = children(e)
    if kids:
        e = rebuild(e, [_simplify(k, ranges, memo) for k in kids])
    # children are already simple, so a rewrite only needs the new top node revisited
    for _ in range(3):
        prev, e = e, _simplify_node(e, ranges)
        if e is prev:
            break
    memo[id(orig)] = (orig, e)
    return e


def loop_ranges(ranges: Ranges, s: For) -> Ranges:
    """ranges extended with the interval of s.var over the loop (unchanged when unknown)."""
    lo, n = bounds(s.min, ranges), bounds(s.extent, ranges)
    if lo is None or n is None:
        return ranges
    inner = dict(ranges)
    inner[id(s.var)] = (lo[0], lo[1] + max(n[1], 1) - 1)
    return inner


class _SimplifyStmt(StmtMutator):
    """Simplify every expression with the ranges of the enclosing loops; drop empty loops,
    single-iteration loops and branches whose condition is known."""

    def __init__(self, ranges):
        self.ranges = ranges
        self.memos = {}         # id(ranges) -> (ranges, memo): one memo per loop scope

    def mutate_expr(self, e):
        m = self.memos.get(id(self.ranges))
        if m is None or m[0] is not self.ranges:
            m = self.memos[id(self.ranges)] = (self.ranges, {})
        return _simplify(e, self.ranges, m[1])

    def visit_For(self, s):
        mn, ext = self.mutate_expr(s.min), self.mutate_expr(s.extent)
        ce = const_value(ext)
        if ce is not None and ce <= 0:
            return None
        outer = self.ranges
        self.ranges = loop_ranges(outer, For(s.var, mn, ext, s.body))
        try:
            if ce == 1 and s.kind != "thread_binding":
                # a single-iteration loop is just its body with var = min
                return self.visit(map_exprs(s.body, substituter({id(s.var): mn})))
            body = self.visit(s.body)
        finally:
            self.ranges = outer
        return None if body is None else s.with_body(body, mn, ext)

    def visit_Seq(self, s):
        parts = [p for p in (self.visit(x) for x in s.stmts) if p is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Seq(parts)

    def visit_Allocate(self, s):
        # a piece of a split loop may no longer touch a buffer its schedule allocated for all
        # of them (a border's gather window in an interior piece): C would warn it unused
        body = self.visit(s.body)
        if body is None:
            return None
        return Allocate(s.buffer, body) if uses_buffer(body, s.buffer) else body

    def visit_IfThenElse(self, s):
        c = self.mutate_expr(s.cond)
        cv = const_value(c)
        if cv is True:
            return self.visit(s.then)
        if cv is False:
            return self.visit(s.else_) if s.else_ is not None else None
        then = self.visit(s.then)
        els = self.visit(s.else_) if s.else_ is not None else None
        if then is None and els is None:
            return None
        return IfThenElse(c, then if then is not None else Seq([]), els)


def simplify_stmt(s: Stmt, ranges: Ranges | None = None) -> Stmt | None:
    """s simplified under the ranges of its enclosing loops, or None when nothing is left."""
    return _SimplifyStmt(dict(ranges or {})).visit(s)


def simplify_display(e: Expr, ranges: Ranges | None = None) -> Expr:
    """simplify, and a fused or split index put back together ((x // c) * c + x % c -> x), as TVM's
    printer shows indices. Only for printing: the compiler's own expressions (and so the C it
    generates) keep what simplify gives."""
    from .expr import transform

    def merge(x):
        if isinstance(x, Bin) and x.op in ("+", "-") and not is_float(x.dtype) and x.dtype != "bool":
            lin = _linear(x)
            if lin is not None:
                m = _merge_divmod(lin)
                if m is not lin:
                    return from_linear(m[0], m[1], x.dtype)
        return None
    def order(x):
        # the terms of a sum by falling coefficient, as TVM's canonical form orders them (m * 1024 + k)
        if isinstance(x, Bin) and x.op in ("+", "-") and not is_float(x.dtype) and x.dtype != "bool":
            lin = _linear(x)
            if lin is not None and len(lin[0]) > 1:
                items = list(lin[0].items())
                ranked = sorted(items, key=lambda kv: -abs(kv[1][1]))
                if [k for k, _ in ranked] != [k for k, _ in items]:
                    return from_linear(dict(ranked), lin[1], x.dtype)
        return None
    e = simplify(e, ranges)
    out = transform(e, merge)
    if out is not e:
        e = simplify(out, ranges)
    return transform(e, order)
