"""Can a kernel write its output over one of its inputs?

Yes when every read of the input happens inside the store of the output element at the same
flat index (out[i] = f(..., in[i], ...)) and the kernel never reads its own output: each
element of the input is then read only by the statement that overwrites it, before it does.
This covers elementwise chains and the elementwise epilogues of conv/dense (a residual add).
"""
from __future__ import annotations

from .expr import Load, walk
from .stmt import Store, own_exprs, walk_stmts


def writes_over(func, in_bufs, out_buf) -> bool:
    """in_bufs: the parameters that would share out_buf's storage (an input and its views)."""
    targets = {id(b) for b in in_bufs}
    if any(b.dtype != out_buf.dtype for b in in_bufs):
        return False
    covered = 0
    for s in walk_stmts(func.body):
        if isinstance(s, Store):
            for e in walk(s.index):
                if isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out_buf):
                    return False
            for e in walk(s.value):
                if isinstance(e, Load):
                    if e.buffer is out_buf:
                        return False
                    if id(e.buffer) in targets:
                        if s.buffer is not out_buf or e.index.key() != s.index.key():
                            return False
                        covered += 1
        elif _elementwise_call(s, targets, out_buf):
            covered += 1
        else:
            for top in own_exprs(s):
                for e in walk(top):
                    if isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out_buf):
                        return False
    return covered > 0


def _elementwise_call(s, targets, out_buf) -> bool:
    """s calls an elementwise micro-kernel (aot/tir/intrin/: its element k of every pointer read
    before its element k of the one written, nothing read after it is written) that writes out_buf
    from the very element of the inputs it reads there: the call form of out[i] = f(in[i])."""
    from .expr import Call
    from .intrin import get_intrin
    from .stmt import Evaluate
    it = get_intrin(s.call.fn) if isinstance(s, Evaluate) and isinstance(s.call, Call) else None
    if it is None or not getattr(it, "elementwise", False) or len(it.written_args) != 1:
        return False
    out = s.call.args[it.written_args[0]]
    if not (isinstance(out, Load) and out.buffer is out_buf):
        return False
    at, reads = out.index.key(), 0
    for k, a in enumerate(s.call.args):
        if k in it.pointer_args and k not in it.written_args and isinstance(a, Load) \
                and (id(a.buffer) in targets or a.buffer is out_buf):
            if a.buffer is out_buf or a.index.key() != at or any(
                    isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out_buf) for e in walk(a.index)):
                return False
            reads += 1
        elif any(isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out_buf)
                 for e in walk(a if k not in it.pointer_args else a.index)):
            return False
    return reads > 0



# -- staged in-place writes: a kernel that computes a slice into a scratch buffer and copies it back
def coords(indices, shape, fixed=None):
    """The coordinate of each dimension of an access: its own indices, or a flat index taken
    apart when it is exactly sum(stride_d * var_d) with at most one loop variable per dimension
    (None otherwise). fixed: {id(var): value} for loops of one iteration."""
    from .expr import Const, Var, substitute
    from .simplify import linear_form, simplify
    fixed = fixed or {}
    if len(indices) == len(shape) and (len(shape) != 1 or shape[0] >= 1):
        return [simplify(substitute(i, fixed)) for i in indices]
    form = linear_form(simplify(substitute(indices[0], fixed)))
    if form is None or form[1] != 0:
        return None
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    per = [[] for _ in shape]
    for atom, k in form[0].values():
        if k == 0:
            continue
        dims = [d for d in range(len(shape)) if strides[d] == k and shape[d] > 1]
        if not dims:      # m * stride_d with 1 < m < shape_d: a blocked loop (outer * m + inner) in dim d
            dims = [d for d in range(len(shape)) if k % strides[d] == 0 and 1 < k // strides[d] < shape[d]]
        if not isinstance(atom, Var) or len(dims) != 1:
            return None
        per[dims[0]].append(atom if k == strides[dims[0]] else atom * Const(k // strides[dims[0]], atom.dtype))
    if any(len(p) > 1 and all(isinstance(x, Var) for x in p) for p in per):
        return None       # two loops with the stride of one dimension
    out = []
    for p in per:
        e = p[0] if p else Const(0, "int32")
        for x in p[1:]:
            e = e + x
        out.append(e)
    return out


class _Accesses:
    """Every read of `targets`/`out` and store to `out` in a nest, with its enclosing loops and
    the position (in the stage sequence) of the statement holding it."""

    def __init__(self, targets, out):
        self.targets, self.out, self.found = targets, out, []

    def run(self, s, loops, pos):
        from .stmt import For, stmt_children
        exprs = own_exprs(s)
        for top in exprs:
            for e in walk(top):
                if isinstance(e, Load) and (id(e.buffer) in self.targets or e.buffer is self.out):
                    self.found.append(("read", e, loops, pos))
        if isinstance(s, Store) and s.buffer is self.out:
            self.found.append(("write", s, loops, pos))
        inner = loops + [(s.var, s.min, s.extent)] if isinstance(s, For) else loops
        for c in stmt_children(s):
            self.run(c, inner, pos)


def _touches(s, targets, out):
    for x in walk_stmts(s):
        if isinstance(x, Store) and x.buffer is out:
            return True
        for top in own_exprs(x):
            if any(isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out) for e in walk(top)):
                return True
    return False


def writes_over_staged(func, in_bufs, out_buf, delta=None) -> bool:
    """May out_buf share in_buf's storage in a kernel that stages its results (issue 16: a
    depthwise conv plane by plane, a pointwise conv pixel by pixel)?

    Proven when one top-level statement touches the input or the output, and it is a perfect
    nest of loops V around a sequence in which every store to the output comes after every
    read of the input (compute into a scratch buffer, then copy back); the output is never
    read and no index reads either; input and output have one shape; and there is a set of
    dimensions D, one per loop of V with more than one iteration, such that every read of the
    input and every store to the output has B*v + rest as its coordinate in that loop's
    dimension (v the loop's variable, B the dimension's block, 1 unless staged a block at a
    time, rest proven in [0, B)), with its other coordinates proven inside their dimensions.
    Iteration v then touches only the elements whose D coordinates lie in its block: no later
    iteration reads what an earlier one wrote back, and within an iteration all reads come
    before the write-back.

    delta: the input lies `delta` elements into the output's storage instead (a pointwise conv
    that widens its channels, its input at the end of its output). The shapes may then differ
    outside D, and every element the write-back of iteration v stores is enumerated: the input
    element at its address, if any, must belong to an iteration no later than v."""
    from .expr import Var
    from .simplify import bounds, const_value, from_linear, linear_form, loop_ranges
    from .stmt import For, Seq
    from .verify import endpoints
    (in_buf,) = in_bufs if len(in_bufs) == 1 else (None,)
    if in_buf is None or in_buf.dtype != out_buf.dtype or len(in_buf.shape) != len(out_buf.shape) \
            or (delta is None and in_buf.shape != out_buf.shape) \
            or (delta is not None and not 0 <= delta <= out_buf.size - in_buf.size):
        return False
    targets = {id(in_buf)}
    tops = func.body.stmts if isinstance(func.body, Seq) else [func.body]
    touching = [s for s in tops if _touches(s, targets, out_buf)]
    if len(touching) != 1:
        return False
    nest, vloops = touching[0], []
    while isinstance(nest, For):
        vloops.append(nest)
        nest = nest.body
    if not vloops or not isinstance(nest, Seq) or any(const_value(lp.min) != 0 or const_value(lp.extent) is None
                                                      for lp in vloops):
        return False
    fixed = {}
    for x in walk_stmts(touching[0]):
        if isinstance(x, For) and const_value(x.extent) == 1 and const_value(x.min) is not None:
            fixed[id(x.var)] = x.min
    acc = _Accesses(targets, out_buf)
    outer = [(lp.var, lp.min, lp.extent) for lp in vloops]
    for lp in vloops:
        for top in own_exprs(lp):      # loop bounds of V reading the input: refused below
            if any(isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out_buf) for e in walk(top)):
                return False
    for pos, s in enumerate(nest.stmts):
        acc.run(s, outer, pos)
    reads = [f for f in acc.found if f[0] == "read"]
    writes = [f for f in acc.found if f[0] == "write"]
    if not writes or any(f[1].buffer is out_buf for f in reads):
        return False
    if any(isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out_buf)
           for f in acc.found for idx in (f[1].indices if f[0] == "read" else (f[1].index,)) for e in walk(idx)):
        return False
    if max((f[3] for f in reads), default=-1) >= min(f[3] for f in writes):
        return False
    dim_of = {}
    for lp in vloops:
        if const_value(lp.extent) > 1:
            dim_of[id(lp.var)] = None
    first = coords((writes[0][1].index,), out_buf.shape, fixed)
    if first is None:
        return False
    block = {}          # dim -> B: iteration v of its loop touches coordinates B*v .. B*v + B-1
    for d, e in enumerate(first):
        form = linear_form(e)
        own = [(a, k) for a, k in (form[0].values() if form else ()) if isinstance(a, Var) and id(a) in dim_of]
        if len(own) == 1 and own[0][1] >= 1:
            if dim_of[id(own[0][0])] is not None:
                return False
            dim_of[id(own[0][0])], block[d] = d, own[0][1]
    if not dim_of or any(d is None for d in dim_of.values()):
        return False
    D = {d: v for v, d in dim_of.items()}
    for lp in vloops:
        if id(lp.var) in dim_of and const_value(lp.extent) * block[dim_of[id(lp.var)]] > out_buf.shape[dim_of[id(lp.var)]]:
            return False
    for kind, x, loops, _ in acc.found:
        shape = (x.buffer if kind == "read" else out_buf).shape
        c = coords(x.indices if kind == "read" else (x.index,), shape, fixed)
        if c is None:
            return False
        ranges = {}
        for var, mn, ext in loops:
            ranges = loop_ranges(ranges, For(var, mn, ext, Seq([])))
        for d, e in enumerate(c):
            if d in D:      # e = B*v + rest, rest inside [0, B) and free of V's variables
                form = linear_form(e)
                if form is None or [k for a, k in form[0].values() if isinstance(a, Var) and id(a) == D[d]] != [block[d]]:
                    return False
                rest = from_linear({key: t for key, t in form[0].items() if not (isinstance(t[0], Var) and id(t[0]) == D[d])},
                                   form[1], e.dtype)
                if any(isinstance(x, Var) and id(x) in dim_of for x in walk(rest)):
                    return False
                span = bounds(rest, ranges)
                if span is None or span[0] < 0 or span[1] >= block[d]:
                    return False
                continue
            live = [(v, mn, ext) for v, mn, ext in loops if id(v) not in fixed]
            span = endpoints(e, live) if live else None
            span = span or bounds(e, ranges)
            if span is None or span[0] < 0 or span[1] >= shape[d]:
                return False
    if any(in_buf.shape[d] != out_buf.shape[d] for d in D):
        return False
    if delta is not None and any(b != 1 for b in block.values()):
        return False
    return delta is None or _write_back_trails(writes, in_buf, out_buf, delta, D, vloops, fixed)


def _write_back_trails(writes, in_buf, out_buf, delta, D, vloops, fixed):
    """Every element the write-back stores, enumerated: the input element at the same address
    (delta elements into the output) lies outside the input or belongs to an iteration of V no
    later than the one storing. Each store's loops must have constant bounds."""
    import numpy as np
    from .expr import Const, Var
    from .simplify import const_value
    vars_ = [lp.var for lp in vloops if id(lp.var) in {v for v in D.values()}]
    radix = [const_value(lp.extent) for lp in vloops if id(lp.var) in {v for v in D.values()}]
    order = [next(d for d, v in D.items() if v == id(x)) for x in vars_]   # V's dims, outermost first
    for _, st, loops, _ in writes:
        live = [(v, const_value(mn), const_value(ext)) for v, mn, ext in loops if id(v) not in fixed]
        if any(mn is None or ext is None for _, mn, ext in live):
            return False
        grids = np.meshgrid(*[np.arange(mn, mn + ext, dtype=np.int64) for _, mn, ext in live], indexing="ij")
        value = {id(v): g.ravel() for (v, _, _), g in zip(live, grids)}
        c = coords((st.index,), out_buf.shape, fixed)
        addr = np.zeros(grids[0].size if grids else 1, dtype=np.int64)
        stride = 1
        if any(not isinstance(e, (Var, Const)) for e in c):
            return False          # a blocked coordinate: not enumerated here
        for d in reversed(range(len(out_buf.shape))):
            e = c[d]
            if id(e) in value:
                addr = addr + value[id(e)] * stride
            stride *= out_buf.shape[d]
        i = addr - delta
        inside = (i >= 0) & (i < in_buf.size)
        where = np.unravel_index(np.clip(i, 0, in_buf.size - 1), in_buf.shape)
        rank_in = np.zeros_like(addr)
        rank_v = np.zeros_like(addr)
        for d, x, n in zip(order, vars_, radix):
            rank_in = rank_in * n + where[d]
            rank_v = rank_v * n + value[id(x)]
        if np.any(inside & (rank_in > rank_v)):
            return False
    return True


# -- in program order: a kernel whose output is no larger than its input, replayed
MAX_REPLAYED = 1 << 23     # accesses: beyond this the replay is not attempted (the proof is refused)


def eval_index(e, env):
    """An integer index expression over numpy arrays of loop values (broadcast), or None when it
    holds anything but integer arithmetic on loop variables and constants."""
    import numpy as np
    from .expr import Bin, Const, Select, Unary, Var
    if isinstance(e, Const) and isinstance(e.value, (int, np.integer)) and not isinstance(e.value, bool):
        return np.int64(e.value)
    if isinstance(e, Var):
        return env.get(id(e))
    if isinstance(e, Unary) and e.op == "neg":
        a = eval_index(e.a, env)
        return None if a is None else -a
    if isinstance(e, Select):
        c, t, f = (eval_index(x, env) for x in (e.cond, e.t, e.f))
        return None if c is None or t is None or f is None else np.where(c, t, f)
    if not isinstance(e, Bin):
        return None
    a, b = eval_index(e.a, env), eval_index(e.b, env)
    if a is None or b is None:
        return None
    ops = {"+": np.add, "-": np.subtract, "*": np.multiply, "min": np.minimum, "max": np.maximum,
           "floordiv": np.floor_divide, "floormod": np.mod, "<": np.less, "<=": np.less_equal,
           ">": np.greater, ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal,
           "&&": np.logical_and, "||": np.logical_or}
    if e.op in ("/", "%"):      # C's truncating division, on operands the verifier keeps non-negative
        if np.any(np.asarray(a) < 0) or np.any(np.asarray(b) <= 0):
            return None
        return a // b if e.op == "/" else a % b
    if e.op in ("floordiv", "floormod") and np.any(np.asarray(b) == 0):
        return None
    return ops[e.op](a, b) if e.op in ops else None


def _flat(indices, shape, env):
    import numpy as np
    if len(indices) == 1:
        return eval_index(indices[0], env)
    flat = np.int64(0)
    for i, n in zip(indices, shape):
        v = eval_index(i, env)
        if v is None:
            return None
        flat = flat * n + v
    return flat


def _ordered(call):
    """(steps, accesses) of a micro-kernel call whose intrinsic describes them, else None."""
    from .expr import Call
    from .intrin import get_intrin
    it = get_intrin(call.fn) if isinstance(call, Call) else None
    describe = getattr(it, "ordered_accesses", None)
    return describe(call.args) if describe is not None else None


def writes_over_in_order(func, in_bufs, out_buf, offset=0) -> bool:
    """May out_buf lie `offset` elements into the storage of in_bufs (one input and its views)
    when the output is no larger than the input (a depthwise conv with stride 2 writing its
    smaller output over the start of its input)?

    Proven by replaying every access in program order: each statement's executions are numbered
    by a program counter (a loop's iterations one after another, a store's reads before its
    write), every read of the input and every store to the output enumerated over its loops
    (reads under a condition counted as executed, which only adds reads). It holds when the
    output is never read and every input element is read for the last time before the first
    store that lands on it. Loops must be serial (no parallel or thread-bound loop), their bounds
    bounded, indices only loop arithmetic. A micro-kernel called for what it writes (an Evaluate)
    may take the input or the output by pointer when its intrinsic describes what it touches
    (ordered_accesses: dw_s8, dw3_s8r; an access may name an element offset from its pointer
    as a fifth item): its steps are replayed one after another, step k's reads at
    2k and its writes at 2k + 1 of the call's program counters, so a read counts as before a
    write of the same call only when the intrinsic orders them so; any other micro-kernel
    taking the input or output by pointer is refused."""
    import numpy as np
    from .expr import Call, TENSOR_INTRINSICS
    from .simplify import bounds, loop_ranges
    from .stmt import Allocate, Barrier, Evaluate, For, IfThenElse, Seq
    targets = {id(b) for b in in_bufs}
    if not in_bufs or any(b.dtype != out_buf.dtype or b.size != in_bufs[0].size for b in in_bufs) \
            or not 0 <= offset <= in_bufs[0].size - out_buf.size:
        return False
    n_in = in_bufs[0].size
    reads, writes, count = [], [], [0]

    def span(s, ranges):
        """Program-counter units one execution of s takes (a loop counted at its most iterations)."""
        if isinstance(s, For):
            lo, n = bounds(s.min, ranges), bounds(s.extent, ranges)
            body = span(s.body, loop_ranges(ranges, s))
            return None if lo is None or n is None or body is None else max(n[1], 0) * body
        if isinstance(s, Seq):
            parts = [span(c, ranges) for c in s.stmts]
            return None if None in parts else sum(parts)
        if isinstance(s, Allocate):
            return span(s.body, ranges)
        if isinstance(s, IfThenElse):
            parts = [span(s.then, ranges), span(s.else_, ranges) if s.else_ is not None else 0]
            return None if None in parts else 1 + sum(parts)
        if isinstance(s, (Store, Barrier)):
            return 2
        if isinstance(s, Evaluate):
            got = _ordered(s.call)
            n = bounds(got[0], ranges) if got is not None else None
            return None if n is None else 2 * max(n[1], 0) + 1
        return None

    def call(c, env, pc, mask):
        """A micro-kernel's accesses (its intrinsic's ordered_accesses) enumerated over its steps
        and the extents of each run, under the enclosing loops."""
        got = _ordered(c)
        if got is None:
            return False
        steps, touched = got
        described = {t[1] for t in touched}
        for j, a in enumerate(c.args):       # scalar arguments, and pointers not described: no input or output
            if j not in described and any(isinstance(x, Load) and (id(x.buffer) in targets or x.buffer is out_buf)
                                          for x in walk(a)):
                return False
        for kind, j, runs, step_stride, *at in touched:
            ld = c.args[j]
            if not isinstance(ld, Load) or any(isinstance(x, Load) and (id(x.buffer) in targets or x.buffer is out_buf)
                                               for i in ld.indices for x in walk(i)):
                return False
            if id(ld.buffer) not in targets and ld.buffer is not out_buf:
                continue
            if (kind == "read") == (ld.buffer is out_buf):
                return False      # the output read, or the input written
            base = _flat(ld.indices, ld.buffer.shape, env)
            if base is not None and at:
                base = base + eval_index(at[0], env)
            vals = [eval_index(x, env) for x in (steps, step_stride, *(x for run in runs for x in run))]
            if base is None or any(v is None for v in vals):
                return False
            n, stride, *rest = vals
            extra = 1 + len(runs)

            def lift(v):
                return np.reshape(v, np.shape(v) + (1,) * extra)

            def along(v, axis):
                return v.reshape(tuple(-1 if d == axis else 1 for d in range(extra)))
            k = along(np.arange(max(int(np.max(n)), 0), dtype=np.int64), 0)
            addr, m = lift(base) + k * lift(stride), lift(mask) & (k < lift(n))
            for d in range(len(runs)):
                ext, st = rest[2 * d], rest[2 * d + 1]
                i = along(np.arange(max(int(np.max(ext)), 0), dtype=np.int64), d + 1)
                addr, m = addr + i * lift(st), m & (i < lift(ext))
            at = lift(pc) + 2 * k + (kind == "write")
            addr, at, m = np.broadcast_arrays(addr, at, m)
            (reads if kind == "read" else writes).append((addr[m], at[m]))
            count[0] += int(np.count_nonzero(m))
            if count[0] > MAX_REPLAYED:
                return False
        return True

    def accesses(top, env, pc, mask):
        for e in walk(top):
            if isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out_buf):
                if e.buffer is out_buf or any(isinstance(x, Load) for i in e.indices for x in walk(i)):
                    return False
                addr = _flat(e.indices, e.buffer.shape, env)
                if addr is None:
                    return False
                addr, at, m = np.broadcast_arrays(addr, pc, mask)
                reads.append((addr[m], at[m]))
                count[0] += reads[-1][0].size
            if isinstance(e, Call) and e.fn in TENSOR_INTRINSICS and any(
                    isinstance(x, Load) and (id(x.buffer) in targets or x.buffer is out_buf) for a in e.args
                    for x in walk(a)):
                return False
        return count[0] <= MAX_REPLAYED

    def run(s, env, pc, mask, ranges):
        """pc: the program counter of s's executions, mask: which of them happen (arrays over the
        enclosing loops' iterations)."""
        if isinstance(s, For) and s.kind in ("parallel", "thread_binding"):
            return False      # iterations run at once: there is no program order to replay
        if isinstance(s, For):
            inner = loop_ranges(ranges, s)
            body, lo, n = span(s.body, inner), bounds(s.min, ranges), bounds(s.extent, ranges)
            first = lo[0]
            vals = np.arange(first, lo[1] + max(n[1], 0), dtype=np.int64).reshape((1,) * np.ndim(pc) + (-1,))
            if vals.size * max(np.size(pc), 1) > MAX_REPLAYED:
                return False
            env2 = {k: np.expand_dims(v, -1) if np.ndim(v) else v for k, v in env.items()}
            mn, ext = eval_index(s.min, env2), eval_index(s.extent, env2)
            if mn is None or ext is None:
                return False
            env2[id(s.var)] = vals
            m = np.expand_dims(mask, -1) & (vals >= mn) & (vals < mn + ext) if np.ndim(mask) else \
                (mask & (vals >= mn) & (vals < mn + ext))
            return run(s.body, env2, np.expand_dims(pc, -1) + (vals - mn) * body, m, inner)
        if isinstance(s, Seq):
            for c in s.stmts:
                if not run(c, env, pc, mask, ranges):
                    return False
                pc = pc + span(c, ranges)
            return True
        if isinstance(s, Allocate):
            return run(s.body, env, pc, mask, ranges)
        if isinstance(s, IfThenElse):
            return (accesses(s.cond, env, pc, mask) and run(s.then, env, pc + 1, mask, ranges)
                    and (s.else_ is None or run(s.else_, env, pc + 1 + span(s.then, ranges), mask, ranges)))
        if isinstance(s, Store):
            if not all(accesses(top, env, pc, mask) for top in own_exprs(s)):
                return False
            if s.buffer is out_buf:
                addr = _flat((s.index,), out_buf.shape, env)
                if addr is None:
                    return False
                addr, at, m = np.broadcast_arrays(addr, pc + 1, mask)
                writes.append((addr[m], at[m]))
                count[0] += writes[-1][0].size
            elif id(s.buffer) in targets:
                return False
            return count[0] <= MAX_REPLAYED
        if isinstance(s, Evaluate):
            return call(s.call, env, pc, mask)
        return isinstance(s, Barrier)

    if span(func.body, {}) is None or not run(func.body, {}, np.int64(0), np.bool_(True), {}) or not writes:
        return False
    last_read = np.full(n_in, -1, dtype=np.int64)
    for addr, pc in reads:
        ok = (addr >= 0) & (addr < n_in)     # a guarded read outside the input touches nothing of it
        np.maximum.at(last_read, addr[ok], pc[ok])
    first_write = np.full(n_in, np.iinfo(np.int64).max, dtype=np.int64)
    for addr, pc in writes:
        if np.any((addr < 0) | (addr >= out_buf.size)):
            return False
        np.minimum.at(first_write, addr + offset, pc)
    return bool(np.all(first_write > last_read))
