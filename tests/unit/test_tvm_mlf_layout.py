"""The MLF as TVM lays it out (apache/tvm 513c2be, python/tvm/micro/model_library_format.py): one C
file per module (lib0 the executor and constants, lib1 the host's operators, lib2... each
partitioned module, TVM's "cmsis-nn" one included), the target list as TVM prints Targets, the
standalone CRT as an external dependency, templates/, and --io-names tvm reaching metadata's keys.
Expected values are TVM's (what its MLF writer and Target printer give), not this compiler's."""
import io
import json
import string
import tarfile

import aot  # noqa: F401  (imported at collection, as the other unit tests do: its BLAS probe runs gcc)
import pytest
from onnx import helper

from conftest import make_model, vi


def _tar(res):
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        return {m.name[2:]: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def _module(files):
    return next(iter(json.loads(files["metadata.json"])["modules"].values()))


@pytest.mark.parametrize("text, tvm", [
    ("c", "c -keys=cpu"),
    ("c -mcpu=cortex-m55", "c -keys=arm_cpu,cpu -mcpu=cortex-m55"),          # TVM's M-profile parser's keys
    ("cmsis-nn -mcpu=cortex-m55", "cmsis-nn -keys=arm_cpu,cpu -mcpu=cortex-m55"),
    ("c -model=host -mcpu=cortex-m4", "c -keys=arm_cpu,cpu -mcpu=cortex-m4 -model=host"),   # options by name
    ("llvm -mcpu=skylake", "llvm -keys=cpu -mcpu=skylake"),
])
def test_targets_print_as_tvm_prints_them(text, tvm):
    from aot.target import Target
    assert str(Target(text)) == tvm and Target(tvm) == Target(text)     # and it reads back
    assert f"{Target(text)}" == Target(text).short_str()       # messages name it as written


def test_cmsis_nn_is_a_partition_target_of_a_tvmc_target_list():
    from aot.target import Target, resolve
    # tvmc's list, and as CMake's Makefile generator passes a quoted argument's spaces
    for text in ("cmsis-nn -mcpu=cortex-m55, c", "cmsis-nn\\ -mcpu=cortex-m55,\\ c"):
        target, backends = resolve(text)
        assert target == Target("c") and [b.target_name for b in backends] == ["cmsis-nn"]
        assert backends[0].kernel_target == Target("c -mcpu=cortex-m55")
    assert Target("cmsis-nn").family.partition and not Target("c").family.partition


def _relu_model():
    return make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("y", None)])


def test_metadata_target_dependencies_and_templates():
    import aot
    files = _tar(aot.compile(_relu_model()))
    mod = _module(files)
    assert mod["target"] == ["c -keys=cpu"]
    dep, = mod["external_dependencies"]
    assert dep["short_name"] == "tvm_standalone_crt" and dep["url"] == "./runtime" and dep["url_type"] == "mlf_path"
    assert "runtime/src/runtime/crt/memory/stack_allocator.c" in files
    # templates/: crt_config.h's placeholders are the settings runtime/include/crt_config.h defines
    tmpl = files["templates/crt_config.h.template"].decode()
    names = {m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(tmpl)
             if m.group("named") or m.group("braced")}
    ours = files["runtime/include/crt_config.h"].decode()
    assert names and all(f"#define {n} " in ours for n in names)
    platform = files["templates/platform.c.template"].decode()
    for hook in ("TVMPlatformAbort", "TVMPlatformMemoryAllocate", "TVMPlatformMemoryFree", "TVMLogf",
                 "TVMPlatformInitialize", "TVMPlatformTimerStart", "TVMPlatformTimerStop"):
        assert f" {hook}(" in platform


def test_io_names_tvm_reach_memory_functions_main():
    """TVM's ONNX frontend gives main no output names: its MLF keys the output 'output'."""
    import aot
    from mlf import read_mlf, validate
    m = _relu_model().SerializeToString()
    tvm = aot.compile(m, io_names="tvm")
    main = _module(_tar(tvm))["memory"]["functions"]["main"][0]
    assert list(main["inputs"]) == ["x"] and list(main["outputs"]) == ["output"]
    out = _module(_tar(tvm))["aot"]["outputs"][0]
    assert out["name"] == "y" and out["c_name"] == "output" and out["tvm_name"] == "output"
    assert validate(read_mlf(tvm.tar)) == []
    plain = _module(_tar(aot.compile(m)))
    assert list(plain["memory"]["functions"]["main"][0]["outputs"]) == ["y"] and "tvm_name" not in plain["aot"]["outputs"][0]


def test_cmsis_nn_kernels_are_lib2_and_the_rest_lib1():
    import aot
    from mlf import read_mlf, validate
    from test_tvm_clients import int8_cnn
    res = aot.compile(int8_cnn(0), target="cmsis-nn -mcpu=cortex-m55, c")
    files = _tar(res)
    mod = _module(files)
    # tvmc hands cmsis-nn to its partitioner and relay.build the rest: TVM's MLF lists "c" only
    assert mod["target"] == ["c -keys=cpu"]
    assert [p["target"]["str"] for p in mod["aot"]["partitions"]] == ["cmsis-nn -mcpu=cortex-m55"]
    assert mod["aot"]["sources"] == [f"codegen/host/src/default_lib{k}.c" for k in range(3)]
    kernels = mod["aot"]["kernels"]
    cmsis = [f"tvmgen_default_cmsis_nn_main_{k}" for k in range(5)]      # conv, depthwise, pool, dense, softmax
    assert [k for k in kernels if "cmsis_nn" in k] == cmsis
    lib1, lib2 = (files[f"codegen/host/src/default_lib{k}.c"].decode() for k in (1, 2))
    assert all(f"int32_t {k}(" in lib2 and f"{k}(" in lib1 for k in cmsis)
    host = [k for k in kernels if "cmsis_nn" not in k]                     # the TANH, not CMSIS-NN's
    assert host and all(f"int32_t {k}(" in lib1 and k not in lib2 for k in host)
    # scheduled for the core cmsis-nn names (Helium micro-kernels), where lib1's are plain C
    sched = mod["aot"]["kernel_schedules"]
    assert any("(mve)" in sched[k] for k in cmsis) and all(sched[k] == "loop nest" for k in host)
    assert validate(read_mlf(res.tar)) == []
    assert aot.compile(int8_cnn(0), target="cmsis-nn -mcpu=cortex-m55, c").tar == res.tar


def test_a_module_file_left_out_of_sources_is_refused():
    import aot
    from mlf import read_mlf, validate
    from test_tvm_clients import int8_cnn
    files = _tar(aot.compile(int8_cnn(0), target="cmsis-nn -mcpu=cortex-m55, c"))
    meta = json.loads(files["metadata.json"])
    meta["modules"]["default"]["aot"]["sources"].remove("codegen/host/src/default_lib2.c")
    files["metadata.json"] = json.dumps(meta).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    problems = validate(read_mlf(buf.getvalue()))
    assert any("default_lib2.c is not listed in metadata aot.sources" in p for p in problems), problems


@pytest.mark.parametrize("target, msg", [
    ("cmsis-nn -mcpu=cortex-m55", "exactly one code-generation target"),
    ("cmsis-nn -mcpu=cortex-m55, cmsis-nn, c", "names backend 'cmsis-nn' twice"),
    ("cmsis-nn -mcpu=cortex-m55, cuda", "partitions a C build"),
])
def test_cmsis_nn_lists_that_cannot_build_are_refused_by_name(target, msg):
    import aot
    with pytest.raises(aot.AotError, match=msg):
        aot.compile(_relu_model(), target=target)


def test_cmsis_nn_takes_the_cortex_m_cores_only():
    from aot.errors import AotError
    from aot.target import Target
    assert Target("cmsis-nn -mcpu=cortex-m4 -mattr=+nodsp").mcpu == "cortex-m4"
    with pytest.raises(AotError, match="-mcpu=pentium is not a CPU aot knows for kind 'cmsis-nn'"):
        Target("cmsis-nn -mcpu=pentium")


def test_a_cmsis_nn_build_runs_on_the_board_of_its_core(tmp_path):
    """Its host part is plain C and its kernels are for the core cmsis-nn names: the board with that
    core takes the MLF, another core's board refuses it by name."""
    import aot
    from aot.cli import check_board_target
    from aot.errors import AotError
    from test_tvm_clients import int8_cnn
    path = tmp_path / "m.tar"
    path.write_bytes(aot.compile(int8_cnn(0), target="cmsis-nn -mcpu=cortex-m55, c").tar)
    check_board_target(str(path), "qemu-cortex-m55")
    with pytest.raises(AotError, match="board qemu-cortex-m4 has a cortex-m4"):
        check_board_target(str(path), "qemu-cortex-m4")
