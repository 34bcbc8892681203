"""The launch shape of a GPU kernel, read off its bound loops, and the checks that make the
binding valid: a bound loop covers [0, extent) of a constant extent; every loop bound to one
tag has the same extent (it is one launch dimension); a block is within the device's thread
limit and a grid within the grid limit; a barrier is reached by every thread of the block, so
it is never under a condition or loop that depends on a thread index."""
from __future__ import annotations

from .expr import Var, walk
from .schedule import ScheduleError
from .simplify import const_value
from .stmt import StmtVisitor, own_exprs

MAX_GRID = (2 ** 31 - 1, 65535, 65535)


def launch_shape(func, max_threads=1024):
    """((gx, gy, gz), (bx, by, bz)) of func's bound loops; ScheduleError when the binding
    cannot be launched as written."""
    ext, thread_vars = {}, set()

    class Check(StmtVisitor):
        def __init__(self):
            self.divergent = []           # enclosing conditions/loops that depend on a thread index

        def visit_For(self, s):
            if s.kind == "thread_binding":
                n = const_value(s.extent)
                if const_value(s.min) != 0 or n is None:
                    raise ScheduleError(f"{func.name}: loop {s.var.name} bound to {s.thread_tag} needs min 0 and a "
                                        "constant extent")
                if ext.setdefault(s.thread_tag, n) != n:
                    raise ScheduleError(f"{func.name}: loops bound to {s.thread_tag} have extents {ext[s.thread_tag]} "
                                        f"and {n}; one launch dimension has one size")
                if s.thread_tag.startswith("threadIdx"):     # a block index is the same for the whole block
                    thread_vars.add(id(s.var))
                self.visit(s.body)
                return
            dep = any(isinstance(v, Var) and id(v) in thread_vars for e in (s.min, s.extent) for v in walk(e))
            self.divergent.append(dep)
            self.visit(s.body)
            self.divergent.pop()

        def visit_IfThenElse(self, s):
            dep = any(isinstance(v, Var) and id(v) in thread_vars for e in own_exprs(s) for v in walk(e))
            self.divergent.append(dep)
            self.visit(s.then)
            if s.else_ is not None:
                self.visit(s.else_)
            self.divergent.pop()

        def visit_Barrier(self, s):
            if any(self.divergent):
                raise ScheduleError(f"{func.name}: a barrier under a condition or loop that depends on the thread "
                                    "index: some threads of the block would never reach it")

    Check().visit(func.body)
    grid = tuple(ext.get(f"blockIdx.{a}", 1) for a in "xyz")
    block = tuple(ext.get(f"threadIdx.{a}", 1) for a in "xyz")
    if block[0] * block[1] * block[2] > max_threads:
        raise ScheduleError(f"{func.name}: a block of {block[0]}x{block[1]}x{block[2]} threads exceeds the limit of "
                            f"{max_threads}")
    for g, lim, a in zip(grid, MAX_GRID, "xyz"):
        if g > lim:
            raise ScheduleError(f"{func.name}: {g} blocks along {a} exceed the grid limit of {lim}")
    return grid, block

