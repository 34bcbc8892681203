"""GPU targets: the same loop IR bound to blocks and threads, rendered as OpenCL C and CUDA C,
driven by generated host C. The OpenCL MLFs run on PoCL (OpenCL on the CPU) and must match
onnxruntime, which checks the GPU schedules (binding, guards) on every commit; the CUDA MLFs
compile with nvcc -Werror all-warnings and link (no GPU here: tests/gpu/test_gpu.py says so by
not running them).

CI installs PoCL and sets AOT_REQUIRE_OPENCL=1 and AOT_REQUIRE_NVCC=1, so there a missing
platform or compiler is a failure, not a skip."""
import io
import json
import os
import shutil
import tarfile

import numpy as np
import pytest

from conftest import ort_run

from aot.errors import AotError
from aot.host import cuda_device_count, opencl_platform_present

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "..", "shared", "models",
                      "mlperf_tiny")
MLPERF = ["anomaly_detection/ad01_fp32.onnx", "keyword_spotting/kws_ref_model_float32.onnx",
          "visual_wake_words/vww_96_float.onnx", "image_classification/pretrainedResnet.onnx"]


HAS_OPENCL = opencl_platform_present()
HAS_NVCC = shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")
if not HAS_OPENCL and os.environ.get("AOT_REQUIRE_OPENCL") == "1":
    raise RuntimeError("AOT_REQUIRE_OPENCL=1 but no OpenCL platform (CI installs pocl-opencl-icd)")
if not HAS_NVCC and os.environ.get("AOT_REQUIRE_NVCC") == "1":
    raise RuntimeError("AOT_REQUIRE_NVCC=1 but nvcc is not installed")
opencl = pytest.mark.skipif(not HAS_OPENCL, reason="no OpenCL platform (apt-get install pocl-opencl-icd ocl-icd-opencl-dev)")
nvcc = pytest.mark.skipif(not HAS_NVCC, reason="nvcc not installed")
HAS_GPU = HAS_NVCC and cuda_device_count() > 0
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU on this machine (runs where one is lent)")
CUDA_TARGETS = ["cuda", "cuda -libs=cudnn,cublas"]


def small_models():
    from test_boards import _mlp
    from test_c_client import small_cnn
    from test_memory import _residual_model, _two_branch_model
    from test_uma import conv_model
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    return {"small_cnn": (small_cnn(), {"x": x}), "residual": _residual_model(), "two_branch": _two_branch_model(),
            "mlp_softmax": _mlp(), "convs": (conv_model(), {"x": x})}


def members(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name.lstrip("./"): t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def check_opencl(model, feeds, rtol=1e-4, atol=1e-5, target="opencl", device=None):
    import aot
    res = aot.compile(model if isinstance(model, str) else model.SerializeToString(), target=target)
    outs = aot.run(res, feeds, device=device)
    for k, r in ort_run(model, feeds).items() if not isinstance(model, str) else _ort_file(model, feeds).items():
        np.testing.assert_allclose(outs[k], r, rtol=rtol, atol=atol * max(1.0, float(np.abs(r).max())), err_msg=k)
    return res


def _ort_file(path, feeds):
    import onnxruntime as ort
    s = ort.InferenceSession(path)
    return {o.name: v for o, v in zip(s.get_outputs(), s.run(None, feeds))}


def _feeds(path):
    import onnxruntime as ort
    s = ort.InferenceSession(path)
    rng = np.random.default_rng(1)
    return {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
            for i in s.get_inputs()}


@opencl
@pytest.mark.parametrize("name", ["small_cnn", "residual", "two_branch", "mlp_softmax", "convs"])
def test_opencl_small_models_on_pocl_match_onnxruntime(name):
    model, feeds = small_models()[name]
    res = check_opencl(model, feeds)
    files = members(res.tar)
    cl = files["codegen/host/src/default_kernels.cl"].decode()
    assert "__kernel void" in cl and "get_group_id(0)" in cl and "get_local_id(0)" in cl
    meta = json.loads(files["metadata.json"])["modules"]["default"]
    assert meta["aot"]["device"]["api"] == "opencl" and meta["aot"]["target"]["kind"] == "opencl"


@opencl
@pytest.mark.slow
@pytest.mark.parametrize("rel", MLPERF)
def test_opencl_mlperf_tiny_on_pocl(rel):
    path = os.path.join(MODELS, rel)
    check_opencl(path, _feeds(path))


@opencl
@pytest.mark.conformance
@pytest.mark.xdist_group("gpu_conformance")
def test_opencl_node_test_subset_matches_the_c_path():
    """Every 12th ONNX node test: what passes on the C path passes on OpenCL too."""
    from aot.conformance import cases, run_case
    idx = list(range(0, len(cases()), 12))
    on_c = [run_case(k) for k in idx]
    todo = [k for k, r in zip(idx, on_c) if r.status == "pass"]
    results = [run_case(k, target="opencl") for k in todo]
    bad = [(r.name, r.status, r.reason) for r in results if r.status != "pass"]
    assert len(todo) > 100 and not bad, bad


@nvcc
@pytest.mark.parametrize("name", ["small_cnn", "residual", "two_branch", "mlp_softmax", "convs"])
def test_cuda_mlf_compiles_with_nvcc_and_links(name):
    import aot
    from aot.host import build_host
    model, _ = small_models()[name]
    res = aot.compile(model.SerializeToString(), target="cuda")
    files = members(res.tar)
    cu = files["codegen/host/src/default_lib1.cu"].decode()
    assert 'extern "C" __global__ void __launch_bounds__(' in cu and "<<<dim3(" in cu
    assert "cudaMalloc" in files["codegen/host/src/default_lib0.c"].decode()
    mk = files["mlf.mk"].decode()
    assert "default_lib1.cu" in mk and "-lcudart" in mk
    assert os.path.exists(build_host(res.tar))      # nvcc -Werror all-warnings, gcc -Werror -pedantic, link


@nvcc
@pytest.mark.slow
@pytest.mark.parametrize("rel", MLPERF)
def test_cuda_mlperf_tiny_compiles_and_links(rel):
    import aot
    from aot.host import build_host
    assert os.path.exists(build_host(aot.compile(os.path.join(MODELS, rel), target="cuda").tar))


@gpu
@pytest.mark.parametrize("target", CUDA_TARGETS)
@pytest.mark.parametrize("name", ["small_cnn", "residual", "two_branch", "mlp_softmax", "convs"])
def test_cuda_small_models_run_on_the_gpu_and_match_onnxruntime(name, target):
    """Where a GPU is lent: the CUDA MLF's kernels (and cuDNN/cuBLAS calls) run on it; the outputs
    are onnxruntime's on the CPU (float sums in another order: a looser tolerance than PoCL's)."""
    model, feeds = small_models()[name]
    check_opencl(model, feeds, rtol=1e-3, atol=1e-4, target=target, device="cuda")


@gpu
@pytest.mark.slow
@pytest.mark.parametrize("target", CUDA_TARGETS)
@pytest.mark.parametrize("rel", MLPERF)
def test_cuda_mlperf_tiny_runs_on_the_gpu_and_matches_onnxruntime(rel, target):
    path = os.path.join(MODELS, rel)
    check_opencl(path, _feeds(path), rtol=1e-3, atol=1e-4, target=target, device="cuda")


@gpu
@pytest.mark.slow
@pytest.mark.parametrize("target", CUDA_TARGETS)
@pytest.mark.parametrize("name", ["squeezenet", "shufflenet", "resnet50", "inception_v1", "densenet121"])
def test_cuda_light_models_run_on_the_gpu_and_match_onnxruntime(name, target):
    """Their weights are ConstantOfShape splats: cuDNN/cuBLAS must get them whole."""
    import onnx
    from test_models import LIGHT_DIR, runner_input
    model = onnx.load(os.path.join(LIGHT_DIR, f"light_{name}.onnx"))
    xname, x = runner_input(model)
    check_opencl(model, {xname: x}, rtol=1e-3, atol=1e-4, target=target, device="cuda")


def _plain(nodes, inputs, outputs, inits=()):
    """The one fused kernel of a model, lowered and not yet scheduled."""
    from conftest import make_model
    from aot.frontend.onnx_import import import_onnx
    from aot.te.lower import lower_group
    from aot.passes.fuse import fuse_ops
    g = import_onnx(make_model(nodes, inputs, outputs, inits).SerializeToString(), {})
    (grp,) = [x for x in fuse_ops(g) if not x.alias]
    return lower_group(grp, "k")[0]


def _lowered(nodes, inputs, outputs, inits=()):
    from aot.schedules import schedule
    from aot.target import Target
    return schedule(_plain(nodes, inputs, outputs, inits), Target("cuda"))


def _loops(func):
    from aot.tir.stmt import For, walk_stmts
    return [s for s in walk_stmts(func.body) if isinstance(s, For)]


def test_gpu_schedule_tiles_accumulations_and_binds_independent_loops():
    from onnx import helper
    from conftest import vi
    from aot.tir.stmt import Allocate, Barrier, walk_stmts
    f = _lowered([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
                 [vi("x", [3, 50, 7])], [vi("y", [3, 7])],
                 [__import__("conftest").init("axes", np.array([1], np.int64))])
    kinds = [(lp.kind, lp.thread_tag) for lp in _loops(f)]
    assert {("thread_binding", f"{k}.{a}") for k in ("blockIdx", "threadIdx") for a in "xy"} <= set(kinds)
    assert [k for k in kinds if k[0] == "serial"]                 # chunks of the 50-long reduction, in the thread
    assert f.attrs["launch"] == ((1, 1, 1), (8, 4, 1))            # a 4x8 tile of the 3x7 outputs, edges guarded
    shared = [s.buffer for s in walk_stmts(f.body) if isinstance(s, Allocate) and s.buffer.scope == "shared"]
    assert [b.shape for b in shared] == [(4, 16, 8)]     # the block's 4 rows x a 16-chunk x 8 columns (edges zeroed)
    assert sum(isinstance(s, Barrier) for s in walk_stmts(f.body)) == 2
    g = _lowered([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4, 1000])], [vi("y", [4, 1000])])
    assert g.attrs["launch"] == ((16, 1, 1), (256, 1, 1))          # 4000 threads in blocks of 256, tail guarded
    assert not any(isinstance(s, Allocate) and s.buffer.scope == "shared" for s in walk_stmts(g.body))


def _long_reductions():
    from onnx import helper
    from conftest import init, make_model, vi
    r = np.random.default_rng(5)
    x = r.standard_normal((2, 1000)).astype(np.float32)
    return {
        "softmax": (make_model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [vi("x", [2, 1000])],
                               [vi("y", [2, 1000])]), {"x": x}),
        "sum_to_scalar": (make_model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], [vi("x", [3, 50, 7])],
                                     [vi("y", [])]), {"x": r.standard_normal((3, 50, 7)).astype(np.float32)}),
        "max_rows": (make_model([helper.make_node("ReduceMax", ["x"], ["y"], keepdims=1, axes=[1])], [vi("x", [3, 500])],
                                [vi("y", [3, 1])]), {"x": r.standard_normal((3, 500)).astype(np.float32)}),
        "dense_long_k": (make_model([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)], [vi("x", [1, 700])],
                                    [vi("y", [1, 10])], [init("w", r.standard_normal((10, 700)).astype(np.float32)),
                                                         init("b", r.standard_normal(10).astype(np.float32))]),
                         {"x": r.standard_normal((1, 700)).astype(np.float32)}),
    }


def test_gpu_schedule_spreads_few_long_reductions_over_a_block():
    """Softmax over 1000 classes: one block per row, 256 threads, each reduction combined in
    shared memory in 8 pairwise steps; the 12-class softmax of KWS stays one thread per row."""
    from onnx import helper
    from conftest import vi
    from aot.tir.stmt import Allocate, Barrier, walk_stmts
    f = _lowered([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [vi("x", [2, 1000])], [vi("y", [2, 1000])])
    assert f.attrs["launch"] == ((2, 1, 1), (256, 1, 1))
    red = [s.buffer for s in walk_stmts(f.body) if isinstance(s, Allocate) and s.buffer.scope == "shared"]
    assert [b.shape for b in red] == [(256,), (256,)]               # the max and the sum
    assert sum(isinstance(s, Barrier) for s in walk_stmts(f.body)) == 2 * (1 + 8 + 1)
    g = _lowered([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [vi("x", [1, 12])], [vi("y", [1, 12])])
    assert not any(isinstance(s, Barrier) for s in walk_stmts(g.body))


@opencl
@pytest.mark.parametrize("name", ["softmax", "sum_to_scalar", "max_rows", "dense_long_k"])
def test_opencl_long_reductions_across_threads_match_onnxruntime(name):
    model, feeds = _long_reductions()[name]
    res = check_opencl(model, feeds)
    src = next(v for k, v in members(res.tar).items() if k.endswith(".cl")).decode()
    assert "_red[" in src and "barrier(CLK_LOCAL_MEM_FENCE);" in src


def test_gpu_renderers_are_short_dialects():
    from codegen_c.c_renderer import CRenderer
    from codegen_c.cuda_renderer import CUDARenderer
    from codegen_c.opencl_renderer import OpenCLRenderer
    for cls in (CUDARenderer, OpenCLRenderer):
        own = {k for k in vars(cls) if not k.startswith("__")}
        assert own <= set(vars(CRenderer)) | {"name"}, own - set(vars(CRenderer))   # only dialect points


def test_gpu_targets_refuse_what_they_cannot_do():
    import aot
    model, _ = small_models()["small_cnn"]
    data = model.SerializeToString()
    with pytest.raises(AotError, match="workspace pools and --use-workspace-io are for C targets"):
        aot.compile(data, target="cuda", use_workspace_io=True)
    with pytest.raises(AotError, match="option '-libs' is not known for kind 'opencl'"):
        aot.compile(data, target="opencl -libs=cudnn")


def _libs_model():
    """conv(+bias) -> relu -> conv (asymmetric pads) -> flatten -> matmul -> add -> softmax."""
    from onnx import helper
    from conftest import init, make_model, vi
    r = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[0, 0, 1, 1], strides=[2, 2]),
             helper.make_node("Flatten", ["c2"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "wd"], ["m"], name="dense"),
             helper.make_node("Add", ["m", "bd"], ["a"], name="bias"),
             helper.make_node("Softmax", ["a"], ["y"], name="softmax")]
    inits = [init("w1", r.standard_normal((4, 3, 3, 3)).astype(np.float32)), init("b1", r.standard_normal(4).astype(np.float32)),
             init("w2", r.standard_normal((4, 4, 3, 3)).astype(np.float32)),
             init("wd", r.standard_normal((64, 10)).astype(np.float32)), init("bd", r.standard_normal(10).astype(np.float32))]
    return make_model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 10])], inits)


def test_cudnn_cublas_take_conv_and_dense_and_generated_kernels_the_rest():
    import aot
    from aot.executor import DeviceLaunch, ExternalCall
    res = aot.compile(_libs_model().SerializeToString(), target="cuda -libs=cudnn,cublas")
    fns = {n.attrs["global_symbol"]: n for n in res.graph.nodes if n.op == "Function"}
    # the partition: the symmetric-padded conv with its bias and relu to cuDNN's fused form, the
    # matmul to cuBLAS; the conv cuDNN cannot pad (TF-style asymmetric) and every other epilogue
    # stay in the graph as generated kernels
    def ops(f):
        return [(m.attrs.get("Composite"), [x.op for x in m.attrs["body"].nodes]) if m.op == "Function" else m.op
                for m in f.attrs["body"].nodes]
    assert {s: ops(f) for s, f in fns.items()} == {
        "tvmgen_default_cudnn_main_0": [("cudnn.conv2d_bias_relu", ["Conv", "Relu"])],
        "tvmgen_default_cublas_main_0": ["MatMul"]}
    assert sorted(n.op for n in res.graph.nodes if n.op != "Function") == ["Add", "Conv", "Flatten", "Softmax"]
    steps = [(type(c).__name__, c.symbol) for c in res.plan.calls]
    assert steps[0] == ("ExternalCall", "tvmgen_default_cudnn_main_0")
    assert ("ExternalCall", "tvmgen_default_cublas_main_0") in steps
    ext = {c.symbol: c for c in res.plan.calls if isinstance(c, ExternalCall)}
    cudnn = ext["tvmgen_default_cudnn_main_0"]
    assert [e.symbol for e in cudnn.body] == ["aot_cudnn_conv2d"]
    assert cudnn.body[0].args[-2:] == (1, 0)         # relu fused, float32 math (no -tf32)
    assert [e.symbol for e in cudnn.init_body] == ["aot_cudnn_conv2d_plan"]     # algorithm chosen at init
    assert [e.symbol for e in ext["tvmgen_default_cublas_main_0"].body] == ["aot_cublas_matmul"]
    # the algorithm's working memory is the library context's, sized at init: the static plan holds none
    assert cudnn.scratch_bytes == 0 and all(c.graph_safe for c in ext.values())
    launches = [c for c in res.plan.calls if isinstance(c, DeviceLaunch)]
    assert len(launches) == len(res.plan.calls) - 2 and all(c.grid[0] >= 1 for c in launches)
    files = members(res.tar)
    lib0 = files["codegen/host/src/default_lib0.c"].decode()
    assert "aot_cudnn_create(&DEV.ctx_cudnn, (void*)DEV.stream)" in lib0 and "aot_cublas_destroy(DEV.ctx_cublas)" in lib0
    init = lib0[lib0.index("_init(void) {"):lib0.index("DEV.ready = 1;")]
    assert init.index("aot_cudnn_create(") < init.index(
        "aot_cudnn_conv2d_plan(DEV.ctx_cudnn, 1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 8, 8, 1, 1, 0, 268435456)")
    assert init.index("aot_cudnn_conv2d_plan(") < init.index("tvmgen_default_record()")     # planned, then recorded
    at = lib0.index("_steps(uint8_t* const* io) {")
    steps = lib0[at:lib0.index("return 0;\n}", at)]
    run = lib0[lib0.index("_run(struct"):]
    assert "aot_cudnn_conv2d_plan" not in steps + run and "tvmgen_default_cudnn_main_0(" in steps
    assert "codegen/host/src/aot_cudnn.c" in files and "codegen/host/src/aot_cublas.c" in files
    meta = json.loads(files["metadata.json"])["modules"]["default"]["aot"]
    assert meta["device"]["libs"] == ["-lcudnn", "-lcublas", "-lcudart"]
    assert meta["device"]["graph"] == {"replay": True, "why_not": None, "macro": "TVMGEN_DEFAULT_CUDA_GRAPH"}
    assert [f["compiler"] for f in meta["external_functions"]] == ["cudnn", "cublas"]


@nvcc
def test_cudnn_cublas_mlf_compiles_and_links():
    import aot
    from aot.host import build_host
    assert os.path.exists(build_host(aot.compile(_libs_model().SerializeToString(),
                                                 target="cuda -libs=cudnn,cublas").tar))


@nvcc
@pytest.mark.slow
@pytest.mark.parametrize("rel", MLPERF)
def test_cudnn_cublas_mlperf_tiny_compiles_and_links(rel):
    import aot
    from aot.host import build_host
    res = aot.compile(os.path.join(MODELS, rel), target="cuda -libs=cudnn,cublas")
    assert any(n.op == "Function" for n in res.graph.nodes)
    assert os.path.exists(build_host(res.tar))


@opencl
@pytest.mark.slow
@pytest.mark.parametrize("name", ["squeezenet", "shufflenet", "resnet50", "vgg19", "inception_v1"])
def test_opencl_light_models_on_pocl(name):
    """The ONNX light models that fit the time budget on PoCL's CPU device (the tiled schedules
    run each in 15-20 s on two cores). Their softmax outputs are uniform (constant weights), so
    the logits before the softmax are compared too."""
    import aot
    import onnx
    from onnx import helper, numpy_helper
    from test_models import LIGHT_DIR, runner_input
    model = onnx.load(os.path.join(LIGHT_DIR, f"light_{name}.onnx"))
    out_name = model.graph.output[0].name
    last = model.graph.node[-1]
    if last.op_type == "Softmax":
        shape = onnx.shape_inference.infer_shapes(model)
        info = {v.name: v for v in shape.graph.value_info}
        model.graph.output.append(info[last.input[0]] if last.input[0] in info else
                                  helper.make_tensor_value_info(last.input[0], onnx.TensorProto.FLOAT, None))
    xname, x = runner_input(model)
    out = aot.run(aot.compile(model.SerializeToString(), target="opencl"), {xname: x})
    expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(LIGHT_DIR, f"light_{name}_output_0.pb")))
    np.testing.assert_allclose(out[out_name], expected, rtol=1e-3, atol=1e-7)
    for k, r in ort_run(model, {xname: x}).items():
        np.testing.assert_allclose(out[k], r, rtol=1e-3, atol=1e-6 * max(1.0, float(np.abs(r).max())), err_msg=k)


@nvcc
@pytest.mark.slow
@pytest.mark.parametrize("target", ["cuda", "cuda -libs=cudnn,cublas"])
def test_cuda_light_models_compile_and_link(target):
    """Every ONNX light model's CUDA MLF, native and with the libraries, builds and links."""
    import aot
    import onnx
    from aot.host import build_host
    from test_models import LIGHT, LIGHT_DIR
    assert len(LIGHT) == 9
    for name in LIGHT:
        res = aot.compile(onnx.load(os.path.join(LIGHT_DIR, f"light_{name}.onnx")).SerializeToString(), target=target)
        assert os.path.exists(build_host(res.tar)), name
        if "cudnn" in target:
            assert any(n.op == "Function" and n.attrs.get("Compiler") == "cudnn" for n in res.graph.nodes), name


@nvcc
@pytest.mark.conformance
@pytest.mark.xdist_group("gpu_conformance")
def test_cuda_node_test_subset_compiles_and_links():
    """Every 24th ONNX node test that passes on the C path: its CUDA MLF builds (nvcc -Werror
    all-warnings, gcc -pedantic host, link). Inputs that parameterise shapes are bound as the
    conformance runner binds them."""
    from aot.backend import AotBackend, as_array
    from aot.conformance import cases, run_case
    from aot.host import build_host
    built = 0
    for k in range(0, len(cases()), 24):
        if run_case(k).status != "pass":
            continue
        case = cases()[k]
        rep = AotBackend.prepare(case.model, target="cuda")
        inputs, _ = case.data_sets[0]
        feeds = {n: as_array(v) for n, v in zip(rep.input_names, inputs)}
        result, _ = rep.compile(feeds)
        assert os.path.exists(build_host(result.tar)), case.name
        built += 1
    assert built > 40


def test_launch_shape_checks_the_binding():
    from aot.tir.expr import Var, lt
    from aot.tir.launch import launch_shape
    from aot.tir.schedule import ScheduleError
    from aot.tir.stmt import Barrier, For, IfThenElse, PrimFunc, Seq
    tx, ty, bx = Var("tx"), Var("ty"), Var("bx")

    def fn(body):
        return PrimFunc("k", [], body, 0)
    ok = For(bx, 0, 8, For(tx, 0, 64, Barrier(), "thread_binding", "threadIdx.x"), "thread_binding", "blockIdx.x")
    assert launch_shape(fn(ok)) == ((8, 1, 1), (64, 1, 1))
    two = Seq([For(tx, 0, 64, Barrier(), "thread_binding", "threadIdx.x"),
               For(ty, 0, 32, Barrier(), "thread_binding", "threadIdx.x")])
    with pytest.raises(ScheduleError, match="extents 64 and 32"):
        launch_shape(fn(two))
    with pytest.raises(ScheduleError, match="exceeds the limit of 1024"):
        launch_shape(fn(For(tx, 0, 2048, Barrier(), "thread_binding", "threadIdx.x")))
    divergent = For(tx, 0, 64, IfThenElse(lt(tx, 10), Barrier()), "thread_binding", "threadIdx.x")
    with pytest.raises(ScheduleError, match="barrier under a condition"):
        launch_shape(fn(divergent))
    uniform = For(tx, 0, 64, IfThenElse(lt(bx, 10), Barrier()), "thread_binding", "threadIdx.x")
    assert launch_shape(fn(For(bx, 0, 4, uniform, "thread_binding", "blockIdx.x")))[1] == (64, 1, 1)


def test_opencl_source_table_keeps_every_literal_within_iso_c_limits():
    """A kernel line can be longer than the 4095 characters ISO C promises for a string literal
    (a long fused index expression): the table splits it, and OpenCL joins the pieces back."""
    from codegen_c.opencl_renderer import c_string_lines as _c_string_lines
    text = 'a = "q";\n' + "x\\y" * 3000 + "\nend"
    pieces = _c_string_lines(text)
    assert all(len(p) <= 4095 for p in pieces)
    decoded = "".join(p[1:-1].encode().decode("unicode_escape") for p in pieces)
    assert decoded == text


@opencl
def test_opencl_kernel_with_a_very_long_line_builds_and_matches():
    from aot.conformance import cases, run_case
    names = {"test_sce_NCd1d2d3d4d5_none_no_weight_log_prob_expanded"}
    (k,) = [k for k, c in enumerate(cases()) if c.name in names]
    r = run_case(k, target="opencl")
    assert r.status == "pass", r.reason


def test_a_gpu_module_is_refused_by_board_builds(tmp_path):
    import aot
    from aot.firmware import build_firmware
    from aot.project import export_project
    model, _ = small_models()["small_cnn"]
    tar = aot.compile(model.SerializeToString(), target="opencl").tar
    with pytest.raises(AotError, match="runs its kernels on the opencl device: build it for the host"):
        build_firmware(tar, "qemu-cortex-m4")
    with pytest.raises(AotError, match="runs its kernels on the opencl device"):
        export_project(tar, "qemu-cortex-m4", str(tmp_path / "p"))


def test_run_checks_the_device_against_the_mlf_and_the_machine():
    import aot
    model, feeds = small_models()["mlp_softmax"]
    cuda = aot.compile(model.SerializeToString(), target="cuda")
    with pytest.raises(AotError, match="device 'opencl': the MLF was compiled for the cuda target"):
        aot.run(cuda, feeds, device="opencl")
    c = aot.compile(model.SerializeToString())
    with pytest.raises(AotError, match="device 'cuda': the MLF was compiled for a C target"):
        aot.run(c, feeds, device="cuda")
    with pytest.raises(AotError, match="device 'cuda' is for the host board"):
        aot.run(c, feeds, board="qemu-cortex-m4", device="cuda")
    if cuda_device_count() == 0:
        with pytest.raises(AotError, match="no CUDA GPU on this machine"):
            aot.run(cuda, feeds, device="cuda")
    else:       # a lent GPU: the CUDA MLF runs and matches onnxruntime
        outs = aot.run(cuda, feeds, device="cuda")
        for k, r in ort_run(model, feeds).items():
            np.testing.assert_allclose(outs[k], r, rtol=1e-4, atol=1e-5)
