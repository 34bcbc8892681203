"""Concatenation in place: a concat whose slices are contiguous in its output (every axis before
the concat axis has extent 1) gets each input's storage placed at that input's slice of the
output, so the producer writes straight into it and the concat's copy of that slice is a copy
onto itself."""
from __future__ import annotations

from ...ops.registry import alias_root
from ..kernels import GeneratedKernel
from ..memory import SLICE, pin, place


def place_concat_slices(kernels, calls, intervals, aliases, io_keys, log, pinned_first=False):
    """Record each placed input as a SLICE of the concat's output, the output's interval
    stretched over it. An input is left where it is when its bytes are written again after the
    concat (a later kernel writing in place of it), when it already sits in another concat's
    output or in a pin, or when it is a graph input or output. pinned_first: each input pinned
    at its slice instead where the pin holds (memory.pin), so that the output's bytes are held
    only from each input's own first step (a patched stage's strips fill it one by one)."""
    pinned = aliases.pinned()      # their intervals may not stretch
    written = aliases.in_place()
    for step, (g, c) in enumerate(zip(kernels, calls)):
        if not isinstance(c, GeneratedKernel) or [n.op for n in g.nodes] != ["Concat"] or c.scratch_bytes:
            continue
        node, n_in = g.nodes[0], c.func.num_inputs
        out = c.args[n_in]
        axis = node.attrs["axis"] % len(node.outputs[0].type.shape)
        if out.kind != "workspace" or out.key in io_keys or aliases.home(out.key).key != out.key \
                or (out.key in pinned and not pinned_first) \
                or any(x != 1 for x in node.outputs[0].type.shape[:axis]) or len(c.args) != n_in + 1:
            continue
        delta, done = 0, set()
        for v in node.inputs:
            nbytes, key = v.type.nbytes, id(alias_root(v))
            home = aliases.find(key) if key in intervals else None
            later = home is not None and any(aliases.find(k) == home and intervals[k].first > step
                                             for k in intervals if k in written)
            if home is not None and home not in io_keys and aliases.get(home, SLICE) is None and home not in done \
                    and home not in pinned \
                    and not later and intervals[home].tensor.type.nbytes == nbytes and home != out.key:
                if not (pinned_first and pin(aliases, intervals, home, out.key, delta)) \
                        and (out.key in pinned or not place(aliases, intervals, home, out.key, delta)):
                    delta += nbytes
                    continue
                done.add(home)
                if log:
                    log(f"memory plan: {intervals[home].tensor.name} placed at byte {delta} of "
                        f"{intervals[out.key].tensor.name}")
            delta += nbytes
        if done:
            c.no_alias = False      # each placed slice is copied onto itself
