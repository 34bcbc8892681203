"""Target: TVM-style strings parsed into one object, carried through the compile, recorded in
metadata.json; a board implies its target."""
import json
import tarfile
import io

import aot
import pytest
from onnx import helper

from conftest import make_model, vi
from aot.errors import AotError
from aot.target import Target


def test_parse_and_canonical_string():
    t = Target("c  -mcpu=cortex-m4")
    # str() as TVM prints a Target: keys always, options by name; short_str() as written, less default keys
    assert (t.kind, t.mcpu, t.keys, str(t)) == ("c", "cortex-m4", ("arm_cpu", "cpu"), "c -keys=arm_cpu,cpu -mcpu=cortex-m4")
    assert t.short_str() == "c -mcpu=cortex-m4"
    assert Target("c").keys == ("cpu",) and str(Target("c -keys=cpu")) == "c -keys=cpu" and Target("c -keys=cpu") == Target("c")
    assert Target("c -keys=cpu").short_str() == "c"
    # attributes print in one order whatever order they were given in, so equal targets print alike
    a, b = Target("c -model=x -mcpu=cortex-m55"), Target("c -mcpu=cortex-m55 -model=x")
    assert a == b and str(a) == str(b) == "c -keys=arm_cpu,cpu -mcpu=cortex-m55 -model=x"
    assert Target(a) == a and Target(str(a)) == a
    assert str(Target("c -keys=arm_cpu,cpu,dsp -mattr=+dsp,+mve")) == "c -keys=arm_cpu,cpu,dsp -mattr=+dsp,+mve"


def test_host_and_target_lists():
    t = Target("c -mcpu=cortex-m55", host="c")
    assert t.host == Target("c") and repr(t) == "Target('c -mcpu=cortex-m55', host='c')"
    assert t.export()["host"]["kind"] == "c"
    assert Target.list("c -mcpu=cortex-m4; c") == [Target("c -mcpu=cortex-m4"), Target("c")]
    with pytest.raises(AotError, match="empty entry"):
        Target.list("c;")


@pytest.mark.parametrize("text,needle", [
    ("", "empty target"),
    ("rocm", "target kind 'rocm' is not supported"),
    ("cuda -libs=cmsis-nn", "library 'cmsis-nn' is not supported for kind 'cuda'"),
    ("llvm -bogus=x", "not known for kind 'llvm'"),
    ("c mcpu=cortex-m4", "must look like -name=value"),
    ("c -mcpu=", "must look like -name=value"),
    ("c -mcpu=a -mcpu=b", "given twice"),
    ("c -bogus=1", "'-bogus' is not known for kind 'c'"),
    ("c -mcpu=cortex-m4;rm", "invalid value"),
    ("c -libs=cmsis-nn", "library 'cmsis-nn'"),
])
def test_bad_targets_are_refused_by_name(text, needle):
    """(cuda and opencl are kinds now; see test_gpu_targets_parse)"""
    with pytest.raises(AotError, match=needle.replace("(", r"\(")):
        Target(text)


def _metadata(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        meta = json.load(t.extractfile("./metadata.json"))
    return next(iter(meta["modules"].values()))


def test_recorded_in_metadata_and_sources():
    import aot
    from aot.compiler import board_target
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("y", None)])
    plain = aot.compile(m)
    # metadata's target list as TVM's MLF writes it: str(Target), keys always, options by name
    assert _metadata(plain.tar)["target"] == ["c -keys=cpu"] and _metadata(plain.tar)["aot"]["target"]["keys"] == ["cpu"]
    t = board_target("qemu-cortex-m55")
    assert t == Target("c -mcpu=cortex-m55") and board_target("host") == Target("c")
    res = aot.compile(m, target=t)
    mod = _metadata(res.tar)
    assert mod["target"] == ["c -keys=arm_cpu,cpu -mcpu=cortex-m55"]
    assert mod["aot"]["target"] == {"kind": "c", "str": "c -mcpu=cortex-m55", "keys": ["arm_cpu", "cpu"],
                                    "mcpu": "cortex-m55"}
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as tf:
        lib0 = tf.extractfile("./codegen/host/src/default_lib0.c").read().decode()
    assert "(target: c -mcpu=cortex-m55)" in lib0
    assert aot.compile(m, target="c -mcpu=cortex-m55").tar == res.tar


def test_gpu_targets_parse():
    t = Target("cuda -arch=sm_80 -libs=cudnn,cublas")
    assert t.is_device and t.keys == ("cuda", "gpu") and t.libs == ("cudnn", "cublas")
    assert str(t) == "cuda -keys=cuda,gpu -arch=sm_80 -libs=cudnn,cublas" and t.short_str() == "cuda -arch=sm_80 -libs=cudnn,cublas"
    assert Target("opencl").keys == ("opencl", "gpu") and not Target("c").is_device


def test_tvm_target_api():
    """TVM's target objects: kind.name, attrs as a map, host, current() inside `with`, constructors."""
    t = aot.target.Target(target="llvm", host="llvm")
    assert t.kind.name == "llvm" and str(t.host) == "llvm -keys=cpu" and t.keys == ("cpu",)
    m = aot.target.Target("c -mcpu=cortex-m4")
    assert m.attrs["mcpu"] == "cortex-m4" and "mcpu" in m.attrs and m.attrs.get("model") is None
    assert aot.target.Target.current() is None
    with aot.target.cuda() as c:
        assert aot.target.Target.current() is c and c.kind.name == "cuda"
        with aot.target.Target("opencl") as o:
            assert aot.target.Target.current() is o
        assert aot.target.Target.current() is c
    assert aot.target.Target.current() is None
    assert aot.device(t.kind.name, 0) == aot.cpu(0) and aot.device("cuda -libs=cudnn") == aot.cuda(0)


def test_tvm_target_properties_read_the_options():
    t = aot.target.Target("cuda -arch=sm_80 -model=h100")
    assert (t.arch, t.model) == ("sm_80", "h100")
    c = aot.target.Target("c -mcpu=cortex-m55")
    assert c.arch is None and c.model == "unknown" and c.mattr == () and c.mcpu == "cortex-m55"
