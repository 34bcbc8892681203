"""The rules every imported graph keeps, whatever its format (ONNX, TFLite): one validator that
both importers call with their own names, so that a model one format refuses is not taken
silently by the other.

- each graph input is listed once, each graph output is listed once, and there is an output;
- each tensor has one producer: a graph input, a constant, or one node (so no node writes a
  graph input or a constant, and no two nodes write one tensor);
- with ordered=True (TFLite: the operators are the execution order), every tensor a node reads
  is produced before it: by a graph input, a constant, or an earlier node. Formats whose nodes
  need not be ordered (ONNX) sort them themselves and report a cycle there.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import AotError


@dataclass
class RuleNode:
    label: str          # how messages name the node: "node 'conv1' (Conv)", "operator 3 (ADD)"
    inputs: list        # tensor keys it reads (None: an omitted optional input)
    outputs: list       # tensor keys it writes


def check_graph(inputs, constants, nodes, outputs, name_of=str, ordered=False, error=AotError,
                constant="constant"):
    """inputs, outputs: tensor keys in the graph's order; constants: keys with a value; nodes:
    RuleNodes; name_of(key): how messages name a tensor; constant: what the format calls a
    constant ("initializer"). Raises `error` naming what breaks a rule."""
    defined = {}
    for k in inputs:
        if k in defined:
            raise error(f"graph input {name_of(k)} is listed twice")
        defined[k] = f"graph input {name_of(k)}"
    for k in constants:
        defined.setdefault(k, f"{constant} {name_of(k)}")
    for n in nodes:
        if ordered:
            for k in n.inputs:
                if k is not None and k not in defined:
                    later = any(k in m.outputs for m in nodes)
                    raise error(f"{n.label} reads {name_of(k)}, which " +
                                ("only a later node produces: the operators are not in execution order, or form "
                                 "a cycle" if later else "nothing produces (no graph input, constant or node)"))
        for k in n.outputs:
            if k is None:
                continue
            if k in defined:
                raise error(f"{n.label} writes {name_of(k)}, which {defined[k]} already defines "
                            f"(each tensor must have one producer)")
            defined[k] = n.label
    seen = set()
    for k in outputs:
        if k in seen:
            raise error(f"graph output {name_of(k)} is listed twice")
        seen.add(k)
    if not outputs:
        raise error("the model's graph has no outputs")
