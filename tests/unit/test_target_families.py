"""Target facts belong to the target families (aot/targets/) and aot/target.py, the one module
that reads target strings: no other module of aot/, codegen_c/ or mlf/ compares a target kind,
key or core name (docs/architecture.md). The scan below finds such a test the way
tests/unit/test_import_layers.py finds imports: from the source, every function included. Then the two
extension points this buys, each new thing defined in one file: a Cortex-M core, a GPU API."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("aot", "codegen_c", "mlf")
# the places a target string may be read
OWNERS = ("aot/target.py", "aot/targets/", "aot/schedules/pipelines.py")
# target kinds, keys and core names (a core is any "cortex-m..." string)
WORDS = {"c", "cuda", "opencl", "cpu", "arm_cpu", "gpu"}
# the names that make an operand a target, or a part of one (a kind, its keys, a core, a GPU API)
TARGETISH = {"target", "targets", "tgt", "keys", "kind", "mcpu", "march", "api", "device_api", "device", "dev",
             "dialect", "family", "core", "cores"}
# ... unless it is a dtype's (numpy's dtype.kind "c" is a complex type)
NOT_TARGETISH = {"dtype", "dtypes"}
# no exceptions: pipelines.py and the family modules are the places allowed to read target strings
EXPECTED = set()


def _word(s):
    return isinstance(s, str) and (s in WORDS or s.startswith("cortex-m"))


def _literal_words(node):
    """Whether node is a string literal naming a target word, or a tuple/list/set holding one."""
    if isinstance(node, ast.Constant):
        return _word(node.value)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(isinstance(e, ast.Constant) and _word(e.value) for e in node.elts)
    return False


def _names(node):
    """The identifiers an operand is made of: names, attributes, string subscripts and .get keys."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            out.add(n.slice.value)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args \
                and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
            out.add(n.args[0].value)
    return out


def _targetish(node):
    names = _names(node)
    return bool(names & TARGETISH) and not names & NOT_TARGETISH


def target_tests(source):
    """[(line, source text)] of the comparisons (==, !=, in, not in) and startswith/endswith
    calls between a target word and a target-ish operand in source."""
    found = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Compare):
            left = n.left
            for op, right in zip(n.ops, n.comparators):
                if isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) and (
                        _literal_words(left) and _targetish(right) or _literal_words(right) and _targetish(left)):
                    found.append((n.lineno, ast.get_source_segment(source, n)))
                left = right
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr in ("startswith", "endswith") and _targetish(n.func.value) \
                and any(_literal_words(a) or isinstance(a, ast.Constant) and isinstance(a.value, str)
                        and a.value.startswith("cortex") for a in n.args):
            found.append((n.lineno, ast.get_source_segment(source, n)))
    return found


def _sources():
    for pkg in PACKAGES:
        for d, _, files in os.walk(os.path.join(ROOT, pkg)):
            for f in sorted(files):
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(d, f), ROOT).replace(os.sep, "/")
                    if not any(rel == o or o.endswith("/") and rel.startswith(o) for o in OWNERS):
                        with open(os.path.join(d, f)) as fh:
                            yield rel, fh.read()


def test_only_the_target_modules_test_target_strings():
    found = {(rel, text) for rel, src in _sources() for _, text in target_tests(src)}
    assert found <= EXPECTED, sorted(found - EXPECTED)


def test_the_scan_finds_a_target_test():
    """The scan can fail: each shape of a target test in a snippet is found, and the look-alikes
    (a dtype's kind, an interface API, a loop kind) are not."""
    bad = '''
if "arm_cpu" in target.keys: pass
if target.kind == "opencl": pass
if api != "cuda": pass
if (target.mcpu or "").startswith("cortex-m"): pass
if mcpu in ("cortex-m55", "cortex-m85"): pass
if dev["api"] == "opencl": pass
if device.get("api") in ("cuda", "opencl"): pass
if m.dev.kind == "cpu": pass
'''
    assert [line for line, _ in target_tests(bad)] == list(range(2, 10))
    fine = '''
if a.dtype.kind == "c": pass
if options.interface_api != "c": pass
if lp.kind == "serial": pass
if name == "cuda": pass
if target.family.channels_last: pass
'''
    assert target_tests(fine) == []


# -- extension points: each new thing defined in one file --------------------------------------

NEW_CORE = '''"""The Arm Cortex-M52 (Armv8.1-M): Helium, the DSP extension and a single-precision FPU."""
from aot.targets.cortex_m import Core, add_core

CORE = add_core(Core("cortex-m52", dsp=True, mve=True, fpu=True, fma=True))
'''

NEW_GPU_API = '''"""HIP (AMD's CUDA-like API) as a target kind: the family, its dialect and its host template."""
from aot.dtypes import C_TYPES
from aot.targets import GpuFamily, add_family
from codegen_c.cuda_renderer import CUDARenderer


class HIPRenderer(CUDARenderer):
    name = "HIP"
    thread_indices = {f"{k}.{a}": f"(int32_t)hip{k[0].upper()}{k[1:]}_{a}"
                      for k in ("blockIdx", "threadIdx") for a in "xyz"}

    def device_sources(self, mod, target, launches, bodies):
        launchers, wrappers = [], []
        for c in launches:
            params = [("const " if k < c.func.num_inputs else "") + f"{C_TYPES[b.dtype]}* p{k}"
                      for k, b in enumerate(c.func.params)]
            launchers.append({"launcher": f"{c.symbol}_launch", "params": params})
            (g, b), args = (c.grid, c.block), ", ".join(f"p{k}" for k in range(len(params)))
            wrappers.append(f'extern "C" int32_t {c.symbol}_launch(void* stream, {", ".join(params)}) {{\\n'
                            f"  hipLaunchKernelGGL({c.symbol}, dim3({g[0]}, {g[1]}, {g[2]}), dim3({b[0]}, {b[1]}, "
                            f"{b[2]}), 0, (hipStream_t)stream, {args});\\n"
                            "  return hipPeekAtLastError() == hipSuccess ? 0 : -1;\\n}\\n")
        text = ("#include <stdint.h>\\n#include <math.h>\\n#include <hip/hip_runtime.h>\\n\\n"
                + self.helper_definitions() + "\\n" + "\\n".join(bodies) + "\\n" + "\\n".join(wrappers))
        return {f"codegen/host/src/{mod}_lib1.hip": text}, {"launchers": launchers}


HOST = """{% extends "_gpu_lib0.c.j2" %}
{%- block runtime_includes %}
#include <hip/hip_runtime_api.h>
{%- endblock %}
{%- block device %}
{%- for s in launchers %}
int32_t {{ s.launcher }}(void* stream{% for p in s.params %}, {{ p }}{% endfor %});
{%- endfor %}

static struct {
  int ready;
  hipStream_t stream;
  uint8_t* workspace;
  uint8_t* constants;
  uint8_t* io[{{ n_io or 1 }}];
} tvmgen_{{ mod }}_device;

#define DEV tvmgen_{{ mod }}_device

int32_t tvmgen_{{ mod }}_init(void) {
  if (DEV.ready) {
    return 0;
  }
  if (hipStreamCreate(&DEV.stream) != hipSuccess ||
      hipMalloc((void**)&DEV.workspace, {{ workspace_size or 1 }}u) != hipSuccess ||
      hipMalloc((void**)&DEV.constants, {{ constants_size or 1 }}u) != hipSuccess) {
    return -1;
  }
{%- for c in constants %}
  if (hipMemcpy(DEV.constants + {{ c.offset }}, {{ c.name }}, sizeof {{ c.name }}, hipMemcpyHostToDevice) != hipSuccess) {
    return -1;
  }
{%- endfor %}
{%- for t in io %}
  if (hipMalloc((void**)&DEV.io[{{ loop.index0 }}], {{ t.nbytes or 1 }}u) != hipSuccess) {
    return -1;
  }
{%- endfor %}
  DEV.ready = 1;
  return 0;
}

int32_t tvmgen_{{ mod }}_deinit(void) {
  int32_t rc = 0;
  size_t i;
  if (!DEV.ready) {
    return 0;
  }
  for (i = 0; i < {{ n_io }}u; ++i) {
    rc |= hipFree(DEV.io[i]) == hipSuccess ? 0 : -1;
  }
  rc |= hipFree(DEV.constants) == hipSuccess ? 0 : -1;
  rc |= hipFree(DEV.workspace) == hipSuccess ? 0 : -1;
  rc |= hipStreamDestroy(DEV.stream) == hipSuccess ? 0 : -1;
  DEV.ready = 0;
  return rc;
}

int32_t tvmgen_{{ mod }}_run(struct tvmgen_{{ mod }}_inputs* inputs, struct tvmgen_{{ mod }}_outputs* outputs) {
  if (inputs == 0 || outputs == 0 || tvmgen_{{ mod }}_init() != 0) {
    return -1;
  }
{%- for t in inputs %}
  if (hipMemcpyAsync(DEV.io[{{ t.io }}], inputs->{{ t.c }}, {{ t.nbytes }}u, hipMemcpyHostToDevice, DEV.stream) != hipSuccess) {
    return -1;
  }
{%- endfor %}
{%- for s in steps %}
  if ({{ s.launcher }}((void*)DEV.stream{% for a in s.args %}, ({{ a.ctype }}*)({{ a.mem }} + {{ a.offset }}){% endfor %}) != 0) {
    return -1;
  }
{%- endfor %}
{%- for t in outputs %}
  if (hipMemcpyAsync(outputs->{{ t.c }}, DEV.io[{{ t.io }}], {{ t.nbytes }}u, hipMemcpyDeviceToHost, DEV.stream) != hipSuccess) {
    return -1;
  }
{%- endfor %}
  return hipStreamSynchronize(DEV.stream) == hipSuccess ? 0 : -1;
}
{%- endblock %}
"""


class HIP(GpuFamily):
    name = kind = "hip"
    attrs = {"keys": "list", "mcpu": "str", "model": "str"}
    keys = ("hip", "gpu")
    renderer = HIPRenderer
    host_template_text = HOST
    runtime_libs = ("-lamdhip64",)
    device_sources = (".hip",)
    build_fragments_text = {
        "mk": "TVMGEN_{{ MOD }}_HIP_SRCS := {{ device.sources | join(' ') }}  # build with hipcc\\n"
              "TVMGEN_{{ MOD }}_LIBS += {{ device.libs | join(' ') }}",
        "cmake": "find_package(hip REQUIRED)\\ntarget_link_libraries(tvmgen_{{ mod }} PUBLIC hip::host)"}


FAMILY = add_family(HIP())
'''


def _load(path, text):
    """Import the module `text` from the file `path`, as a user's module would be."""
    import importlib.util
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _int8_conv():
    """A TFLite int8 3x3 conv (NHWC, per-channel weights): what the Arm dot-product calls take."""
    import numpy as np
    from tflite_build import ModelBuilder
    rng = np.random.default_rng(0)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 6, 6, 8], "int8", scale=0.05, zero_point=-3)
    ws = (rng.random(8) * 0.02 + 0.005).astype(np.float32)
    w = mb.tensor("w", [8, 3, 3, 8], "int8", data=rng.integers(-127, 128, (8, 3, 3, 8)).astype(np.int8),
                  scale=ws, zero_point=[0] * 8, quantized_dimension=0)
    b = mb.tensor("b", [8], "int32", data=rng.integers(-500, 500, 8).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * 8)
    y = mb.tensor("y", [1, 6, 6, 8], "int8", scale=0.2, zero_point=2)
    mb.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_h=1, stride_w=1, fused_activation_function="RELU")
    return mb.finish(inputs=[x], outputs=[y])


def _members(tar):
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name.lstrip("./"): t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def test_a_new_cortex_m_core_is_one_file(tmp_path):
    """A core aot does not know is a Cortex-M without extensions: plain loops. Made known in a
    file of its own, its features choose the Helium micro-kernels, as for the M55."""
    import json

    import aot
    from aot.target import Target
    from aot.targets import cortex_m
    model = _int8_conv()

    def schedules(mcpu):
        files = _members(aot.compile(model, target=f"c -mcpu={mcpu}").tar)
        meta = json.loads(files["metadata.json"])["modules"]["default"]["aot"]
        return set(meta["kernel_schedules"].values()), files["codegen/host/src/default_lib1.c"].decode()

    plain, _ = schedules("cortex-m52")
    assert not any(s.endswith(("(mve)", "(dsp)")) for s in plain), plain
    try:
        _load(tmp_path / "cortex_m52.py", NEW_CORE)
        assert Target("c -mcpu=cortex-m52").core.variant == "mve"
        chosen, c = schedules("cortex-m52")
        assert chosen == schedules("cortex-m55")[0] and any(s.endswith("(mve)") for s in chosen), chosen
        assert "dot_s8" in c
    finally:
        cortex_m.CORES.pop("cortex-m52", None)


def test_a_new_gpu_api_is_one_file(tmp_path):
    """A GPU API aot does not ship (HIP) defined in one file: its family (a target kind), its
    renderer dialect and its host template. A model compiles for it to an MLF whose kernels are
    printed in its dialect and whose host C is its template's (compiled only: no GPU here)."""
    import json

    import numpy as np
    from conftest import init, make_model, vi
    from onnx import helper

    import aot
    from aot import targets
    from aot.target import Target
    w = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                       [vi("x", [4, 16])], [vi("y", [4, 8])], [init("w", w)])
    before = list(targets.FAMILIES)
    try:
        _load(tmp_path / "hip_target.py", NEW_GPU_API)
        t = Target("hip")
        assert t.is_device and t.keys == ("hip", "gpu") and t.family.pipeline == "gpu"
        res = aot.compile(model, target="hip")
        files = _members(res.tar)
        kernels = files["codegen/host/src/default_lib1.hip"].decode()
        assert "__global__" in kernels and "hipThreadIdx_x" in kernels and "hipLaunchKernelGGL" in kernels
        assert "threadIdx.x" not in kernels
        host = files["codegen/host/src/default_lib0.c"].decode()
        assert "#include <hip/hip_runtime_api.h>" in host and "hipMalloc" in host and "cuda" not in host
        mk, cmake = files["mlf.mk"].decode(), files["mlf.cmake"].decode()
        assert "TVMGEN_DEFAULT_HIP_SRCS := codegen/host/src/default_lib1.hip  # build with hipcc" in mk
        assert "-lamdhip64" in mk and "nvcc" not in mk and "hip::host" in cmake and "CUDA" not in cmake
        meta = json.loads(files["metadata.json"])["modules"]["default"]["aot"]
        assert meta["device"] == {"api": "hip", "sources": ["codegen/host/src/default_lib1.hip"],
                                  "libs": ["-lamdhip64"]}
        from mlf import read_mlf, validate
        assert validate(read_mlf(res.tar)) == []        # the MLF's checks know the family too
    finally:
        targets.FAMILIES[:] = before


def test_single_issue_dsp_cores_tell_their_micro_kernels():
    """pw_s8's assembly loop is scheduled for a single-issue pipeline: the Cortex-M family defines
    AOT_CORTEX_M_SINGLE_ISSUE for the DSP cores without dual issue only."""
    from aot.target import Target
    got = {m: Target(f"c -mcpu={m}").family.c_defines(Target(f"c -mcpu={m}"))
           for m in ("cortex-m4", "cortex-m33", "cortex-m7", "cortex-m55", "cortex-m3")}
    assert got["cortex-m4"] == got["cortex-m33"] == {"AOT_CORTEX_M_SINGLE_ISSUE": "1"}
    assert got["cortex-m7"] == got["cortex-m55"] == got["cortex-m3"] == {}
    assert Target("c").family.c_defines(Target("c")) == {}
