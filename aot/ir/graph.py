"""Typed SSA graph IR: the representation that graph passes transform.

A Graph owns Values (typed tensors, optionally with a constant numpy value) and Nodes
(an op from the registry with attributes). Nodes are kept in a valid topological order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np


@dataclass(frozen=True)
class TensorType:
    shape: tuple
    dtype: str

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def size(self) -> int:
        n = math.prod(self.shape)       # numpy's reduction costs ~20x more; asked for per buffer per plan step
        return n if -(1 << 63) <= n < (1 << 63) else int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self):
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


class Value:
    """One SSA tensor. `const` holds its value when known at compile time."""

    __slots__ = ("name", "type", "const", "producer")

    def __init__(self, name: str, type: TensorType, const: Optional[np.ndarray] = None):
        self.name = name
        self.type = type
        self.const = const
        self.producer: Optional[Node] = None

    @property
    def is_const(self) -> bool:
        return self.const is not None

    def __repr__(self):
        return f"%{self.name}: {self.type}"


class Node:
    __slots__ = ("op", "name", "inputs", "outputs", "attrs")

    def __init__(self, op: str, name: str, inputs, outputs, attrs=None):
        self.op = op
        self.name = name
        self.inputs = list(inputs)      # Value or None (omitted optional input)
        self.outputs = list(outputs)
        self.attrs = dict(attrs or {})
        for o in self.outputs:
            o.producer = self

    def __repr__(self):
        return f"Node({self.op}, {self.name!r})"


@dataclass
class Graph:
    name: str
    inputs: list
    outputs: list
    nodes: list = field(default_factory=list)
    opset: int = 0
    output_names: list = None   # the model's names for its outputs (kept when values are rewired)
    # quantised inputs and outputs: ("input" | "output", position) -> (scale, zero point), so that
    # the interface can tell firmware how to quantise its data (real = scale * (q - zero point))
    io_quant: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.output_names is None:
            self.output_names = [v.name for v in self.outputs]

    def with_nodes(self, nodes, outputs=None) -> "Graph":
        """A new graph sharing this one's values, with a different node list."""
        return Graph(self.name, list(self.inputs), list(outputs if outputs is not None else self.outputs),
                     list(nodes), self.opset, list(self.output_names), dict(self.io_quant))

    def copy(self) -> "Graph":
        """A graph with its own Values and Nodes (constant arrays and attribute values are
        shared: they are never written in place). A pass that rewires or re-types values
        works on a copy, so its input graph stays as it was."""
        g = copy_graph(self.name, self.nodes, self.inputs, self.outputs, self.opset, list(self.output_names))
        g.io_quant = dict(self.io_quant)
        return g

    def extract(self, name, nodes, inputs, outputs) -> "Graph":
        """A self-contained graph of `nodes` (copies, with values of their own): inputs[k] becomes
        its inputs[k], outputs[k] its outputs[k]. Annotation attributes ("@...") are left out."""
        return copy_graph(name, nodes, inputs, outputs, self.opset, keep=lambda k: not k.startswith("@"))

    def consumers(self) -> dict:
        """Value -> list of nodes reading it (graph outputs are not nodes; see is_output)."""
        uses: dict = {}
        for n in self.nodes:
            for v in n.inputs:
                if v is not None:
                    uses.setdefault(id(v), []).append(n)
        return uses

    def constants(self) -> list:
        seen, out = set(), []
        for n in self.nodes:
            for v in n.inputs:
                if v is not None and v.is_const and id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        return out


def copy_graph(name, nodes, inputs, outputs, opset, output_names=None, keep=lambda k: True):
    """A Graph of copies of `nodes` and of every value they touch (constant arrays and attribute
    values are shared: they are never written in place)."""
    vals = {}

    def v(x):
        if x is None:
            return None
        if id(x) not in vals:
            vals[id(x)] = Value(x.name, x.type, x.const)
        return vals[id(x)]
    ins = [v(x) for x in inputs]
    copied = [Node(n.op, n.name, [v(x) for x in n.inputs], [v(x) for x in n.outputs],
                   {k: a for k, a in n.attrs.items() if keep(k)}) for n in nodes]
    return Graph(name, ins, [v(x) for x in outputs], copied, opset, output_names)


def _fmt_attr(v):
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_attr(x) for x in v) + "]"
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}"
    if hasattr(v, "params") and hasattr(v, "body") and isinstance(getattr(v, "name", None), str):
        # a PrimFunc (aot.build's kernel): its repr holds object addresses, which would make the
        # MLF differ from run to run; the function is in the C
        return f"PrimFunc(@{v.name}, params=[{', '.join(f'{b.name}:{b.dtype}{list(b.shape)}' for b in v.params)}])"
    return repr(v)


def print_graph(g: Graph) -> str:
    """Readable text form (stored in the MLF as src/<mod>.relay, or as src/<mod>.graph beside a relay
    build's relay text). A Function node's body (a partitioned region, a composite) prints after
    the graph that calls it, named by its global_symbol or node name."""
    lines, bodies = [], []
    _print(g, f"graph {g.name}", lines, bodies)
    while bodies:
        name, body = bodies.pop(0)
        lines.append("")
        _print(body, f"def @{name}", lines, bodies)
    return "\n".join(lines) + "\n"


def _print(g, head, lines, bodies):
    lines.append(f"{head} (opset {g.opset}) {{")
    for v in g.inputs:
        lines.append(f"  input %{v.name}: {v.type}" + (" const" if v.is_const else ""))
    ins_ids = {id(v) for v in g.inputs}
    for c in g.constants():
        if id(c) not in ins_ids:
            lines.append(f"  const %{c.name}: {c.type}")
    for n in g.nodes:
        outs = ", ".join(f"%{o.name}: {o.type}" for o in n.outputs)
        ins = ", ".join("_" if v is None else f"%{v.name}" for v in n.inputs)
        attrs = []
        for k, v in sorted(n.attrs.items()):
            if isinstance(v, Graph):
                name = n.attrs.get("global_symbol") or n.name
                bodies.append((name, v))
                v = f"@{name}"
            else:
                v = _fmt_attr(v)
            attrs.append(f"{k}={v}")
        attrs = ", ".join(attrs)
        lines.append(f"  {outs} = {n.op}({ins}{'; ' + attrs if attrs else ''})  # {n.name}")
    lines.append("  return " + ", ".join(f"%{v.name}" if v.name == n else f"{n}=%{v.name}"
                                         for v, n in zip(g.outputs, g.output_names)))
    lines.append("}")
