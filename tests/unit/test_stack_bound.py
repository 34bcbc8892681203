"""The stack bound's graph logic on call graphs written here as GCC writes them (-fcallgraph-info=su):
the deepest path wins, statics of one name in two units stay apart, and recursion, indirect calls
and variable frames leave no bound. The board tier checks bounds against measured stacks."""
import pytest

from aot.stack_bound import CallGraph, StackBoundError, _reg_bytes, _sp_decrement


def _ci(tmp_path, name, nodes, edges):
    lines = [f'graph: {{ title: "{name}"']
    for title, label in nodes:
        lines.append(f'node: {{ title: "{title}" label: "{label}" }}')
    for a, b in edges:
        lines.append(f'edge: {{ sourcename: "{a}" targetname: "{b}" }}')
    p = tmp_path / (name + ".ci")
    p.write_text("\n".join(lines + ["}"]) + "\n")
    return str(p)


def fn(name, n, kind="static"):
    return (name, f"{name.split(':')[-1]}\\na.c:1:1\\n{n} bytes ({kind})")


def test_deepest_path_and_statics_kept_apart(tmp_path):
    a = _ci(tmp_path, "a", [fn("run", 8), fn("a.c:helper", 100)],
            [("run", "a.c:helper"), ("run", "leaf")])
    b = _ci(tmp_path, "b", [fn("leaf", 16), fn("b.c:helper", 400)], [("leaf", "b.c:helper")])
    g = CallGraph([a, b])
    bd = g.bound("run")
    assert bd.bytes == 8 + 16 + 400 and bd.path == ["run", "leaf", "helper"]
    assert [f[1] for f in g.frames(bd)] == [8, 16, 400]


def test_recursion_is_refused_with_the_cycle(tmp_path):
    a = _ci(tmp_path, "a", [fn("run", 8), fn("f", 4), fn("g", 4)], [("run", "f"), ("f", "g"), ("g", "f")])
    with pytest.raises(StackBoundError, match="recursion.*f -> g -> f"):
        CallGraph([a]).bound("run")


@pytest.mark.parametrize("case,why", [("indirect", "function pointer"), ("dynamic", "variable-sized"),
                                      ("missing", "defined nowhere")])
def test_no_bound_says_why(tmp_path, case, why):
    nodes = [fn("run", 8), fn("f", 4, "dynamic" if case == "dynamic" else "static")]
    edges = [("run", "f")] + ([("f", "__indirect_call")] if case == "indirect" else []) + \
        ([("f", "ext")] if case == "missing" else [])
    bd = CallGraph([_ci(tmp_path, "a", nodes, edges)]).bound("run")
    assert bd.bytes is None and why in bd.why and bd.path[0] == "run"


def test_dynamic_bounded_counts_as_a_bound(tmp_path):
    a = _ci(tmp_path, "a", [fn("run", 24, "dynamic,bounded")], [])
    assert CallGraph([a]).bound("run").bytes == 24


@pytest.mark.parametrize("op,args,n", [("push", "{r4, r5, r6, lr}", 16), ("push.w", "{r4, r5, r6, r7, r8, r9, sl, fp, lr}", 36),
                                       ("vpush", "{d8-d15}", 64), ("vpush", "{s16-s17}", 8), ("sub", "sp, #68", 68),
                                       ("sub.w", "sp, sp, #1024", 1024), ("subw", "sp, sp, #2052", 2052),
                                       ("str.w", "lr, [sp, #-4]!", 4), ("strd", "r4, r5, [sp, #-8]!", 8),
                                       ("stmdb", "sp!, {r4, lr}", 8), ("add", "sp, #8", 0), ("pop", "{r4, pc}", 0)])
def test_prologue_decrements(op, args, n):
    assert _sp_decrement(op, args) == (n, False)


def test_register_sub_is_dynamic():
    assert _sp_decrement("sub", "sp, r3")[1] is True
    assert _reg_bytes("{d8, d9}") == 16
