"""Which kernels may write over an input: those whose one activation input dies at them."""
from __future__ import annotations

from typing import NamedTuple

from ...ops.registry import alias_root


class Site(NamedTuple):
    """A kernel's place in the run: its step, every tensor's Lifetime, the number of steps, and
    the keys of the graph's inputs and outputs (caller's buffers: never written over)."""
    step: int
    lives: dict
    n_kernels: int
    io_ids: set

    def dies_here(self, r):
        return self.lives[id(r)].interval(self.n_kernels)[1] == self.step


class Dying(NamedTuple):
    """A step whose one activation input dies there, with the Lifetimes of that input and of its one output."""
    step: int
    src: object
    dst: object


class Sole(NamedTuple):
    """A kernel's one activation argument: its index, its tensor (alias root), and the kernel's one output."""
    index: int
    tensor: object
    output: object


def live_bytes(kernels, lives):
    """Bytes live at each step."""
    n = len(kernels)
    live = [0] * n
    for lf in lives.values():
        first, last = lf.interval(n)
        for s in range(first, last + 1):
            live[s] += lf.nbytes
    return live


def dying_inputs(kernels, lives):
    """A Dying for each step whose one activation input dies there."""
    n = len(kernels)
    for s, g in enumerate(kernels):
        ins = {id(alias_root(v)) for v in g.inputs if v is not None and not alias_root(v).is_const}
        if len(g.outputs) != 1 or len(ins) != 1:
            continue
        src, dst = lives.get(ins.pop()), lives.get(id(alias_root(g.outputs[0])))
        if src is not None and dst is not None and src.interval(n)[1] == s:
            yield Dying(s, src, dst)


def sole_activation(params, g, io_ids):
    """The Sole activation argument of a kernel with one output, when neither it nor the output
    is a graph input or output; else None."""
    if len(g.outputs) != 1 or id(alias_root(g.outputs[0])) in io_ids:
        return None
    act = [k for k, v in enumerate(params) if v is not None and not alias_root(v).is_const]
    if len(act) != 1:
        return None     # e.g. a conv with a residual add: that one writes over the residual (write_over.py)
    r = alias_root(params[act[0]])
    if id(r) in io_ids:
        return None
    return Sole(act[0], r, alias_root(g.outputs[0]))
