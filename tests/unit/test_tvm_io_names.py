"""--io-names tvm: the header's I/O members are named as TVM's SanitizeName names them (513c2be,
src/runtime/name_transforms.cc: each byte of the name that is not an ASCII letter or digit becomes
'_', nothing else changes), and a clash is refused naming both tensors, as TVM refuses it
("Sanitized input tensor name clash"), where the default naming renames. Expected names are worked
out by hand from that rule."""
import io
import json
import tarfile

import pytest
from onnx import helper

import aot
from aot.errors import AotError
from conftest import make_model, vi


def _add_inputs(names, out="y"):
    """sum of the inputs (each [2]), one output."""
    nodes, acc = [], names[0]
    for k, n in enumerate(names[1:]):
        nodes.append(helper.make_node("Add", [acc, n], [f"t{k}" if k < len(names) - 2 else out], name=f"a{k}"))
        acc = f"t{k}"
    if len(names) == 1:
        nodes = [helper.make_node("Relu", [names[0]], [out], name="r")]
    return make_model(nodes, [vi(n, [2]) for n in names], [vi(out, [2])])


def _members(res):
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        md = json.load(t.extractfile("./metadata.json"))
        header = t.extractfile("./codegen/host/include/tvmgen_default.h").read().decode()
    return md, header


@pytest.mark.parametrize("name, c", [
    ("input-x::2", "input_x__2"),        # TVM's test_name_sanitiser
    ("a.b/c", "a_b_c"),
    ("_x", "_x"),
    ("x\u00e9t\u00e9", "x__t__"),          # é is two bytes in UTF-8: two '_'
    ("\u65e5", "___"),                   # three bytes
    ("a" * 80, "a" * 80),                # TVM does not shorten
])
def test_names_sanitised_as_tvm(name, c):
    res = aot.compile(_add_inputs([name]).SerializeToString(), io_names="tvm")
    assert [m for m, _, _ in res.plan.inputs] == [c]
    _, header = _members(res)
    assert f"void* {c};" in header
    assert f"TVMGEN_DEFAULT_{c.upper()}_SIZE 8" in header


def test_tvm_clash_refused_naming_both():
    # TVM's test_name_sanitiser_name_clash: 'input::-2' and 'input:--2' both give 'input___2'
    m = _add_inputs(["input::-1", "input::-2", "input:--2"])
    with pytest.raises(AotError) as e:
        aot.compile(m.SerializeToString(), io_names="tvm")
    msg = str(e.value)
    assert "'input::-2'" in msg and "'input:--2'" in msg and "input___2" in msg
    assert "Sanitized input tensor name clash" in msg and "\n" not in msg


def test_input_1_clash_refused_not_renamed():
    m = _add_inputs(["input:1", "input_1"])
    with pytest.raises(AotError, match="'input:1' and 'input_1' both sanitise to 'input_1'"):
        aot.compile(m.SerializeToString(), io_names="tvm")
    # the default naming still renames (and says so)
    res = aot.compile(m.SerializeToString())
    assert [c for c, _, _ in res.plan.inputs] == ["input_1", "input_1_1"]


@pytest.mark.parametrize("name, why", [
    ("1x", "starts with a digit"),       # TVM keeps '1x': `void* 1x;` would not compile
    ("int", "C keyword"),
    ("NULL", "standard macro"),
    ("__FILE__", "standard macro"),
])
def test_names_tvm_would_emit_uncompilable_refused(name, why):
    with pytest.raises(AotError, match=why) as e:
        aot.compile(_add_inputs([name]).SerializeToString(), io_names="tvm")
    assert f"'{name}'" in str(e.value)


@pytest.mark.parametrize("names, needles", [
    (["a", "A"], ["'a'", "'A'", "_A_SIZE"]),                  # members differ, the size macros do not
    (["workspace"], ["'workspace'", "workspace size macro"]),
])
def test_size_macro_clash_refused(names, needles):
    with pytest.raises(AotError) as e:
        aot.compile(_add_inputs(names).SerializeToString(), io_names="tvm")
    for n in needles:
        assert n in str(e.value)


def test_output_named_like_an_input_refused():
    # ONNX outputs are 'output' under TVM's naming: an input 'output' gives the same size macro
    with pytest.raises(AotError, match="input name 'output'.*output name 'output'|output name 'output'.*'output'"):
        aot.compile(_add_inputs(["output"], out="y").SerializeToString(), io_names="tvm")


def test_model_naming_unchanged():
    res = aot.compile(_add_inputs(["1x", "int"]).SerializeToString())
    assert [c for c, _, _ in res.plan.inputs] == ["_1x", "int_"]


def test_cli_refuses_clash_in_one_line_without_output(tmp_path, capsys):
    from aot.cli import main
    src, out = tmp_path / "m.onnx", tmp_path / "m.tar"
    src.write_bytes(_add_inputs(["input:1", "input_1"]).SerializeToString())
    rc = main(["compile", str(src), "-o", str(out), "--io-names", "tvm"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert "'input:1'" in err and "'input_1'" in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if ".tmp" in p.name]
