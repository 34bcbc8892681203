"""The executor's memory plan: when each tensor holds workspace bytes (Interval), which tensors
live inside another's storage (Alias), and the pools and offsets of the rest (aot/memory_plan.py
places them).

The in-place strategies (aot/executor/inplace/) prove that a kernel may write one tensor over
another (a GeneratedKernel's InPlace record); they ask this module to record the
resulting Alias only where the peak of live bytes does not rise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..errors import AotError
from ..memory_plan import Buf, clusters, lower_bound, plan, verify

# How a tensor lives inside its host (Alias.kind):
IN_PLACE = "in place"   # it takes its host's storage: not planned; the host's interval stretched over its own
SLICE = "slice"         # it lies `offset` bytes into its host: not planned; the host's interval stretched too
PIN = "pin"             # it is planned, `offset` bytes into its host, as one cluster (memory_plan.Buf.pin)


@dataclass
class Interval:
    """The steps during which a tensor's bytes are live, first and last inclusive."""
    first: int
    last: int
    tensor: object      # the graph value (an alias root) or a Scratch


class Scratch:
    """A kernel's scratch memory as the planner sees it: a buffer live for one step."""

    def __init__(self, name, nbytes):
        from ..ir.graph import TensorType
        self.name, self.type = name, TensorType((nbytes,), "uint8")


@dataclass(frozen=True)
class Alias:
    """tensor's bytes live inside host's storage, `offset` bytes in (tensor and host are
    interval keys)."""
    tensor: int
    host: int
    offset: int
    kind: str           # IN_PLACE | SLICE | PIN


class Home(NamedTuple):
    """The planned buffer holding a tensor's bytes, and the tensor's byte offset inside it."""
    key: int
    offset: int


class Aliases:
    """The relation 'tensor lives inside host at offset': at most one Alias per tensor."""

    def __init__(self):
        self._of = {}

    def __contains__(self, tensor):
        return tensor in self._of

    def copy(self):
        out = Aliases()
        out._of = dict(self._of)
        return out

    def add(self, tensor, host, offset, kind):
        self._of[tensor] = Alias(tensor, host, offset, kind)

    def remove(self, tensor):
        del self._of[tensor]

    def get(self, tensor, kind):
        """The tensor's Alias of this kind, or None."""
        a = self._of.get(tensor)
        return a if a is not None and a.kind == kind else None

    def planned(self, key):
        """Whether the memory plan gives key storage of its own (a pinned tensor's is fixed to its host's)."""
        a = self._of.get(key)
        return a is None or a.kind == PIN

    def pin(self, key):
        """The (host, offset) memory_plan.Buf.pin holds for key, or None."""
        a = self.get(key, PIN)
        return None if a is None else (a.host, a.offset)

    def pinned_to(self, key, host):
        a = self.get(key, PIN)
        return a is not None and a.host == host

    def pinned(self):
        """Keys in a pin on either side."""
        return {k for a in self._of.values() if a.kind == PIN for k in (a.tensor, a.host)}

    def in_place(self):
        """Keys written in place of another tensor."""
        return {k for k, a in self._of.items() if a.kind == IN_PLACE}

    def find(self, key):
        """The tensor whose storage key took over through in-place writes (key itself if none)."""
        while (a := self.get(key, IN_PLACE)) is not None:
            key = a.host
        return key

    def home(self, key):
        """Where key's bytes are planned: through in-place writes and slices, to a planned buffer."""
        offset = 0
        while (a := self._of.get(key)) is not None and a.kind != PIN:
            key, offset = a.host, offset + a.offset
        return Home(key, offset)


def buffers(intervals, aliases, pins=True):
    """The planned buffers, in interval order; with their pins unless pins is False."""
    return [Buf(key, iv.tensor.type.nbytes, iv.first, iv.last, pin=aliases.pin(key) if pins else None)
            for key, iv in intervals.items() if aliases.planned(key)]


def bound(intervals, aliases, pins=True):
    return lower_bound(buffers(intervals, aliases, pins))


def _cluster_holds(aliases, intervals, key):
    """Whether the buffers pinned together with key's planned storage can all be placed: no two
    of them overlap in bytes while both are live, but a pinned pair at the one step they share."""
    bufs = buffers(intervals, aliases)
    at = {b.key: i for i, b in enumerate(bufs)}
    key = aliases.home(key).key
    if key not in at:
        return True
    cl = clusters(bufs)
    root = cl[at[key]][0]
    mine = [(b, cl[i][1]) for i, b in enumerate(bufs) if cl[i][0] == root]
    for k, (a, ra) in enumerate(mine):
        for b, rb in mine[k + 1:]:
            shared = min(a.end, b.end) - max(a.start, b.start)
            pair = aliases.pinned_to(a.key, b.key) or aliases.pinned_to(b.key, a.key)
            if shared >= 0 and ra < rb + b.size and rb < ra + a.size and not (pair and shared == 0):
                return False
    return True


def pin(aliases, intervals, key, host, offset):
    """Pin key's storage `offset` bytes into host's (they share one step, at which the kernel was
    proven to write the one over the other), unless two members of the cluster this makes would
    then overlap elsewhere, or the peak of live bytes rises. Returns whether it did."""
    before = bound(intervals, aliases)
    aliases.add(key, host, offset, PIN)
    if not _cluster_holds(aliases, intervals, key) or bound(intervals, aliases) > before:
        aliases.remove(key)
        return False
    return True


def place(aliases, intervals, tensor, host, offset):
    """Put tensor's bytes `offset` bytes into host's storage, host's interval stretched over
    tensor's, unless that raises the peak of live bytes (host's other bytes are then held from
    tensor's first step on), or the stretch makes host overlap a buffer it is pinned together
    with at more than their one shared step. Returns whether it did. The peaks compared count
    pinned tensors one by one (pins=False): the slices the plan takes are the ones chosen so,
    and counting the pins might choose others."""
    before, span = bound(intervals, aliases, pins=False), (intervals[host].first, intervals[host].last)
    aliases.add(tensor, host, offset, SLICE)
    intervals[host].first = min(span[0], intervals[tensor].first)
    intervals[host].last = max(span[1], intervals[tensor].last)
    if bound(intervals, aliases, pins=False) <= before and _cluster_holds(aliases, intervals, host):
        return True
    aliases.remove(tensor)
    intervals[host].first, intervals[host].last = span
    return False


@dataclass
class Layout:
    """The memory plan: every interval key's pool and byte offset."""
    offset: dict        # key -> byte offset in its pool
    pool: dict          # key -> pool index
    sizes: list         # bytes of each pool
    bound: int          # the lower bound of the planned buffers' workspace


def plan_memory(intervals, aliases, pools, align):
    """Offsets of the planned buffers in the pools [(name, size hint or None)], then of the
    tensors living inside them."""
    bufs = buffers(intervals, aliases)
    pool_of, sizes = assign_pools(bufs, pools, align)
    offset = {b.key: b.offset for b in bufs}
    for key in intervals:
        if not aliases.planned(key):
            home = aliases.home(key)
            offset[key], pool_of[key] = offset[home.key] + home.offset, pool_of[home.key]
    return Layout(offset, pool_of, sizes, lower_bound(bufs))


def assign_pools(bufs, pools, align):
    """Plan the buffers into the pools in order: a pool whose size hint the plan exceeds gives
    its topmost buffers to the next pool until it fits. Returns ({key: pool index}, [pool bytes])."""
    pool_of, sizes, todo = {}, [], list(bufs)
    rank = {id(b): i for i, b in enumerate(bufs)}     # spilled buffers keep their original order
    for k, (name, hint) in enumerate(pools):
        mine, moved = list(todo), []
        total = plan(mine, align)
        last = k == len(pools) - 1
        while hint is not None and total > hint and not last and mine:
            top = max(range(len(mine)), key=lambda i: (mine[i].offset + mine[i].size, mine[i].size, -i))
            moved.append(mine.pop(top))
            total = plan(mine, align)
        if hint is not None and total > hint:
            need = f"{total} bytes (lower bound {lower_bound(mine)})"
            if len(pools) == 1:
                raise AotError(f"workspace pool '{name}' is too small: the model needs {need}, "
                               f"but its size hint is {hint} bytes")
            raise AotError(f"workspace pools are too small: after filling the others, pool '{name}' needs {need}, "
                           f"but its size hint is {hint} bytes (pools: "
                           + ", ".join(f"'{n}' {h if h is not None else 'unbounded'}" for n, h in pools) + ")")
        verify(mine, total, align)
        for b in mine:
            pool_of[b.key] = k
        sizes.append(total)
        todo = sorted(moved, key=lambda b: rank[id(b)])
    return pool_of, sizes
