"""Names from a model never reach C unsanitised, never collide, never inject text."""
import io
import tarfile

import numpy as np
from onnx import helper

from conftest import check_model, make_model, vi

EVIL = 'x */ #include <stdlib.h>\n int y; /* "'


def test_hostile_and_colliding_names():
    nodes = [helper.make_node("Add", ["in:0", "in.0"], ["t"], name="n */ evil\n#define X"),
             helper.make_node("Mul", ["t", "int"], [EVIL], name="*/"),
             helper.make_node("Relu", [EVIL], ["WORKSPACE"]),
             helper.make_node("Neg", ["t"], ["0out"])]
    m = make_model(nodes, [vi("in:0", [2, 3]), vi("in.0", [2, 3]), vi("int", [3])],
                   [vi(EVIL, None), vi("WORKSPACE", None), vi("0out", None)])
    r = np.random.default_rng(0)
    feeds = {"in:0": r.standard_normal((2, 3)).astype(np.float32), "in.0": r.standard_normal((2, 3)).astype(np.float32),
             "int": r.standard_normal(3).astype(np.float32)}
    res, out = check_model(m, feeds)
    assert any("in_0" in n for n in res.notes)          # the collision is reported
    c_names = [c for c, _, _ in res.plan.inputs] + [c for c, _, _ in res.plan.outputs]
    assert c_names == ["in_0", "in_0_1", "int_", "x_____include__stdlib_h___int_y______", "WORKSPACE_1", "_0out"]
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        for mem in t.getmembers():
            if mem.name.endswith((".c", ".h")) and "/runtime/" not in mem.name:
                text = t.extractfile(mem).read().decode()
                for fragment in ("<stdlib.h>", "evil", "int y;", "#define X"):
                    assert fragment not in text, (mem.name, fragment)
                assert text.count("/*") == text.count("*/"), mem.name
