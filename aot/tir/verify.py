"""Static check of a PrimFunc's memory accesses: every load and store that is executed
unconditionally must be inside its buffer, by interval analysis over the loop ranges.

Accesses under a Select or If (padding, scatter, gathers by data) are guarded by their
condition and only counted; the ASan builds in the tests cover them dynamically.

An index is computed in C's int32_t: an access counts as proven only when the buffer fits
that type and no term of its index can overflow it (wrapped arithmetic would be in bounds
on paper and anywhere in memory in C)."""
from __future__ import annotations

from dataclasses import dataclass

from .expr import INDEX, Bin, Call, Cast, Const, Load, Select, Unary, Var, cast, children, substitute, walk
from .intrin import get_intrin
from .simplify import bounds, from_linear, linear_form, loop_ranges, simplify
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


def endpoints(index, loops):
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
    memo = {}           # each node's interval once, not once per node above it
    for x in walk(index):
        lim = INT_RANGE.get(x.dtype)
        if lim is None:
            continue
        b = bounds(x, ranges, memo)
        if b is None or b[0] < lim[0] or b[1] > lim[1]:
            return False
    return True


def _loop_vars_of(e, pos):
    """Positions (in pos) of the loop variables e reads; None when it reads any other Var."""
    out = set()
    for x in walk(e):
        if isinstance(x, Var):
            p = pos.get(id(x))
            if p is None:
                return None
            out.add(p)
    return out


def _canon(e, pos):
    """e's structural key with each loop variable named by its position in the nest, so that
    the same index over the same loop shape in another kernel has the same key."""
    if isinstance(e, Var):
        return ("lv", pos[id(e)], e.dtype)
    if isinstance(e, Const):
        return e.key()
    if not isinstance(e, (Bin, Unary, Cast, Select, Call)):
        raise _NoKey
    return (type(e).__name__, getattr(e, "op", None), getattr(e, "fn", None), e.dtype,
            tuple(_canon(k, pos) for k in children(e)))


class _NoKey(Exception):
    """A node _canon does not know the whole structure of: its proof is not shared."""


# canonical (index, loop shape) -> exact (lo, hi) or None. Keys hold no object identities (every
# Var is a loop position, Loads never reach it), so the proofs are shared by every compile.
_PROOFS: dict = {}
_MAX_PROOFS = 1 << 16


def _relevant_loops(e, loops):
    """The loops e depends on, directly or through the bounds of a loop it depends on, in nest
    order; None when e or those bounds read a variable that is no loop of the nest. endpoints
    skips every other loop, so its result over these is its result over the whole nest."""
    pos = {id(v): k for k, (v, _, _) in enumerate(loops)}
    need = _loop_vars_of(e, pos)
    if need is None:
        return None
    todo = list(need)
    while todo:
        _, mn, ext = loops[todo.pop()]
        for b in (mn, ext):
            more = _loop_vars_of(b, pos)
            if more is None:
                return None
            for k in more - need:
                need.add(k)
                todo.append(k)
    return [loops[k] for k in sorted(need)]


def _value(e, env):
    """e's integer value with the loop variables of env set; None for anything else."""
    if isinstance(e, Const):
        return e.value if isinstance(e.value, int) and not isinstance(e.value, bool) else None
    if isinstance(e, Var):
        return env.get(id(e))
    if not isinstance(e, Bin) or e.op not in _ARITH:
        return None
    a, b = _value(e.a, env), _value(e.b, env)
    if a is None or b is None or (e.op in ("floordiv", "floormod") and b <= 0):
        return None
    return _ARITH[e.op](a, b)


_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "min": min, "max": max, "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b}


def _by_outer_values(terms, loops, limit=4096):
    """(lo, hi) of sum(coeff * var) over a nest whose bounds depend on outer loops (a padded
    window clipped by the output position), exact: the loops fall into groups that no bound
    links (rows and columns of a 2-D window), whose iteration sets multiply, so each group's
    range adds up; within a group every value of the loops that other loops' bounds read is
    enumerated and the rest are intervals for each. None (the symbolic proof takes over) past
    `limit` cases in a group, on an empty inner loop, or on a term that is no loop."""
    if not all(isinstance(a, Var) for a, _ in terms.values()):
        return None
    coeff = {id(a): k for a, k in terms.values()}
    lo = hi = 0
    for group in _unlinked_groups(loops):
        r = _group_range(group, coeff, limit)
        if r is None:
            return None
        lo, hi = lo + r[0], hi + r[1]
    return lo, hi


def _unlinked_groups(loops):
    """loops split into groups (each in nest order) such that no loop's bounds read a loop of
    another group: the nest's iteration set is the product of the groups' sets."""
    pos = {id(v): k for k, (v, _, _) in enumerate(loops)}
    root = list(range(len(loops)))

    def find(k):
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k
    for k, (_, mn, ext) in enumerate(loops):
        for b in (mn, ext):
            for x in walk(b):
                if isinstance(x, Var):
                    root[find(pos[id(x)])] = find(k)
    groups = {}
    for k in range(len(loops)):
        groups.setdefault(find(k), []).append(loops[k])
    return list(groups.values())


def _group_range(loops, coeff, limit):
    outer = {id(x) for _, mn, ext in loops for b in (mn, ext) for x in walk(b) if isinstance(x, Var)}
    budget = [limit]
    best = [None, None]

    def go(k, env, lo, hi):
        if k == len(loops):
            budget[0] -= 1
            if budget[0] < 0:
                return False
            best[0] = lo if best[0] is None else min(best[0], lo)
            best[1] = hi if best[1] is None else max(best[1], hi)
            return True
        v, mn, ext = loops[k]
        m, n = _value(mn, env), _value(ext, env)
        if m is None or n is None or n < 1:
            return False
        c = coeff.get(id(v), 0)
        if id(v) not in outer:
            a, b = c * m, c * (m + n - 1)
            return go(k + 1, env, lo + min(a, b), hi + max(a, b))
        for x in range(m, m + n):
            env[id(v)] = x
            if not go(k + 1, env, lo + c * x, hi + c * x):
                return False
        del env[id(v)]
        return True
    return (best[0], best[1]) if go(0, {}, 0, 0) else None


def _const_box(loops):
    """{id(var): (first, last)} of the loops with constant, non-empty ranges (an inner loop
    that rebinds a variable wins, as in _relevant_loops)."""
    box = {}
    for v, mn, ext in loops:
        if isinstance(mn, Const) and isinstance(ext, Const) and ext.value >= 1:
            box[id(v)] = (mn.value, mn.value + ext.value - 1)
        else:
            box.pop(id(v), None)
    return box


def _nest_endpoints(index, loops):
    """endpoints(index, loops), proven once per loop nest rather than once per unrolled lane:
    the index's constant is split off (lanes differ only in it) and the rest is proven over
    the loops it depends on, by interval sums when those are rectangular, else by endpoints,
    each proof cached under a key canonical across kernels. Falls back to endpoints on the
    whole index, so it proves everything endpoints proves, with the same numbers."""
    lin = linear_form(index)
    if lin is None:
        return endpoints(index, loops)
    terms, c = lin
    box = _const_box(loops)
    if all(isinstance(a, Var) and id(a) in box for a, _ in terms.values()):
        # a linear index over loops of constant ranges, which no other loop's bounds can
        # narrow: each term at its own end is exact
        lo = hi = c
        for a, k in terms.values():
            r0, r1 = box[id(a)]
            lo += min(k * r0, k * r1)
            hi += max(k * r0, k * r1)
        return lo, hi
    rest = from_linear(terms, 0, index.dtype)
    sub = _relevant_loops(rest, loops)
    if sub is None:
        return endpoints(index, loops)
    pos = {id(v): k for k, (v, _, _) in enumerate(sub)}
    try:
        key = (_canon(rest, pos), tuple((_canon(mn, pos), _canon(ext, pos)) for _, mn, ext in sub))
    except _NoKey:
        key = None
    if key is not None and key in _PROOFS:
        r = _PROOFS[key]
    else:
        r = _by_outer_values(terms, sub)
        if r is None:
            r = endpoints(rest, sub)
        if key is not None:
            if len(_PROOFS) >= _MAX_PROOFS:
                _PROOFS.clear()     # a long-lived process (a server, the test suite) stays bounded
            _PROOFS[key] = r
    if r is not None:
        return r[0] + c, r[1] + c
    return endpoints(index, loops)


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
    exact = _nest_endpoints(index, loops) if loops else None
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
