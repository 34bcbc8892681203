"""The pieces of TVM's Python API that TVM's own MLF and header tests use (bench/tvm_mlf_tests.py):
relay.fromtext, tvm.TVMError, tvm.testing.requires_*, TempDirectory.set_keep_for_debug,
tvm.target.target.micro and an int8 conv2d summed in int32."""
import os

import pytest

import aot
import aot.relay as relay
import aot.testing
from aot.contrib import utils

TEXT = """
#[version = "0.0.5"]
def @main(%a : Tensor[(1, 2), uint8], %b : Tensor[(1, 2), float32], %c: Tensor[(1, 2), float32]) {
  %0 = cast(%a, dtype="float32") + %b * %c /* ty=Tensor[(1, 2), float32] */;
  %0
}"""


def test_fromtext_reads_tvm_printed_main():
    mod = relay.fromtext(TEXT)
    f = mod["main"]
    assert [p.name_hint for p in f.params] == ["a", "b", "c"]
    # precedence: the product first, then the sum
    assert str(mod).splitlines()[1:4] == ['  %0 = cast(%a, dtype="float32");', "  %1 = multiply(%b, %c);",
                                          "  add(%0, %1)"]


@pytest.mark.parametrize("text, needle", [
    ("def @f(%a: Tensor[(1), float32]) { %a }", "only a main"),
    ("def @main(%a: Tensor[(1), float32]) { %b }", "%b is used before it is defined"),
    ("def @main(%a: Tensor[(1), float32]) { fn (%a) }", "op fn"),
])
def test_fromtext_refuses_by_name(text, needle):
    with pytest.raises(aot.AotError, match=needle):
        relay.fromtext(text)


def test_tvm_error_is_aot_error():
    assert aot.TVMError is aot.AotError


def test_requires_marks():
    def f():
        pass
    assert aot.testing.requires_micro(f) is f

    def g():
        pass

    def h():
        pass
    assert aot.testing.requires_cmsisnn(g) is g          # cmsis-nn is a partition target of aot
    assert [m.name for m in aot.testing.requires_corstone300(g).pytestmark] == ["skip"]
    assert not hasattr(aot.testing.requires_package("numpy")(f), "pytestmark")
    assert aot.testing.requires_package("no_such_pkg_xyz")(h).pytestmark[0].name == "skip"


def test_keep_for_debug():
    with utils.TempDirectory.set_keep_for_debug(True):
        d = utils.tempdir()
    path = d.temp_dir
    d.remove()
    assert os.path.isdir(path)
    os.rmdir(path)
    d = utils.tempdir()
    d.remove()
    assert not os.path.isdir(d.temp_dir)


def test_target_target_micro():
    assert aot.target.target.micro("host").kind.name == "c"


def test_conv2d_int8_to_int32():
    from aot.micro.testing.utils import get_conv2d_relay_module
    mod = get_conv2d_relay_module()
    assert 'out_dtype="int32"' in str(mod)
    with pytest.raises(aot.AotError, match="out_dtype int32 takes int8 or uint8"):
        d = relay.var("d", relay.TensorType((1, 3, 8, 8), "float32"))
        w = relay.var("w", relay.TensorType((2, 3, 3, 3), "float32"))
        relay.build(relay.IRModule.from_expr(relay.Function([d, w], relay.nn.conv2d(d, w, out_dtype="int32"))), "c")


def test_aot_error_is_a_runtime_error_as_tvm_error():
    assert issubclass(aot.TVMError, RuntimeError)


def test_param_dict_round_trip_and_refusals():
    import numpy as np
    data = relay.save_param_dict({"p0": np.arange(6, dtype="float32").reshape(2, 3), "k": np.array([-1, 2], "int8")})
    # TVM's list magic, little-endian, first; then reserved 0 and 2 names
    assert data[:8] == bytes.fromhex("b79c04054f8de5f7") and data[8:24] == bytes(8) + (2).to_bytes(8, "little")
    got = relay.load_param_dict(data)
    assert list(got) == ["p0", "k"]
    np.testing.assert_array_equal(got["p0"].numpy(), np.arange(6, dtype="float32").reshape(2, 3))
    assert got["k"].numpy().dtype == np.int8
    with pytest.raises(aot.AotError, match="magic"):
        relay.load_param_dict(b"\0" * 32)
    with pytest.raises(aot.AotError, match="ends at byte"):
        relay.load_param_dict(data[:40])


def test_output_tensor_names_attr_names_nested_outputs():
    a = relay.var("a", shape=(2,), dtype="int32")
    b = relay.var("b", shape=(3,), dtype="float32")
    body = relay.Tuple([a + relay.const(1), relay.Tuple([relay.Tuple([a + relay.const(2)]), b + relay.const(1.0)])])
    attrs = aot.ir.make_node("DictAttrs", output_tensor_names=["o_a", "o_b", "o_c"])
    lib = relay.build(aot.IRModule.from_expr(relay.Function([a, b], body, attrs=attrs)), "c",
                      executor=relay.backend.Executor("aot"), runtime=relay.backend.Runtime("crt"))
    assert [n for _, n, _ in lib.result.plan.outputs] == ["o_a", "o_b", "o_c"]
    with pytest.raises(aot.AotError, match="names 2 outputs"):
        bad = aot.ir.make_node("DictAttrs", output_tensor_names=["x", "y"])
        relay.build(aot.IRModule.from_expr(relay.Function([a, b], body, attrs=bad)), "c",
                    executor=relay.backend.Executor("aot"), runtime=relay.backend.Runtime("crt"))
    with pytest.raises(aot.AotError, match="make_node: node type 'Foo'"):
        aot.ir.make_node("Foo")


def test_ir_module_takes_relay_functions_as_tvm():
    from aot.ir.module import IRModule
    x = relay.var("input-x::2", shape=(1,), dtype="float32")
    assert isinstance(IRModule.from_expr(x), relay.IRModule)
    assert isinstance(IRModule({"main": relay.Function([x], x)}), relay.IRModule)


def test_unnamed_placeholders_distinct_as_tvm():
    from aot import te
    A = te.placeholder((2,), dtype="int8")
    B = te.placeholder((1,), dtype="int8")
    C = te.compute(A.shape, lambda i: A[i] + B[0], name="C")
    text = str(aot.lower(te.create_schedule(C.op), [A, B, C], simple_mode=True))
    assert "def main(placeholder: T.Buffer((2,), \"int8\"), placeholder_1: T.Buffer((1,), \"int8\")" in text
