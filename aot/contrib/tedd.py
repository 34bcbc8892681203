"""tvm.contrib.tedd: the three views of a te schedule TVM's Tensor Expression Debug Display draws,
as Graphviz DOT text written here (no graphviz package is needed for the text):
  viz_dataflow_graph: tensors and the stages that compute them, edges along the data;
  viz_schedule_tree: the stages under the root or the loop they are computed at, each with its
    loops (leaf iteration variables) in nest order, their kind and extent;
  viz_itervar_relationship_graph: per stage, how split and fuse made its loops from its axes.
Each returns the DOT text when output_dot_string is set, writes it to dot_file_path when given,
and with show_svg renders it through Graphviz's `dot` into the notebook (which needs `dot` and
IPython; refused by name without them)."""
from __future__ import annotations

import html
import shutil
import subprocess

from ..errors import AotError
from ..te.schedule import Fuse, Split
from ..te.tensor import IterVar
from ..tir.simplify import const_value

# an iteration variable's kind (TVM's IterVarType names) and the colour it is drawn in
_KINDS = {
    IterVar.DataPar: ("kDataPar", "#FFFFFF"), IterVar.ThreadIndex: ("kThreadIndex", "#5DADE2"),
    IterVar.CommReduce: ("kCommReduce", "#F8C471"), IterVar.Ordered: ("kOrdered", "#E59866"),
    IterVar.DimInfo: ("kOpaque", "#BFC9CA"), IterVar.Unrolled: ("kUnrolled", "#C39BD3"),
    IterVar.Vectorized: ("kVectorized", "#85C1E9"), IterVar.Parallelized: ("kParallelized", "#F1948A"),
    IterVar.Tensorized: ("kTensorized", "#82E0AA"),
}
_ATTR_KIND = {"vectorize": IterVar.Vectorized, "unroll": IterVar.Unrolled, "parallel": IterVar.Parallelized,
              "thread_binding": IterVar.ThreadIndex}


def _schedule(sch):
    if not hasattr(sch, "stages") or not hasattr(sch, "inputs"):
        raise AotError(f"tedd: expected a te schedule (te.create_schedule), not {type(sch).__name__}")
    return sch


def _esc(s):
    return html.escape(str(s), quote=True)


def _quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _kind(stage, iv):
    kind = stage.iter_attrs.get(iv, {}).get("kind")
    return _ATTR_KIND.get(kind, iv.iter_type)


def _extents(stage):
    """{id(IterVar): its extent as text}: the axes' own, then through the splits and fuses."""
    ext = {}

    def val(iv):
        v = ext.get(id(iv))
        return v if v is not None else const_value(iv.extent)
    for iv in stage.all_iter_vars:
        c = const_value(iv.extent)
        ext[id(iv)] = c if c is not None else None
    for r in stage.relations:
        if isinstance(r, Split):
            p = val(r.parent)
            n = const_value(r.factor if r.factor is not None else r.nparts)
            n = n if n is not None else (r.factor if r.factor is not None else r.nparts)
            if not isinstance(n, int):
                n = const_value(n)
            if p is not None and n:
                other = -(-p // n)
                ext[id(r.inner)], ext[id(r.outer)] = (n, other) if r.factor is not None else (other, n)
        elif isinstance(r, Fuse):
            a, b = val(r.outer), val(r.inner)
            if a is not None and b is not None:
                ext[id(r.fused)] = a * b
    return {k: ("?" if v is None else str(v)) for k, v in ext.items()}


def _scope(stage):
    return stage.scope or "global"


def _emit(dot, show_svg, dot_file_path, output_dot_string):
    if dot_file_path:
        with open(dot_file_path, "w") as f:
            f.write(dot)
    if show_svg:
        if shutil.which("dot") is None:
            raise AotError("tedd: show_svg renders through Graphviz's `dot` program, which is not installed: write "
                           "the DOT text (dot_file_path=...) and render it elsewhere")
        try:
            from IPython.display import SVG, display
        except ImportError:
            raise AotError("tedd: show_svg displays in a Jupyter notebook (IPython), which is not installed: write "
                           "the DOT text (dot_file_path=...) instead") from None
        svg = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, check=True).stdout
        display(SVG(svg))
    return dot if output_dot_string else ""


def _stage_ids(sch):
    return {id(st): f"Stage_{k}" for k, st in enumerate(sch.stages)}


def viz_dataflow_graph(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """The dataflow graph: a node per input tensor and per stage (its output tensors as ports),
    an edge from each tensor to each stage that reads it."""
    sch = _schedule(sch)
    ids = _stage_ids(sch)
    lines = ['digraph "Dataflow Graph" {', "\trankdir=LR", "\tnode [shape=plaintext]"]
    tensor_node = {}
    for k, t in enumerate(sch.inputs):
        nid = f"Tensor_{k}"
        tensor_node[t.uid] = (nid, None)
        shape = ", ".join(str(d) for d in t.shape)
        lines.append(f'\t{nid} [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0"><TR><TD>{_esc(t.name)}'
                     f'<br/>({_esc(shape)})<br/>{_esc(t.dtype)}</TD></TR></TABLE>>]')
    for st in sch.stages:
        nid = ids[id(st)]
        outs = list(st.op.outputs) if hasattr(st.op, "outputs") else [st.tensor]
        ins = list(getattr(st.op, "input_tensors", []))
        rows = "".join(f'<TD PORT="I_{i}">{_esc(t.name)}</TD>' for i, t in enumerate(ins)) or "<TD></TD>"
        outrows = "".join(f'<TD PORT="O_{i}">{_esc(t.name)}<br/>({_esc(", ".join(str(d) for d in t.shape))})</TD>'
                          for i, t in enumerate(outs))
        span = max(len(ins), len(outs), 1)
        lines.append(f'\t{nid} [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0"><TR>{rows}</TR>'
                     f'<TR><TD COLSPAN="{span}" BGCOLOR="lightgrey">{_esc(st.op.name)}<br/>Scope: '
                     f'{_esc(_scope(st))}</TD></TR><TR>{outrows}</TR></TABLE>>]')
        for i, t in enumerate(outs):
            tensor_node[t.uid] = (nid, f"O_{i}")
    for st in sch.stages:
        for i, t in enumerate(getattr(st.op, "input_tensors", [])):
            src = tensor_node.get(t.uid)
            if src is None:
                continue
            head = src[0] + (f":{src[1]}" if src[1] else "")
            lines.append(f"\t{head} -> {ids[id(st)]}:I_{i}")
    lines.append("}")
    return _emit("\n".join(lines) + "\n", show_svg, dot_file_path, output_dot_string)


def viz_schedule_tree(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """The schedule tree: each stage under the root, or under the loop of the stage it is
    computed at; a stage's node lists its loops in nest order (index, name, kind, extent)."""
    sch = _schedule(sch)
    ids = _stage_ids(sch)
    lines = ['digraph "Schedule Tree" {', "\trankdir=BT", "\tnode [shape=plaintext]",
             '\tROOT [label="ROOT" shape=oval]']
    for st in sch.stages:
        if st.attach_type == "inline":
            continue
        ext = _extents(st)
        rows = "".join(
            f'<TR><TD PORT="IV_{i}">{i}</TD><TD BGCOLOR="{_KINDS[_kind(st, iv)][1]}">{_esc(iv.name)}'
            f'({_KINDS[_kind(st, iv)][0]})<br/>range(min=0, ext={ext.get(id(iv), "?")})</TD></TR>'
            for i, iv in enumerate(st.leaf_iter_vars))
        lines.append(f'\t{ids[id(st)]} [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0"><TR><TD COLSPAN="2" '
                     f'BGCOLOR="lightgrey">{_esc(st.op.name)}<br/>Scope: {_esc(_scope(st))}</TD></TR>{rows}'
                     f'</TABLE>>]')
    for st in sch.stages:
        if st.attach_type == "inline":
            continue
        if st.attach_type == "scope" and st.attach_stage is not None:
            parent = st.attach_stage
            k = next((i for i, v in enumerate(parent.leaf_iter_vars) if v is st.attach_ivar), None)
            lines.append(f"\t{ids[id(st)]} -> {ids[id(parent)]}" + (f":IV_{k}" if k is not None else ""))
        else:
            lines.append(f"\t{ids[id(st)]} -> ROOT")
    lines.append("}")
    return _emit("\n".join(lines) + "\n", show_svg, dot_file_path, output_dot_string)


def viz_itervar_relationship_graph(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """Per stage (a cluster), its iteration variables and the split / fuse relations between
    them; a loop of the nest is labelled with its position among the stage's leaves."""
    sch = _schedule(sch)
    ids = _stage_ids(sch)
    lines = ['digraph "IterVar Relationship Graph" {', "\trankdir=TB", "\tnode [shape=plaintext]"]
    for st in sch.stages:
        sid = ids[id(st)]
        ext = _extents(st)
        iv_id = {id(iv): f"{sid}_IterVar_{k}" for k, iv in enumerate(st.all_iter_vars)}
        leaf = {id(iv): k for k, iv in enumerate(st.leaf_iter_vars)}
        lines.append(f"\tsubgraph cluster_{sid} {{")
        lines.append(f"\t\tlabel={_quote(st.op.name)}")
        for iv in st.all_iter_vars:
            k = leaf.get(id(iv), "")
            name, color = _KINDS[_kind(st, iv)]
            lines.append(f'\t\t{iv_id[id(iv)]} [label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0"><TR>'
                         f'<TD>{k}</TD><TD BGCOLOR="{color}">{_esc(iv.name)}({name})<br/>range(min=0, '
                         f'ext={ext.get(id(iv), "?")})</TD></TR></TABLE>>]')
        for r, rel in enumerate(st.relations):
            rid = f"{sid}_{type(rel).__name__}Relation_{r}"
            if isinstance(rel, Split):
                lines.append(f'\t\t{rid} [label="Split" shape=box]')
                lines.append(f"\t\t{iv_id[id(rel.parent)]} -> {rid}")
                lines.append(f'\t\t{rid} -> {iv_id[id(rel.outer)]} [label="outer"]')
                lines.append(f'\t\t{rid} -> {iv_id[id(rel.inner)]} [label="inner"]')
            elif isinstance(rel, Fuse):
                lines.append(f'\t\t{rid} [label="Fuse" shape=box]')
                lines.append(f'\t\t{iv_id[id(rel.outer)]} -> {rid} [label="outer"]')
                lines.append(f'\t\t{iv_id[id(rel.inner)]} -> {rid} [label="inner"]')
                lines.append(f"\t\t{rid} -> {iv_id[id(rel.fused)]}")
        lines.append("\t}")
    lines.append("}")
    return _emit("\n".join(lines) + "\n", show_svg, dot_file_path, output_dot_string)
