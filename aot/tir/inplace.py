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
        else:
            for top in own_exprs(s):
                for e in walk(top):
                    if isinstance(e, Load) and (id(e.buffer) in targets or e.buffer is out_buf):
                        return False
    return covered > 0

