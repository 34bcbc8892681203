"""Static check of a PrimFunc's memory accesses: every load and store that is executed
unconditionally must be inside its buffer, by interval analysis over the loop ranges.

Accesses under a Select or If (padding, scatter, gathers by data) are guarded by their
condition and only counted; the ASan builds in the tests cover them dynamically.

An index is computed in C's int32_t: an access counts as proven only when the buffer fits
that type and no term of its index can overflow it (wrapped arithmetic would be in bounds
on paper and anywhere in memory in C)."""
from __future__ import annotations

from dataclasses import dataclass

from .expr import INDEX, Bin, Call, Const, Load, Select, Unary, cast, children, substitute, walk
from .intrin import get_intrin
from .simplify import bounds, loop_ranges, simplify
from .stmt import PrimFunc, StmtVisitor


class AccessError(AssertionError):
    pass


INT_RANGE = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


@dataclass
class AccessReport:
    checked: int = 0
    guarded: int = 0
    data_dependent: int = 0
    unproven: int = 0


def _sign(e, var):
    """+1/-1 if e is non-decreasing/non-increasing in var, 0 if it does not depend on it,
    None if neither can be shown."""
    if e is var:
        return 1
    if not any(x is var for x in walk(e)):
        return 0
    if isinstance(e, Bin):
        a, b = _sign(e.a, var), _sign(e.b, var)
        if a is None or b is None:
            return None
        if e.op == "-":
            b = -b
        if e.op in ("+", "-", "min", "max"):
            if a and b and a != b:
                return None
            return a or b
        if e.op == "*":
            k = e.b if isinstance(e.b, Const) else e.a if isinstance(e.a, Const) else None
            if k is None:
                return None
            return (a or b) * (1 if k.value >= 0 else -1)
        if e.op in ("floordiv", "/") and isinstance(e.b, Const) and e.b.value > 0:
            return a
        return None
    if isinstance(e, Unary) and e.op == "neg":
        s = _sign(e.a, var)
        return None if s is None else -s
    return None


def _distribute(e):
    """Push +, - and multiplication by constants inside min/max so that terms can cancel:
    a + min(b, c) -> min(a + b, a + c)."""
    if not isinstance(e, Bin):
        return e
    a, b = _distribute(e.a), _distribute(e.b)
    mm = ("min", "max")
    if e.op in ("+", "-"):
        if isinstance(b, Bin) and b.op in mm:
            op = b.op if e.op == "+" else ("max" if b.op == "min" else "min")
            return Bin(op, _distribute(Bin(e.op, a, b.a)), _distribute(Bin(e.op, a, b.b)))
        if isinstance(a, Bin) and a.op in mm:
            return Bin(a.op, _distribute(Bin(e.op, a.a, b)), _distribute(Bin(e.op, a.b, b)))
    if e.op == "*":
        k, m = (b, a) if isinstance(b, Const) else (a, b) if isinstance(a, Const) else (None, None)
        if k is not None and isinstance(m, Bin) and m.op in mm:
            op = m.op if k.value >= 0 else ("max" if m.op == "min" else "min")
            return Bin(op, _distribute(Bin("*", m.a, k)), _distribute(Bin("*", m.b, k)))
    return Bin(e.op, a, b) if (a is not e.a or b is not e.b) else e


def _endpoints(index, loops):
    """Exact (lo, hi) of index over the loop nest, substituting each loop's first or last
    value from the inside out; None when the index is not monotone in some loop."""
    lo = hi = simplify(_distribute(index))
    for var, mn, ext in reversed(loops):
        last = mn + ext - Const(1, "int32")
        for which in ("lo", "hi"):
            e = lo if which == "lo" else hi
            if not any(x is var for x in walk(e)):
                continue        # independent of this loop: nothing to substitute
            sg = _sign(e, var)
            if sg is None:
                return None
            pick = mn if (sg >= 0) == (which == "lo") else last
            e = simplify(_distribute(simplify(substitute(e, {id(var): pick}))))
            if which == "lo":
                lo = e
            else:
                hi = e
    lo, hi = simplify(lo), simplify(hi)
    if isinstance(lo, Const) and isinstance(hi, Const):
        return lo.value, hi.value
    return None


def _overflow_free(index, ranges):
    """Every integer term of index provably within its C type over the loop ranges."""
    for x in walk(index):
        lim = INT_RANGE.get(x.dtype)
        if lim is None:
            continue
        b = bounds(x, ranges)
        if b is None or b[0] < lim[0] or b[1] > lim[1]:
            return False
    return True


def _check(buf, index, ranges, report, where, loops=(), cache=None):
    if cache is not None:
        key = (id(buf), index.key(), tuple(id(v) for v, _, _ in loops))
        verdict = cache.get(key)
        if verdict is None:
            sub = AccessReport()
            _check(buf, index, ranges, sub, where, loops)
            verdict = cache[key] = sub
        report.checked += verdict.checked
        report.data_dependent += verdict.data_dependent
        report.unproven += verdict.unproven
        return
    if any(isinstance(x, Load) for x in walk(index)):
        report.data_dependent += 1
        return
    if buf.size - 1 > INT_RANGE[INDEX][1] or not _overflow_free(index, ranges):
        report.unproven += 1
        return
    exact = _endpoints(index, loops) if loops else None
    if exact is None and not loops:
        exact = bounds(index, ranges)
    if exact is None:
        # intervals without the loops' relations may over-approximate: only a proof counts
        b = bounds(index, ranges)
        if b is not None and 0 <= b[0] and b[1] < buf.size:
            report.checked += 1
        else:
            report.unproven += 1
        return
    report.checked += 1
    if exact[0] < 0 or exact[1] >= buf.size:
        raise AccessError(f"{where}: {buf.name}[{exact[0]}..{exact[1]}] is outside its {buf.size} elements")


def _expr(e, ranges, report, where, guarded, loops, cache):
    if isinstance(e, Load):
        if guarded:
            report.guarded += 1
        else:
            _check(e.buffer, e.index, ranges, report, where, loops, cache)
    if isinstance(e, Call) and not guarded:
        it = get_intrin(e.fn)
        if it is not None:      # a micro-kernel reads runs from each pointer: check the last element too
            for k, last in it.last_offsets(e.args):
                ld = e.args[k]
                _check(ld.buffer, simplify(ld.index + cast(ld.index.dtype, last)), ranges, report, where, loops, cache)
    if isinstance(e, Select):
        _expr(e.cond, ranges, report, where, guarded, loops, cache)
        _expr(e.t, ranges, report, where, True, loops, cache)
        _expr(e.f, ranges, report, where, True, loops, cache)
        return
    for k in children(e):
        _expr(k, ranges, report, where, guarded, loops, cache)


class _Verify(StmtVisitor):
    def __init__(self, report, where):
        self.report, self.where = report, where
        self.ranges, self.guarded, self.loops, self.cache = {}, False, [], {}

    def visit_expr(self, e):
        _expr(e, self.ranges, self.report, self.where, self.guarded, self.loops, self.cache)

    def visit_For(self, s):
        n = bounds(s.extent, self.ranges)
        if bounds(s.min, self.ranges) is not None and n is not None and n[1] <= 0:
            return
        saved = self.ranges, self.loops
        self.ranges, self.loops = loop_ranges(self.ranges, s), self.loops + [(s.var, s.min, s.extent)]
        self.visit(s.body)
        self.ranges, self.loops = saved

    def visit_Store(self, s):
        if self.guarded:
            self.report.guarded += 1
        else:
            _check(s.buffer, s.index, self.ranges, self.report, self.where, self.loops, self.cache)
        self.visit_expr(s.value)

    def visit_IfThenElse(self, s):
        self.visit_expr(s.cond)
        saved, self.guarded = self.guarded, True
        self.visit(s.then)
        if s.else_ is not None:
            self.visit(s.else_)
        self.guarded = saved


def verify_accesses(func: PrimFunc, report: AccessReport | None = None) -> AccessReport:
    report = report or AccessReport()
    _Verify(report, func.name).visit(func.body)
    return report
