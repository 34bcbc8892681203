"""tvm.contrib.tedd: the DOT text of a te schedule's dataflow graph, schedule tree and itervar
relationship graph, as the tedd tutorial writes them; and s.normalize()."""
import re

import pytest

import aot
from aot import te, topi
from aot.contrib import tedd


def _sched():
    A = te.placeholder((16, 16), name="A")
    B = te.compute((16, 16), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((16, 16), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    f = s[C].fuse(xi, C.op.axis[1])
    s[C].vectorize(f)
    s[B].compute_at(s[C], xo)
    return s


def _edges(dot):
    return re.findall(r"^\s*(\w+)(?::\w+)? -> (\w+)(?::(\w+))?", dot, re.M)


def test_dataflow_graph_follows_the_data(tmp_path):
    path = tmp_path / "dfg.dot"
    assert tedd.viz_dataflow_graph(_sched(), dot_file_path=str(path)) == ""
    dot = path.read_text()
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    # A (an input) -> the stage computing B -> the stage computing C
    assert [(a, b) for a, b, _ in _edges(dot)] == [("Tensor_0", "Stage_0"), ("Stage_0", "Stage_1")]
    assert ">A<" in dot and ">B<" in dot.replace("<br/>", "<") and "C<br/>" in dot


def test_schedule_tree_puts_a_stage_under_the_loop_it_is_computed_at():
    dot = tedd.viz_schedule_tree(_sched(), output_dot_string=True)
    edges = _edges(dot)
    assert ("Stage_0", "Stage_1", "IV_0") in edges           # B at C's i.outer, C's first loop
    assert ("Stage_1", "ROOT", None) in [(a, b, c or None) for a, b, c in edges]
    # C's loops in nest order: i.outer, then the fused (vectorized) loop of extent 4 * 16
    assert re.search(r"i\.outer\(kDataPar\)<br/>range\(min=0, ext=4\)", dot)
    assert re.search(r"i\.inner\.j\.fused\(kVectorized\)<br/>range\(min=0, ext=64\)", dot)


def test_itervar_graph_has_the_split_and_the_fuse():
    dot = tedd.viz_itervar_relationship_graph(_sched(), output_dot_string=True)
    assert dot.count('[label="Split" shape=box]') == 1 and dot.count('[label="Fuse" shape=box]') == 1
    # C's axes: i, j, then i.outer, i.inner (split), then the fused loop
    assert 'Stage_1_IterVar_0 -> Stage_1_SplitRelation_0' in dot
    assert 'Stage_1_SplitRelation_0 -> Stage_1_IterVar_2 [label="outer"]' in dot
    assert 'Stage_1_FuseRelation_1 -> Stage_1_IterVar_4' in dot


def test_tutorial_conv_stages_and_normalize():
    A = te.placeholder((8, 8, 4, 1), name="A")
    W = te.placeholder((3, 3, 4, 6), name="W")
    with aot.target.Target("llvm"):
        out = topi.nn.relu(topi.nn.conv2d_hwcn(A, W, 1, "SAME", 1))
        s = topi.generic.schedule_conv2d_hwcn([out])
    assert [st.op.name for st in s.stages] == ["PaddedInput", "Conv2dOutput", "compute"]
    conv = s.stages[1].op
    assert [iv.var.name for iv in conv.axis] == ["yy", "xx", "ff", "nn"]
    assert [iv.var.name for iv in conv.reduce_axis] == ["ry", "rx", "rc"]
    assert [int(d) for d in conv.output(0).shape] == [8, 8, 6, 1]
    assert s.normalize() is s


def test_normalize_refuses_a_loop_not_starting_at_zero():
    A = te.placeholder((10,), name="A")
    k = te.reduce_axis((2, 10), name="k")
    C = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="C")
    with pytest.raises(aot.AotError, match="normalize: loop k"):
        te.create_schedule(C.op).normalize()


def test_show_svg_without_graphviz_is_refused(monkeypatch):
    monkeypatch.setattr(tedd.shutil, "which", lambda name: None)
    with pytest.raises(aot.AotError, match="Graphviz"):
        tedd.viz_schedule_tree(_sched(), show_svg=True)
