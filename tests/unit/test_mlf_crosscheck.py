"""The MLF cross-checks (mlf/crosscheck.py), case by case, on MLFs whose digests are recomputed
after the edit: the semantic checks alone refuse each, naming both sides of the contradiction.
No compiler starts: each is refused by mlf.validate, the check every build goes through."""
import hashlib
import json

import numpy as np
import pytest
from onnx import helper

from conftest import init, make_model, vi
from mlf_mutate import members, pack


def _chain(**options):
    import aot
    rng = np.random.default_rng(7)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    m = make_model(nodes, [vi("x", [1, 2, 8, 8])], [vi("y", [1, 4, 4, 4])],
                   [init("w", rng.standard_normal((4, 2, 3, 3)).astype(np.float32))])
    return aot.compile(m.SerializeToString(), **options).tar


@pytest.fixture(scope="module")
def plain():
    return _chain()


@pytest.fixture(scope="module")
def pools():
    return _chain(workspace_pools=[("sram", None)])


def _problems(files, reseal=True):
    from mlf import read_mlf, validate
    if reseal:
        meta = json.loads(files["metadata.json"])
        meta["modules"]["default"]["aot"]["digests"] = {p: hashlib.sha256(d).hexdigest()
                                                        for p, d in files.items() if p != "metadata.json"}
        files = dict(files, **{"metadata.json": json.dumps(meta).encode()})
    return validate(read_mlf(pack(files)))


def _edit_meta(files, fn):
    meta = json.loads(files["metadata.json"])
    fn(meta["modules"]["default"], meta["modules"]["default"]["aot"])
    return dict(files, **{"metadata.json": json.dumps(meta).encode()})


def _edit_member(files, path, fn):
    return dict(files, **{path: fn(files[path].decode()).encode()})


HDR = "codegen/host/include/tvmgen_default.h"
CASES = {
    "workspace macro": (lambda f: _edit_member(f, HDR, lambda t: t.replace("WORKSPACE_SIZE 1024", "WORKSPACE_SIZE 16")),
                        ["the header's TVMGEN_DEFAULT_WORKSPACE_SIZE is 16",
                         "memory.functions.main[0].workspace_size_bytes is 1024"]),
    "workspace metadata": (lambda f: _edit_meta(f, lambda m, a: m["memory"]["functions"]["main"][0].update(
        workspace_size_bytes=16)), ["TVMGEN_DEFAULT_WORKSPACE_SIZE is 1024", "workspace_size_bytes is 16"]),
    "workspace override": (lambda f: _edit_member(f, HDR, lambda t: t.replace(
        "#endif  /*", "#define TVMGEN_DEFAULT_WORKSPACE_BYTES 16\n#endif  /*")),
        ["defines TVMGEN_DEFAULT_WORKSPACE_BYTES, which its metadata does not account for"]),
    "interface api": (lambda f: _edit_meta(f, lambda m, a: a.update(interface_api="packed")),
                      ["the c entry point", "aot.interface_api is 'packed'"]),
    "workspace io": (lambda f: _edit_meta(f, lambda m, a: a.update(use_workspace_io=True)),
                     ["lacks tvmgen_default_map_inputs", "aot.use_workspace_io is true"]),
    "c name": (lambda f: _edit_member(f, HDR, lambda t: t.replace("void* y;", "void* z;")),
               ["struct tvmgen_default_outputs has members ['z']", "C names ['y']"]),
    "io size": (lambda f: _edit_meta(f, lambda m, a: m["memory"]["functions"]["main"][0].update(io_size_bytes=1)),
                ["io_size_bytes is 1", "add up to 768"]),
    "plan row": (lambda f: _edit_meta(f, lambda m, a: a["workspace_tensors"][0].update(offset=200)),
                 ["aot.workspace_tensors[0]", "ends at byte 1224", "workspace_size_bytes 1024"]),
    "lower bound": (lambda f: _edit_meta(f, lambda m, a: a.update(workspace_lower_bound_bytes=3000)),
                    ["workspace_lower_bound_bytes 3000 is above", "workspace_size_bytes 1024"]),
    "unlisted source": (lambda f: dict(f, **{"codegen/host/src/extra.c": b"int x;\n"}),
                        ["./codegen/host/src/extra.c is not listed in metadata aot.sources"]),
    "source not listed": (lambda f: _edit_meta(f, lambda m, a: a["sources"].remove("codegen/host/src/default_lib1.c")),
                          ["./codegen/host/src/default_lib1.c is not listed in metadata aot.sources"]),
    "shadowed std header": (lambda f: dict(f, **{"codegen/host/include/math.h": b"\n"}),
                            ["./codegen/host/include/math.h would stand in for the C library's <math.h>"]),
    "shadowed own header": (lambda f: dict(f, **{"codegen/host/src/tvmgen_default.h": f[HDR]}),
                            ["./codegen/host/src/tvmgen_default.h would stand in for ./" + HDR]),
    "missing runtime header": (lambda f: {p: d for p, d in f.items() if not p.endswith("dlpack.h")},
                               ["includes <dlpack/dlpack.h>, which is not a member"]),
    "output shape": (lambda f: _edit_meta(f, lambda m, a: a["outputs"][0].update(shape=[1, 4, 16])),
                     ["aot.outputs[0] ('y') is float32[1, 4, 16]", "src/default.relay has float32[1, 4, 4, 4]"]),
    "make fragment": (lambda f: _edit_member(f, "mlf.mk", lambda t: t.replace(" $(TVMGEN_DEFAULT_DIR)/codegen/host/src/"
                                                                              "default_lib1.c", "")),
                      ["./mlf.mk compiles ['codegen/host/src/default_lib0.c']", "aot.sources lists"]),
    "kernels": (lambda f: _edit_meta(f, lambda m, a: a.update(kernels=a["kernels"] + ["tvmgen_default_x"])),
                ["aot.kernels", "operator_functions"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_contradiction_named_with_digests_recomputed(plain, case):
    edit, needles = CASES[case]
    problems = _problems(edit(members(plain)))
    text = "; ".join(problems)
    assert problems and all("\n" not in q for q in problems)
    for n in needles:
        assert n in text, (n, text)


def test_pool_contradictions(pools):
    f = members(pools)
    text = "; ".join(_problems(_edit_meta(f, lambda m, a: a["workspace_pools"][0].update(size=16))))
    assert "TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE is 1024, not 16" in text, text
    text = "; ".join(_problems(_edit_meta(f, lambda m, a: a["workspace_tensors"][0].update(pool="dram"))))
    assert "in pool 'dram', which aot.workspace_pools does not list" in text, text


def test_untouched_mlfs_pass(plain, pools):
    assert _problems(members(plain), reseal=False) == []
    assert _problems(members(pools), reseal=False) == []


def test_digest_names_the_member(plain):
    """Without the digests recomputed, a change to the C code, which nothing else witnesses, is
    refused by the digest aot recorded, naming the member."""
    f = _edit_member(members(plain), "codegen/host/src/default_lib1.c", lambda t: t.replace("< 0.0f) ? 0.0f", "< 0.0f) ? 1.0f"))
    problems = _problems(f, reseal=False)
    assert len(problems) == 1 and problems[0].startswith(
        "member ./codegen/host/src/default_lib1.c differs from the one aot wrote (sha256 "), problems
    f = dict(members(plain), **{"notes.txt": b"hi"})
    assert _problems(f, reseal=False) == ["member ./notes.txt is not one aot wrote (metadata aot.digests does not "
                                          "list it)"]
    f = _edit_meta(members(plain), lambda m, a: a.pop("digests"))
    assert "compile the model again" in _problems(f, reseal=False)[0]
