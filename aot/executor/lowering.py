"""Lowering and scheduling of one fused group: a user's PrimFunc as written, or the group's
loop nest scheduled for the target (once per structure: a repeated layer is scheduled once),
staged or shrunk in place where that is worth it and proven (aot/executor/inplace/), every
access then proven in bounds."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..schedules import schedule
from ..te.lower import lower_group
from ..tir.flatten import flatten
from ..tir.inplace import writes_over_in_order
from ..tir.legalize import legalize
from ..tir.stmt import PrimFunc
from ..tir.structural import structural_key
from ..tir.verify import AccessReport, verify_accesses
from .inplace.dying import Site
from .inplace.shrunk import shrunk_in_place, steps_worth_shrinking, written_over_as_scheduled
from .inplace.staged import Staging, staged_in_place, steps_worth_staging
from .kernels import ORDERED, SHRUNK, STAGED, InPlace


def in_order_schedule(target):
    """The schedule asked to keep the nest's order, for a kernel to write its output over its
    input, or None where the target's rules have no such mode (the host's rules can keep the
    pieces of a padded window in the nest's order)."""
    if not target.family.in_order_shrink:
        return None
    return lambda f: legalize(schedule(f.with_body(f.body, attrs=dict(f.attrs, in_order=True)), target))


def scheduled(func, target, memo):
    """legalize(schedule(func, target)), from memo when a kernel of the same structure (a
    repeated layer) was scheduled before in this compile: the same nest takes the same rules."""
    key = structural_key(func)
    hit = memo.get(key) if key is not None else None
    if hit is None:
        hit = legalize(schedule(func, target))
        if key is not None:
            memo[key] = hit
    return dataclasses.replace(hit, name=func.name)


@dataclass
class Lowered:
    """One group's kernel: its function, the graph values of its input parameters, the layouts
    the schedule stores constants in ({parameter index: layout}), its Staging (whose scratch it
    takes) or None, and what it was proven to write over."""
    func: PrimFunc
    params: list
    layouts: dict
    staging: Staging = None
    proof: InPlace = None


class Lowering:
    """Lowers the groups of one compile, in order, sharing the structural memo and the access report."""

    def __init__(self, kernels, lives, io_ids, target, in_place):
        self.kernels, self.lives, self.io_ids = kernels, lives, io_ids
        self.target, self.in_place = target, in_place
        self.memo = {}          # structural key -> the scheduled kernel
        self.module_memos = {}  # the same, per target of a partitioned module's kernels
        self.access = AccessReport()
        self.worth_staging = steps_worth_staging(kernels, lives) if in_place else set()
        self.worth_shrinking = steps_worth_shrinking(kernels, lives) if in_place and not target.is_device else set()

    def user(self, g, fname):
        """A user's kernel, scheduled as the user wrote it."""
        user = g.nodes[0].attrs["prim_func"]
        func = PrimFunc(fname, user.params, user.body, user.num_inputs, dict(user.attrs))
        func = legalize(flatten(func))
        verify_accesses(func, self.access)
        return Lowered(func, list(g.inputs), {})

    def generated(self, g, fname, step, target=None):
        """The group's own loop nest: staged to write over an input, scheduled, or shrunk over one.
        target: the one its module is generated for (a partitioned module's), default the compile's."""
        target = self.target if target is None else target
        func, params = lower_group(g, fname)
        site = Site(step, self.lives, len(self.kernels), self.io_ids)
        memo = self.memo if target == self.target else self.module_memos.setdefault(str(target), {})
        staged = native = sched = None
        if self.in_place and not target.is_device and step in self.worth_staging:
            # a kernel that writes over its input as scheduled needs no staging
            if target.family.writes_over_as_scheduled(target):
                sched = scheduled(func, target, memo)
                native = written_over_as_scheduled(sched, params, g, site)
            staged = None if native else staged_in_place(func, params, g, site, target.family.staging_block(target))
        if staged:
            func, sched = staged.func, None
        plain, func = func, sched if sched is not None else scheduled(func, target, memo)
        if staged and staged.by_rows and not writes_over_in_order(func, [func.params[staged.input]],
                                                                   func.params[len(params)]):
            func = legalize(flatten(plain))      # staged by rows: its schedule re-proven, else its proven nest
        proof = InPlace(staged.input, STAGED, staged.inside) if staged else \
            InPlace(native.input, ORDERED) if native else None
        if not staged and not native and step in self.worth_shrinking:
            shrunk = shrunk_in_place(func, plain, params, g, site, in_order_schedule(target))
            if shrunk:
                func, proof = shrunk.func, InPlace(shrunk.input, SHRUNK)
        verify_accesses(func, self.access)
        return Lowered(func, params, func.attrs.get("layouts", {}), staged, proof)
