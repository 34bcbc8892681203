"""Plug-in backends (aot.uma) end to end: the worked examples under examples/accelerators/
compile, partition where they should, and the MLF (with the backends' C sources) runs and
matches onnxruntime, on the host under ASan+UBSan and on a Cortex-M4 under QEMU."""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import onnx
import pytest
from onnx import helper

from conftest import init, make_model, ort_run, vi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "accelerators")
MODELS = os.path.join(ROOT, "..", "shared", "models", "mlperf_tiny")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SAN = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
       "-DTVMGEN_DEFAULT_WORKSPACE_ATTRIBUTE=__attribute__((aligned(16)))"]


def backend(name):
    """Load an example backend the way `aot compile --backend FILE` does."""
    from aot.uma.backend import load_backend_file
    load_backend_file(os.path.join(EXAMPLES, name, "backend.py"))


def members(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name.lstrip("./"): t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def aot_meta(tar):
    return json.loads(members(tar)["metadata.json"])["modules"]["default"]["aot"]


def conv_model(seed=0):
    """Convolutions of strides 1 and 2, a 5x5 and a 1x1 with bias, with a ReLU between."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def conv(name, x, cin, cout, k, s, bias=False):
        inits.append(init(name + "_w", rng.standard_normal((cout, cin, k, k)).astype(np.float32) * 0.3))
        ins = [x, name + "_w"]
        if bias:
            inits.append(init(name + "_b", rng.standard_normal(cout).astype(np.float32)))
            ins.append(name + "_b")
        nodes.append(helper.make_node("Conv", ins, [name], name=name, strides=[s, s], pads=[k // 2] * 4,
                                      kernel_shape=[k, k]))
        return name
    a = conv("c1", "x", 3, 8, 3, 1)
    nodes.append(helper.make_node("Relu", [a], ["r1"], name="relu1"))
    b = conv("c2", "r1", 8, 8, 3, 2)
    c = conv("c3", b, 8, 4, 5, 1)
    conv("c4", c, 4, 6, 1, 1, bias=True)
    return make_model(nodes, [vi("x", [1, 3, 16, 16])], [vi("c4", [1, 6, 8, 8])], inits)


def test_vanilla_takes_stride_1_convs_and_matches_onnxruntime_under_sanitizers():
    import aot
    backend("vanilla")
    m = conv_model()
    res = aot.compile(m.SerializeToString(), target="vanilla_accelerator, c")
    meta = aot_meta(res.tar)
    ext = meta["external_functions"]
    assert [f["name"] for f in ext] == ["tvmgen_default_vanilla_accelerator_main_0",
                                        "tvmgen_default_vanilla_accelerator_main_1"]
    assert [[n["name"] for n in f["nodes"]] for f in ext] == [["c1"], ["c3"]]      # stride 2 and biased 1x1 stay
    assert all(f["calls"] == ["vanilla_conv2dnchw"] for f in ext)
    files = members(res.tar)
    assert "codegen/host/src/vanilla.c" in files and "codegen/host/include/vanilla.h" in files
    # TVM's layout: the host's operators in lib1, the backend's module (its two functions) in lib2
    lib1, lib2 = (files[f"codegen/host/src/default_lib{k}.c"].decode() for k in (1, 2))
    assert lib2.count("vanilla_conv2dnchw(") == 2 and "vanilla_conv2dnchw(" not in lib1
    assert "int32_t tvmgen_default_vanilla_accelerator_main_1(" in lib2
    assert "tvmgen_default_fused_conv(" in lib1 and "tvmgen_default_fused_conv_1(" in lib1
    # the partitioned graph the MLF records
    relay = files["src/default.relay"].decode()
    assert "def @tvmgen_default_vanilla_accelerator_main_0" in relay
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    got = aot.run(res, {"x": x}, sanitize=True)["c4"]
    np.testing.assert_allclose(got, ort_run(m, {"x": x})["c4"], rtol=1e-4, atol=1e-4)


def test_composite_conv_bias_relu_is_one_call_per_unit():
    import aot
    backend("conv_bias_relu")
    rng = np.random.default_rng(5)
    w = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.3   # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", strides=[2, 2], pads=[1, 0, 0, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "b2"], ["a2"], name="bias2"),
             helper.make_node("Relu", ["a2"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], name="conv3"),            # no ReLU
             helper.make_node("Conv", ["c3", "w4", "b4"], ["y"], name="conv4", group=2)]  # grouped: CPU
    inits = [init("w1", w(8, 3, 3, 3)), init("b1", w(8)), init("w2", w(6, 8, 3, 3)), init("b2", w(1, 6, 1, 1)),
             init("w3", w(4, 6, 1, 1)), init("b3", w(4)), init("w4", w(4, 2, 3, 3)), init("b4", w(4))]
    m = make_model(nodes, [vi("x", [1, 3, 15, 15])], [vi("y", [1, 4, 5, 5])], inits)
    res = aot.compile(m.SerializeToString(), target="conv_bias_relu, c")
    ext = aot_meta(res.tar)["external_functions"]
    # adjacent composites of one backend merge into one region: one function, three calls
    assert len(ext) == 1 and ext[0]["calls"] == ["fused_conv2d_bias_relu"] * 3
    assert [(n["name"], n.get("composite")) for n in ext[0]["nodes"]] == [
        ("conv1", "conv_bias_relu.conv2d_bias_relu"), ("relu1", "conv_bias_relu.conv2d_bias_relu"),
        ("conv2", "conv_bias_relu.conv2d_bias_relu"), ("bias2", "conv_bias_relu.conv2d_bias_relu"),
        ("relu2", "conv_bias_relu.conv2d_bias_relu"), ("conv3", "conv_bias_relu.conv2d_bias_relu")]
    assert ext[0]["scratch_bytes"] > 0            # the values between the calls live in its scratch
    lib2 = members(res.tar)["codegen/host/src/default_lib2.c"].decode()     # the backend's module
    assert lib2.count("fused_conv2d_bias_relu(") == 3
    x = rng.standard_normal((1, 3, 15, 15)).astype(np.float32)
    got = aot.run(res, {"x": x}, sanitize=True)["y"]
    np.testing.assert_allclose(got, ort_run(m, {"x": x})["y"], rtol=1e-4, atol=1e-4)


# -- the NPU: a device with its own memory, driven through TVM's device API -----------------------
NPU_CLIENT = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include "tvmgen_default.h"
#include "npu.h"

static uint8_t in_buf[TVMGEN_DEFAULT_{IN}_SIZE];
static uint8_t out_buf[TVMGEN_DEFAULT_{OUT}_SIZE];
static float sram[{SRAM}];

static int read_file(const char* path, void* dst, size_t n) {{
  FILE* f = fopen(path, "rb");
  size_t got;
  if (f == NULL) return -1;
  got = fread(dst, 1, n, f);
  (void)fclose(f);
  return got == n ? 0 : -1;
}}

int main(int argc, char** argv) {{
  struct tvmgen_default_inputs inputs;
  struct tvmgen_default_outputs outputs;
  struct tvmgen_default_devices devices;
  npu_device npu = {{0}};
  FILE* f;
  int32_t rc;
  int k;
  if (argc != 3 || read_file(argv[1], in_buf, sizeof in_buf) != 0) return 2;
  npu.sram = sram;
  npu.sram_words = {SRAM}u;
  inputs.{in_c} = in_buf;
  outputs.{out_c} = out_buf;
  devices.npu = &npu;
  for (k = 0; k < 2; ++k) {{                      /* twice: Close must leave it ready to Open */
    rc = tvmgen_default_run(&inputs, &outputs, &devices);
    if (rc != 0) return 3;
  }}
  printf("jobs %u in %u out %u open %d active %d\n", (unsigned)npu.jobs, (unsigned)npu.words_in,
         (unsigned)npu.words_out, (int)npu.is_open, (int)npu.is_active);
  devices.npu = NULL;                             /* the NPU's calls refuse a missing device */
  printf("null_device_rc %d\n", (int)tvmgen_default_run(&inputs, &outputs, &devices));
  f = fopen(argv[2], "wb");
  if (f == NULL || fwrite(out_buf, 1, sizeof out_buf, f) != sizeof out_buf) return 4;
  (void)fclose(f);
  return 0;
}}
"""


def run_npu_client(tar, x, tmp_path, extra=SAN, sram=262144):
    d = tmp_path / "mlf"
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(d, filter="data")
    meta = aot_meta(tar)
    assert meta["devices"] == ["npu"]
    (i,), (o,) = meta["inputs"], meta["outputs"]
    (tmp_path / "client.c").write_text(NPU_CLIENT.format(IN=i["c_name"].upper(), OUT=o["c_name"].upper(),
                                                         in_c=i["c_name"], out_c=o["c_name"], SRAM=sram))
    src = d / "codegen/host/src"
    srcs = [str(tmp_path / "client.c")] + sorted(str(src / s) for s in os.listdir(src))
    exe = tmp_path / "client"
    subprocess.run(["gcc", *STRICT, *extra, "-I", str(d / "codegen/host/include"), "-I", str(d / "runtime/include"),
                    *srcs, "-o", str(exe), "-lm"], check=True)
    x.tofile(tmp_path / "in.bin")
    r = subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    stats = dict(zip(r.stdout.split()[0::2], map(int, r.stdout.split()[1::2])))
    return np.fromfile(tmp_path / "out.bin", dtype=o["dtype"]).reshape(o["shape"]), stats


def test_npu_whole_graph_offload(tmp_path):
    """The anomaly-detection autoencoder is dense layers only: the whole graph is one NPU
    function, fed by the graph input and producing the graph output."""
    import aot
    backend("npu")
    path = os.path.join(MODELS, "anomaly_detection", "ad01_fp32.onnx")
    res = aot.compile(path, target="npu, c")
    meta = aot_meta(res.tar)
    assert meta["kernels"] == ["tvmgen_default_npu_main_0"]
    (f,) = meta["external_functions"]
    assert f["inputs"][0] == meta["inputs"][0]["name"] and f["outputs"] == [meta["outputs"][0]["name"]]
    assert f["calls"].count("npu_matmul") == 10
    m = onnx.load(path)
    x = np.random.default_rng(8).standard_normal(meta["inputs"][0]["shape"]).astype(np.float32)
    got, stats = run_npu_client(res.tar, x, tmp_path)
    ref = ort_run(m, {meta["inputs"][0]["name"]: x})
    np.testing.assert_allclose(got, list(ref.values())[0], rtol=1e-4, atol=1e-4)
    assert stats["jobs"] == 10    # counted since the second run opened the device


def test_npu_operands_that_do_not_fit_stay_on_the_cpu(tmp_path):
    import aot
    backend("npu")
    path = os.path.join(MODELS, "anomaly_detection", "ad01_fp32.onnx")
    m = onnx.load(path)
    res = aot.compile(path, target="npu -sram_words=20000, c")
    meta = aot_meta(res.tar)
    offloaded = {n["name"] for f in meta["external_functions"] for n in f["nodes"]}
    matmuls = [(n.name, n.input[1]) for n in m.graph.node if n.op_type == "MatMul"]
    inits = {i.name: i.dims for i in m.graph.initializer}
    for name, w in matmuls:    # [1,k] x [k,n] needs k + k*n + 2n words of NPU memory
        k, n = inits[w]
        assert (name in offloaded) == (k + k * n + 2 * n <= 20000), (name, k, n)
    assert offloaded and len(meta["kernels"]) > len(meta["external_functions"])
    x = np.random.default_rng(9).standard_normal(meta["inputs"][0]["shape"]).astype(np.float32)
    got, _ = run_npu_client(res.tar, x, tmp_path, sram=20000)
    np.testing.assert_allclose(got, list(ort_run(m, {meta["inputs"][0]["name"]: x}).values())[0], rtol=1e-4, atol=1e-4)


# -- the generated code with each backend's sources compiles strictly everywhere -------------------
@pytest.mark.parametrize("cc,flags", [("gcc", []), ("clang", []),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                                                             "-mfpu=fpv4-sp-d16"])])
def test_backend_sources_and_generated_code_are_warning_free(tmp_path, cc, flags):
    import aot
    if shutil.which(cc) is None:
        if cc == "arm-none-eabi-gcc" and os.environ.get("AOT_REQUIRE_BOARDS") == "1":
            raise RuntimeError("AOT_REQUIRE_BOARDS=1 but arm-none-eabi-gcc is missing")
        pytest.skip(f"{cc} not installed")
    for name, target in (("vanilla", "vanilla_accelerator, c"), ("conv_bias_relu", "conv_bias_relu, c"),
                         ("npu", "npu, c")):
        backend(name)
        res = aot.compile(conv_model().SerializeToString() if name != "npu" else
                          os.path.join(MODELS, "anomaly_detection", "ad01_fp32.onnx"), target=target)
        d = tmp_path / name
        with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
            t.extractall(d, filter="data")
        src = d / "codegen/host/src"
        for s in sorted(os.listdir(src)):
            subprocess.run([cc, *STRICT, "-O2", *flags, "-I", str(d / "codegen/host/include"), "-I",
                            str(d / "runtime/include"), "-c", str(src / s), "-o", str(tmp_path / (s + ".o"))],
                           check=True)


# -- errors: clear, exit 2, no traceback, no partial file -------------------------------------------
BAD_LOWERING = '''
from aot.relay.dataflow_pattern import is_op, wildcard, is_constant
from aot.uma import UMABackend

def lower(call):
    raise ValueError("the MAC array cannot do that")

class Broken(UMABackend):
    target_name = "broken_accel"
    def __init__(self):
        super().__init__()
        self._register_pattern("conv", is_op("Conv")(wildcard(), is_constant()))
        self._register_lowering("conv", lower)
        self._register_codegen(fmt="c", includes=["broken.h"], sources={"broken.h": "int broken(void);\\n"})
'''

BAD_ATTR = '''
from aot.relay.dataflow_pattern import is_op, wildcard, is_constant
from aot.uma import UMABackend, call_extern

class Typo(UMABackend):
    target_name = "typo_accel"
    def __init__(self):
        super().__init__()
        self._register_pattern("conv", is_op("Conv")(wildcard(), is_constant()).has_attr({"stride": [1, 1]}))
        self._register_lowering("conv", lambda call: call_extern("f", call.inputs[0]))
'''

RETURNS_42 = BAD_LOWERING.replace('raise ValueError("the MAC array cannot do that")', "return 42") \
    .replace("broken_accel", "answer_accel")


def _cli(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "aot", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=ROOT))


@pytest.mark.parametrize("source,target,expect", [
    (BAD_LOWERING, "broken_accel, c", ["backend 'broken_accel'", "node 'c1'", "ValueError: the MAC array cannot do that"]),
    (BAD_ATTR, "typo_accel, c", ["has_attr", "no attribute 'stride'", "strides"]),
    (None, "not_registered, c", ["target kind 'not_registered' is not supported", "--backend"]),
    ("raise RuntimeError('oops')\n", "x, c", ["failed to load at backend.py:1", "RuntimeError: oops"]),
    (RETURNS_42, "answer_accel, c", ["the lowering backend.py:5 must return call_extern", "not 42"]),
    ("import sys\nsys.exit(0)\n", "x, c", ["called sys.exit(0) while loading"]),
])
def test_backend_errors_are_clear(tmp_path, source, target, expect):
    onnx.save(conv_model(), str(tmp_path / "m.onnx"))
    args = ["compile", "m.onnx", "-o", "out.tar", "--target", target]
    if source is not None:
        (tmp_path / "backend.py").write_text(source)
        args += ["--backend", "backend.py"]
    r = _cli(tmp_path, *args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    for e in expect:
        assert e in r.stderr, r.stderr
    assert not (tmp_path / "out.tar").exists()
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".out.tar")]


def test_cli_compile_with_backend_and_info(tmp_path):
    onnx.save(conv_model(), str(tmp_path / "m.onnx"))
    r = _cli(tmp_path, "compile", "m.onnx", "-o", "out.tar", "-v", "--backend",
             os.path.join(EXAMPLES, "vanilla", "backend.py"), "--target", "vanilla_accelerator, c")
    assert r.returncode == 0, r.stderr
    assert "pass partition_graph: 2 external function(s)" in r.stderr
    assert "tvmgen_default_vanilla_accelerator_main_0: c1 (Conv) as vanilla_accelerator.conv2d" in r.stderr
    info = _cli(tmp_path, "info", "out.tar")
    assert info.returncode == 0
    assert ("external tvmgen_default_vanilla_accelerator_main_0 on vanilla_accelerator: c1 (Conv in "
            "vanilla_accelerator.conv2d) -> calls vanilla_conv2dnchw") in info.stdout
    assert "(target c -keys=cpu)" in info.stdout     # as TVM's MLF: the target relay.build compiled for


def test_vanilla_walkthrough_runs_and_the_docs_show_it_verbatim(tmp_path):
    path = os.path.join(EXAMPLES, "vanilla", "run.py")
    code = open(path).read()
    assert len(code.splitlines()) < 40
    for doc in ("README.md", os.path.join("docs", "uma.md")):
        assert "```python\n" + code + "```" in open(os.path.join(ROOT, doc)).read(), doc
    r = subprocess.run([sys.executable, path], capture_output=True, text=True, cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("MATCH"), r.stdout
    assert (tmp_path / "vanilla.tar").exists()


PROBE_H = "#include <stdint.h>\nint32_t probe_relu(void* ctx, const float* x, float* y, int32_t n, float floor_);\n"
PROBE_C = """#include "probe.h"
int32_t probe_relu(void* ctx, const float* x, float* y, int32_t n, float floor_) {
  int32_t i;
  if (ctx != 0 || n <= 0) {      /* aot's harness passes a NULL context */
    return -1;
  }
  for (i = 0; i < n; ++i) {
    y[i] = x[i] > floor_ ? x[i] : floor_;
  }
  return 0;
}
"""


def test_single_op_backend_with_device_context_and_default_hooks():
    """_register_op claims single nodes; a device-context backend without hook definitions links
    against the MLF's weak defaults, and aot's own harness passes a NULL context."""
    import aot
    from aot.uma import UMABackend, call_extern

    class Probe(UMABackend):
        target_name = "dev-probe"

        def __init__(self):
            super().__init__()
            self._register_op("Relu")
            self._register_lowering("Relu", lambda c: call_extern("probe_relu", c.device, c.inputs[0], c.outputs[0],
                                                                  c.inputs[0].size, 0.0))
            self._register_device_context()
            self._register_codegen(includes=["probe.h"], sources={"probe.h": PROBE_H, "probe.c": PROBE_C})
    Probe().register()
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    m = make_model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])])
    res = aot.compile(m.SerializeToString(), target="dev-probe, c")
    files = members(res.tar)
    assert "void* dev_probe;" in files["codegen/host/include/tvmgen_default.h"].decode()
    lib1 = files["codegen/host/src/default_lib1.c"].decode()
    assert "__attribute__((weak)) int32_t TVMDeviceDevProbeOpen(void* device_context)" in lib1
    assert [f["name"] for f in aot_meta(res.tar)["external_functions"]] == [
        "tvmgen_default_dev_probe_main_0", "tvmgen_default_dev_probe_main_1"]
    x = np.random.default_rng(4).standard_normal((2, 5)).astype(np.float32)
    got = aot.run(res, {"x": x}, sanitize=True)["y"]
    np.testing.assert_allclose(got, ort_run(m, {"x": x})["y"], rtol=1e-6)


def test_names_from_a_backend_cannot_reach_c_unchecked():
    from aot.errors import AotError
    from aot.uma import UMABackend, call_extern
    for bad in ("int", "f(); evil", "tvmgen_default_run", "1abc", "TVMDeviceXOpen"):
        with pytest.raises(AotError):
            call_extern(bad)
    with pytest.raises(AotError, match="not a tensor"):
        call_extern("f", "x")

    class Bad(UMABackend):
        target_name = "Bad Name"
    with pytest.raises(AotError, match="target_name"):
        Bad().register()
    b = Bad()
    with pytest.raises(AotError, match=r"must be a \.c or \.h"):
        b._register_codegen(sources={'x.c"\n#define y': ""})
    with pytest.raises(AotError, match="not a plain header"):
        b._register_codegen(includes=['a.h"\nint x;'])
    with pytest.raises(AotError, match="no such op"):
        b._register_op("Relu6")
    with pytest.raises(AotError, match="cannot read source"):
        b._register_codegen(sources=["no/such/file.c"])


def test_init_calls_need_a_host_with_an_init_entry_point():
    """call.at_init: a GPU host makes the calls in tvmgen_<mod>_init; the C interface has no
    init, so a C target names the backend and the calls it cannot place."""
    import aot
    from aot.errors import AotError
    from aot.uma import UMABackend, call_extern

    class Setup(UMABackend):
        target_name = "setup-probe"

        def __init__(self):
            super().__init__()
            self._register_op("Relu")

            def lower(c):
                c.at_init(call_extern("probe_prepare", c.device, c.inputs[0].size))
                return call_extern("probe_relu", c.device, c.inputs[0], c.outputs[0], c.inputs[0].size, 0.0)
            self._register_lowering("Relu", lower)
            self._register_device_context()
            self._register_codegen(includes=["probe.h"], sources={"probe.h": PROBE_H, "probe.c": PROBE_C})
    Setup().register()
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 5])], [vi("y", [2, 5])])
    with pytest.raises(AotError, match="backend 'setup-probe' asks for calls at init \\(probe_prepare\\), which need "
                                       "a target whose host has an init entry point"):
        aot.compile(m.SerializeToString(), target="setup-probe, c")
    from aot.uma.lowering import Call
    with pytest.raises(AotError, match="is not a call_extern"):
        Call("Relu", [], [], [], True).at_init("probe_prepare()")


def test_a_folded_splat_weight_reaches_the_library_as_a_whole_tensor():
    """Generated kernels keep a constant that folding made a splat (ConstantOfShape weights, as in
    the ONNX light models) as one element; a library reads every element of its operand, so an
    external call gets the dense tensor (found on a lent GPU: cuDNN read past a 1-float weight)."""
    import aot
    backend("vanilla")
    shape = init("wshape", np.array([4, 3, 3, 3], np.int64))
    nodes = [helper.make_node("ConstantOfShape", ["wshape"], ["w"], name="wfill",
                              value=helper.make_tensor("v", onnx.TensorProto.FLOAT, [1], [0.25])),
             helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1] * 4, kernel_shape=[3, 3])]
    m = make_model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], [shape])
    res = aot.compile(m.SerializeToString(), target="vanilla_accelerator, c")
    assert [[n["name"] for n in f["nodes"]] for f in aot_meta(res.tar)["external_functions"]] == [["conv"]]
    x = np.random.default_rng(4).standard_normal((1, 3, 8, 8)).astype(np.float32)
    got = aot.run(res, {"x": x}, sanitize=True)["y"]
    np.testing.assert_allclose(got, ort_run(m, {"x": x})["y"], rtol=1e-4, atol=1e-4)
