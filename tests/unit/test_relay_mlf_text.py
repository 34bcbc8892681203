"""The MLF of a relay.build holds the relay module as relay prints it in src/<mod>.relay, as TVM's
export writes str(factory.ir_mod) there (its test_export_model_library_format_c compares the two);
the graph aot lowered it to is src/<mod>.graph, which the graph I/O cross-check then reads. An
ONNX compile keeps its graph in src/<mod>.relay, with no .graph."""
import io
import json
import tarfile

import numpy as np
import onnx
from onnx import TensorProto, helper

import aot as tvm
from aot import relay
from aot.host import mlf_problems
from aot.relay.backend import Executor, Runtime
from mlf import read_mlf
from mlf.writer import reseal, write_tar


def _files(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name[2:]: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def _relay_build():
    mod = tvm.relay.fromtext("""
        #[version = "0.0.5"]
        def @main(%a : Tensor[(1, 2), uint8], %b : Tensor[(1, 2), float32], %c : Tensor[(1, 2), float32]) {
        %0 = cast(%a, dtype="float32") + %b * %c;
        %0
        }""")
    with tvm.transform.PassContext(opt_level=3):
        fac = relay.build(mod, "c", executor=Executor("aot"), runtime=Runtime("crt"), mod_name="add",
                          params={"c": np.array([[2.0, 4.0]], dtype="float32")})
    return mod, fac


def test_relay_builds_mlf_holds_the_relay_text_and_the_graph():
    mod, fac = _relay_build()
    files = _files(fac.tar)
    assert files["src/add.relay"].decode() == str(mod)
    assert files["src/add.relay"].decode().startswith("def @main(%a: Tensor[(1, 2), uint8]")
    graph = files["src/add.graph"].decode()
    assert graph.startswith("graph add (") and "  input %a: uint8[1, 2]" in graph
    assert mlf_problems(read_mlf(fac.tar)) == []


def test_the_cross_check_reads_the_graph_of_a_relay_build():
    _, fac = _relay_build()
    files = _files(fac.tar)
    meta = json.loads(files["metadata.json"])
    meta["modules"]["add"]["aot"]["outputs"][0]["shape"] = [2, 1]
    files["metadata.json"] = json.dumps(meta).encode()
    p = mlf_problems(read_mlf(reseal(write_tar(files))))
    assert any("src/add.graph has float32[1, 2]" in x for x in p), p


def test_an_onnx_compile_keeps_its_graph_in_the_relay_member():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    files = _files(tvm.compile(m.SerializeToString()).tar)
    assert files["src/default.relay"].decode().startswith("graph default (") and "src/default.graph" not in files
    onnx.checker.check_model(m)
