"""Writes over a dying input: a kernel's output takes the storage of an input that dies at that
kernel, when the kernel reads each input element only in the statement that writes the same
output element (aot/tir/inplace.py writes_over), or was staged to (staged.py), or orders its own
reads so (shrunk.py written_over_as_scheduled)."""
from __future__ import annotations

from ...tir.inplace import writes_over
from ..kernels import ORDERED, STAGED, GeneratedKernel
from ..memory import IN_PLACE


def write_in_place(calls, intervals, aliases, io_keys, log):
    """Record each such output IN_PLACE of its input; the input's storage is held over the
    output's interval."""
    for step, c in enumerate(calls):
        if not isinstance(c, GeneratedKernel):
            continue          # only a generated kernel's loop IR can prove an in-place write safe
        p = c.in_place
        staged_over = p.input if p is not None and p.kind in (STAGED, ORDERED) else None
        n_in = c.func.num_inputs
        for j, a in enumerate(c.args[n_in:len(c.args) - (1 if c.scratch_bytes else 0)], n_in):
            if a.kind != "workspace" or a.key in io_keys or intervals[a.key].first != step:
                continue
            out_val = intervals[a.key].tensor
            for i, b in enumerate(c.args[:n_in]):
                if b.kind != "workspace" or b.key in io_keys or b.key == a.key:
                    continue
                home = aliases.find(b.key)
                if intervals[home].last != step or intervals[b.key].last != step \
                        or intervals[b.key].tensor.type.nbytes != out_val.type.nbytes:
                    continue
                views = [c.func.params[k] for k, x in enumerate(c.args[:n_in]) if x.kind == "workspace"
                         and x.key == b.key]
                if staged_over != i and not writes_over(c.func, views, c.func.params[j]):
                    continue
                aliases.add(a.key, b.key, 0, IN_PLACE)
                intervals[home].last = intervals[a.key].last
                if log:
                    log(f"memory plan: {c.func.name} writes {out_val.name} in place of {intervals[b.key].tensor.name}")
                break
