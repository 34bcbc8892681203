"""Build caches are keyed by the content of what they build: the MLF, the harness as rendered,
the compiler and its flags. A change to any of them builds anew; nothing is keyed by a version
string someone has to remember to bump."""
import os

import pytest
from onnx import helper

from conftest import make_model, vi


@pytest.fixture(scope="module")
def tar():
    import aot
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("y", None)])
    return aot.compile(m).tar


def test_host_cache_follows_the_rendered_harness(tar, monkeypatch):
    import codegen_c.emit
    from aot.host import build_host
    first = build_host(tar)
    assert build_host(tar) == first                              # same content: reused
    assert build_host(tar, opt="-O1") != first                   # other flags: another build
    real = codegen_c.emit.render_template
    monkeypatch.setattr(codegen_c.emit, "render_template",
                        lambda name, **kw: real(name, **kw) + ("\n/* harness changed */\n"
                                                               if name == "host_main.c.j2" else ""))
    changed = build_host(tar)
    assert changed != first and os.path.exists(changed)
