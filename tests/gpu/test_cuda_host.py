"""The CUDA host's steady-state path, checked where no GPU is (CI): the whole run recorded as one
CUDA graph at init, the device-pointer entry point, the cuDNN/cuBLAS plans made at init, -tf32,
and that the per-run code calls nothing that allocates, builds descriptors or (inside what the
graph records) synchronises. Their sources and partitions are read; each build links with nvcc.
The GPU itself runs them in tests/gpu/test_gpu.py's on_the_gpu tests and bench/bench_gpu.py."""
import json
import os
import re
import subprocess
import sys

import pytest

from test_gpu import _libs_model, members, nvcc

from aot.errors import AotError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBS = os.path.join(ROOT, "aot", "targets", "libs")


def _files(res):
    return {name: data.decode("utf-8", "replace") for name, data in members(res.tar).items()}


def _compile(target="cuda -libs=cudnn,cublas", model=None):
    import aot
    return aot.compile((model or _libs_model()).SerializeToString(), target=target)


def functions(text):
    """{name: body} of the C functions defined at file scope in text (the generated style and the
    libraries': the definition's head at column 0, its body closed by a '}' at column 0)."""
    out = {}
    for m in re.finditer(r"^(?:static )?[A-Za-z_][\w \*]*?\b([A-Za-z_]\w*)\(([^;{]*?)\)\s*\{\n(.*?)^\}", text,
                         re.S | re.M):
        out[m.group(1)] = m.group(3)
    return out


def reachable_calls(funcs, roots, stop=()):
    """Every identifier called from roots, through the functions defined in funcs, not entering stop."""
    seen, todo, called = set(), list(roots), set()
    while todo:
        f = todo.pop()
        if f in seen or f in stop:
            continue
        seen.add(f)
        for c in re.findall(r"\b([A-Za-z_]\w*)\s*\(", funcs.get(f, "")):
            called.add(c)
            if c in funcs:
                todo.append(c)
    return called


# what a steady-state run must not do: allocate, make or change descriptors and handles, time or
# choose algorithms (and, inside the recorded steps, wait for the device)
FORBIDDEN = re.compile(r"^(cudaMalloc\w*|cudaFree\w*|cudaHostAlloc|malloc|calloc|realloc|free|"
                       r"cudnn(Create|Destroy|Set|Get|Find)\w*|cublas(Create|Destroy|Set)\w*|"
                       r"cudaStreamCreate\w*|cudaGraphInstantiate\w*|cudaStreamBeginCapture)$")
SYNC = re.compile(r"^(cuda(Stream|Device|Event)Synchronize|cudaMemcpy|cudaMemset)$")


def _all_functions(files):
    funcs = {}
    for name, text in files.items():
        if name.endswith(".c"):
            funcs.update(functions(text))
    return funcs


def test_run_and_the_recorded_steps_make_no_allocation_descriptor_or_sync_call():
    files = _files(_compile())
    funcs = _all_functions(files)
    assert {"tvmgen_default_steps", "tvmgen_default_run", "tvmgen_default_run_device", "tvmgen_default_init",
            "aot_cudnn_conv2d", "aot_cudnn_conv2d_plan", "aot_cublas_matmul"} <= set(funcs)
    steps = reachable_calls(funcs, ["tvmgen_default_steps"])
    # the libraries' run entries are reached: the check looks inside them
    assert {"aot_cudnn_conv2d", "aot_cublas_matmul", "cudnnConvolutionBiasActivationForward"} <= steps
    assert not {c for c in steps if FORBIDDEN.match(c) or SYNC.match(c)}, steps
    # run and run_device: init (first use only: it returns at once when ready) is their one way in
    for entry in ("tvmgen_default_run", "tvmgen_default_run_device"):
        calls = reachable_calls(funcs, [entry], stop={"tvmgen_default_init"})
        assert "tvmgen_default_init" in calls and "cudaGraphLaunch" in calls
        assert not {c for c in calls if FORBIDDEN.match(c)}, (entry, calls)
    # ...while init is where the plans, the scratch and the graph are made
    init = reachable_calls(funcs, ["tvmgen_default_init"])
    assert {"aot_cudnn_conv2d_plan", "cudnnFindConvolutionForwardAlgorithm", "cudaStreamBeginCapture",
            "cudaGraphInstantiate", "cublasSetWorkspace", "cudaMalloc"} <= init
    # the check can fail: the old per-call algorithm query in the run path would be caught
    assert FORBIDDEN.match("cudnnGetConvolutionForwardAlgorithm_v7") and SYNC.match("cudaStreamSynchronize")


def test_cudnn_plans_at_init_with_the_scratch_in_its_context_and_tf32_on_request():
    files = _files(_compile())
    lib0 = files["codegen/host/src/default_lib0.c"]
    plan = re.search(r"aot_cudnn_conv2d_plan\(DEV\.ctx_cudnn, ([^)]*)\)", lib0).group(1).split(", ")
    assert plan[-2:] == ["0", str(256 << 20)]           # no TF32; the limit on one algorithm's scratch
    assert "aot_cublas_math(DEV.ctx_cublas, 0)" in lib0
    meta = json.loads(files["metadata.json"])["modules"]["default"]
    # the static plan reserves no 16 MiB cuDNN scratch any more: the workspace is the model's tensors
    assert meta["memory"]["functions"]["main"][0]["workspace_size_bytes"] < 4096
    cudnn = open(os.path.join(LIBS, "aot_cudnn.c")).read()
    make = functions(cudnn)["aot_cudnn_make"]
    assert make.index("cudnnFindConvolutionForwardAlgorithm(") < make.index("cudnnGetConvolutionForwardAlgorithm_v7(")
    tf = _files(_compile("cuda -libs=cudnn,cublas -tf32"))["codegen/host/src/default_lib0.c"]
    assert re.search(r"aot_cudnn_conv2d_plan\(DEV\.ctx_cudnn, [^)]*, 1, 268435456\)", tf)
    assert "aot_cublas_math(DEV.ctx_cublas, 1)" in tf
    assert re.search(r"aot_cudnn_conv2d\([^;]*, 1, 1\) != 0", tf)     # relu, tf32: the run call finds that plan
    with pytest.raises(AotError, match="-tf32=2"):
        _compile("cuda -tf32=2")
    with pytest.raises(AotError, match="'-tf32' is not known"):
        _compile("opencl -tf32=1")


def test_the_header_declares_the_device_entry_points_and_cuda_alone_has_them():
    h = _files(_compile("cuda"))["codegen/host/include/tvmgen_default.h"]
    for decl in ("int32_t tvmgen_default_run_device(struct tvmgen_default_inputs* inputs, "
                 "struct tvmgen_default_outputs* outputs);",
                 "struct tvmgen_default_inputs tvmgen_default_device_inputs(void);",
                 "struct tvmgen_default_outputs tvmgen_default_device_outputs(void);",
                 "int32_t tvmgen_default_graph_replays(void);"):
        assert decl in h
    assert "run_device" not in _files(_compile("opencl"))["codegen/host/include/tvmgen_default.h"]


def test_a_plug_in_that_does_not_declare_graph_safety_keeps_run_eager_and_says_why():
    from aot.uma import UMABackend, call_extern

    class HostStep(UMABackend):
        target_name = "host-step-probe"

        def __init__(self):
            super().__init__()
            self._register_op("Softmax")
            self._register_lowering("Softmax", lambda c: call_extern("probe_softmax", c.device, c.inputs[0],
                                                                     c.outputs[0], c.inputs[0].size))
            self._register_device_context(create="probe_create", destroy="probe_destroy")
    HostStep().register()
    files = _files(_compile("host-step-probe, cuda"))
    meta = json.loads(files["metadata.json"])["modules"]["default"]["aot"]["device"]["graph"]
    assert meta["replay"] is False and "tvmgen_default_host_step_probe_main_0" in meta["why_not"]
    lib0 = files["codegen/host/src/default_lib0.c"]
    assert "#undef TVMGEN_DEFAULT_CUDA_GRAPH\n#define TVMGEN_DEFAULT_CUDA_GRAPH 0" in lib0
    assert "No graph: tvmgen_default_host_step_probe_main_0 may do host work" in lib0
    # the libraries declare it, so cuda -libs=... records
    ok = json.loads(_files(_compile())["metadata.json"])["modules"]["default"]["aot"]["device"]["graph"]
    assert ok["replay"] is True


@nvcc
@pytest.mark.parametrize("graph", ["1", "0"])
def test_the_graph_and_the_eager_build_of_one_mlf_both_link_with_the_device_harness(graph):
    """bench/bench_gpu.py's harness (run_device on the module's own buffers, CUDA events, the
    copying run checked against it) against both builds of one MLF: -D..._CUDA_GRAPH=0 is the
    eager twin the benchmark compares the graph with."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from bench_gpu import harness_source
    from aot.host import build_host, read_valid_mlf
    res = _compile()
    info = read_valid_mlf(res.tar).aot
    exe = build_host(res.tar, opt="-O2", extra_cflags=(f"-DTVMGEN_DEFAULT_CUDA_GRAPH={graph}",),
                     main=harness_source(info))
    syms = subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout
    assert "tvmgen_default_run_device" in syms
    assert ("cudaGraphLaunch" in syms) == (graph == "1")


@nvcc
def test_bench_gpu_builds_every_harness_without_a_gpu(tmp_path):
    path = tmp_path / "libs_model.onnx"
    path.write_bytes(_libs_model().SerializeToString())
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "bench_gpu.py"), "--onnx", str(path),
                        "--precision", "both", "--build-only", "--jobs", "2"], capture_output=True, text=True,
                       cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    built = [line for line in r.stdout.splitlines() if line.startswith("built ")]
    # fp32: libs and native, each with and without the graph; tf32: libs (the native path has no TF32)
    assert len(built) == 6 and all(os.path.exists(line.rsplit(": ", 1)[1]) for line in built)


def test_gpu_check_script_is_valid_shell():
    script = os.path.join(ROOT, "bench", "gpu_check.sh")
    assert subprocess.run(["bash", "-n", script]).returncode == 0
    text = open(script).read()
    assert "bench/bench_gpu.py" in text and "on_the_gpu" in text



def _gemm_model(c_shape, m=1, beta=1.0):
    """x[m, 64] -> Gemm(transB=1, W[10, 64], C of c_shape, beta) -> Relu."""
    import numpy as np
    from onnx import helper
    from conftest import init, make_model, vi
    r = np.random.default_rng(5)
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["g"], name="fc", transB=1, beta=beta),
             helper.make_node("Relu", ["g"], ["y"], name="relu")]
    inits = [init("w", r.standard_normal((10, 64)).astype(np.float32)),
             init("c", r.standard_normal(c_shape).astype(np.float32))]
    return make_model(nodes, [vi("x", [m, 64])], [vi("y", [m, 10])], inits)


@pytest.mark.parametrize("c_shape, m, call", [((10,), 1, "aot_cublas_gemm_bias"), ((1, 10), 4, "aot_cublas_gemm_bias"),
                                              ((4, 10), 4, "aot_cublas_gemm_bias"), ((4, 1), 4, None),
                                              ((10,), 65, None)])
def test_cublas_takes_a_gemm_with_its_bias_without_copies_of_the_operands(c_shape, m, call):
    """The classifier layers of resnet50 and vgg19: Gemm(transB=1) + bias. The transposes are cuBLAS's
    op flags; the bias is copied into the output and the product added onto it (beta). A column
    broadcast, or a row bias over more rows than it copies cheaply, stays a generated kernel."""
    from aot.executor import ExternalCall
    res = _compile(model=_gemm_model(c_shape, m, beta=0.5))
    ext = [c for c in res.plan.calls if isinstance(c, ExternalCall)]
    if call is None:
        assert not ext
        return
    (k,) = ext
    (body,) = k.body
    # context, x, w, c, y, then m n k, transA transB, alpha beta, row broadcast
    assert body.symbol == call and body.args[5:] == (m, 10, 64, 0, 1, 1.0, 0.5, 1 if len(c_shape) == 1 or
                                                     c_shape[0] == 1 else 0)
    assert k.scratch_bytes == 0


@nvcc
def test_cublas_gemm_bias_links():
    from aot.host import build_host
    assert os.path.exists(build_host(_compile(model=_gemm_model((10,))).tar))


def test_a_uniform_weight_a_library_takes_is_one_value_in_the_host_c_filled_at_init():
    """ConstantOfShape weights (the light models' vgg19: 548 MB of float32 in its three Gemms) reach
    a library call whole, where a generated kernel folds them: the host C holds one value and init
    fills the device buffer, so the MLF stays far below its member limit."""
    from onnx import TensorProto, helper
    from conftest import make_model, vi
    nodes = [helper.make_node("Constant", [], ["ws"], value=helper.make_tensor("s", TensorProto.INT64, [2], [64, 100])),
             helper.make_node("ConstantOfShape", ["ws"], ["w"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.25])),
             helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    lib0 = _files(_compile("cuda -libs=cublas", make_model(nodes, [vi("x", [2, 64])], [vi("y", [2, 100])], [])))[
        "codegen/host/src/default_lib0.c"]
    assert re.search(r"static const float (\w+)\[1\] = \{\n  0\.25f,?\n\};", lib0)
    assert re.search(r"tvmgen_default_fill\(DEV\.constants \+ 0, \w+, sizeof \w+, 6400u\)", lib0)
