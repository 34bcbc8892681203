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
    assert [m.name for m in aot.testing.requires_cmsisnn(g).pytestmark] == ["skip"]
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
