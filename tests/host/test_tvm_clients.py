"""Clients written for Apache TVM's MLF build unchanged against ours and match onnxruntime.

The programs are generated here the way TVM's AOT test harness generates its test programs
(data headers that include dlpack/dlpack.h, the stack allocator over the platform hooks, the
interface call, a comparison against the expected outputs), for TVM's four call shapes:
unpacked (--interface-api c), packed, user workspace pools, pools with workspace I/O (USMP's U4).
They are built as TVM's default.mk builds them (runtime sources at TVM's paths) on the host,
strictly and with ASan+UBSan, and on qemu-cortex-m55. The CMake and Makefile projects under
tests/tvm_clients/ are laid out like apps/microtvm/zephyr_cmsisnn and apps/microtvm/cmsisnn.
Expected values come from onnxruntime; the model's output is named as TVM names it (--io-names tvm).
"""
import io
import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from onnx import helper

from conftest import init, make_model, ort_run, vi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENTS = os.path.join(ROOT, "tests", "tvm_clients")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SANITIZE = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
            # the workspace's .bss.noinit section is not one ASan instruments: a plain aligned array
            "-DTVMGEN_DEFAULT_WORKSPACE_ATTRIBUTE=__attribute__((aligned(16)))"]
RUNTIME_SRCS = ["runtime/src/runtime/crt/memory/stack_allocator.c", "runtime/src/runtime/crt/common/crt_backend_api.c"]
SUCCESS, FAILURE = "AOT_TEST_SUCCESS", "AOT_TEST_FAILURE"
BOARD_TOOLS = ("arm-none-eabi-gcc", "qemu-system-arm")
VARIANTS = {   # TVM's call shapes -> the aot.compile options that give them
    "unpacked": dict(interface_api="c"),
    "packed": dict(interface_api="packed"),
    "pools": dict(workspace_pools=[("sram", None)]),
    "pools_wsio": dict(workspace_pools=[("my_memory_pool", None)], use_workspace_io=True),
}


def model_and_data(seed=0):
    from test_c_client import small_cnn
    m = small_cnn(seed)
    x = np.random.default_rng(seed + 10).standard_normal((1, 3, 16, 16)).astype(np.float32)
    return m, x, ort_run(m, {"x": x})["y"]


def compile_mlf(m, dest, model_name="default", **kw):
    import aot
    res = aot.compile(m.SerializeToString(), model_name=model_name, io_names="tvm", **kw)
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        t.extractall(dest, filter="data")
    return res


def c_floats(a):
    return ", ".join(f"{v:.9g}f" if any(c in f"{v:.9g}" for c in ".en") else f"{v:.9g}.0f" for v in a.ravel())


def data_header(path, name, arr):
    """A tensor as TVM's harness writes one: stddef, stdint and dlpack included, a length, the data."""
    with open(path, "w") as f:
        f.write("#include <stddef.h>\n#include <stdint.h>\n#include <dlpack/dlpack.h>\n")
        f.write(f"const size_t {name}_len = {arr.size};\n")
        f.write(f"float {name}[] = {{{c_floats(arr)}}};\n")


def harness_main(variant):
    """The test program for one call shape, in the order TVM's harness emits it."""
    p = "tvmgen_default"
    lines = ["#include <stdio.h>", "#include <stdarg.h>", "#include <stdlib.h>", "#include <string.h>",
             "#include <math.h>", '#include "tvm/runtime/c_runtime_api.h"', '#include "tvm/runtime/crt/stack_allocator.h"']
    if variant != "packed":
        lines.append(f"#include <{p}.h>")
    lines += [f'#include "{p}_input_data_x.h"', f'#include "{p}_expected_output_data_output.h"',
              f'#include "{p}_output_data_output.h"']
    if variant == "packed":    # no interface header in TVM's packed programs: the entry point is declared
        lines.append(f"int32_t {p}_run(TVMValue* args, int* type_code, int num_args, TVMValue* out_value, "
                     "int* out_type_code, void* resource_handle);")
    ws = "(16384" + (f" + TVMGEN_DEFAULT_WORKSPACE_SIZE" if variant != "packed" else "") + \
        " + TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES)"
    lines += ["void client_puts(const char* s);", f"#define WORKSPACE_SIZE {ws}",
              "static uint8_t g_aot_memory[WORKSPACE_SIZE];", "tvm_workspace_t app_workspace;", r"""
tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr) {
  (void)dev;
  return StackMemoryManager_Allocate(&app_workspace, (int32_t)num_bytes, out_ptr);
}
tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  (void)dev;
  return StackMemoryManager_Free(&app_workspace, ptr);
}
void TVMPlatformAbort(tvm_crt_error_t code) {
  (void)code;
  exit(-1);
}
void TVMLogf(const char* msg, ...) {
  va_list args;
  va_start(args, msg);
  va_end(args);
  client_puts(msg);
}
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override) {
  (void)name;
  (void)f;
  (void)override;
  return 0;
}
int main(void) {
  size_t i;
  StackMemoryManager_Init(&app_workspace, g_aot_memory, WORKSPACE_SIZE);"""]
    fail = f'{{\n    client_puts("{FAILURE}\\n");\n    return 1;\n  }}'
    actual = f"((float*){p}_outputs.output)"
    if variant == "unpacked":
        lines += [f"  struct {p}_inputs {p}_inputs = {{ .x = {p}_input_data_x, }};",
                  f"  struct {p}_outputs {p}_outputs = {{ .output = {p}_output_data_output, }};",
                  f"  if ({p}_run(&{p}_inputs, &{p}_outputs) == -1) {fail}"]
    elif variant == "pools":
        lines += [f"  static uint8_t sram[TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE] __attribute__((aligned(16)));",
                  f"  struct {p}_workspace_pools {p}_workspace_pools = {{ .sram = sram, }};",
                  f"  struct {p}_inputs {p}_inputs = {{ .x = {p}_input_data_x, }};",
                  f"  struct {p}_outputs {p}_outputs = {{ .output = {p}_output_data_output, }};",
                  f"  if ({p}_run(&{p}_inputs, &{p}_outputs, &{p}_workspace_pools) == -1) {fail}"]
    elif variant == "pools_wsio":     # TVM's U4 prologue: the pool's I/O is mapped, then run takes the pools
        lines += ["  static uint8_t my_memory_pool[TVMGEN_DEFAULT_MY_MEMORY_POOL_WORKSPACE_POOL_SIZE] "
                  "__attribute__((aligned(16)));",
                  f"  struct {p}_workspace_pools {p}_workspace_pools = {{ .my_memory_pool = my_memory_pool }};",
                  f"  struct {p}_inputs {p}_inputs = {p}_map_inputs(&{p}_workspace_pools);",
                  f"  struct {p}_outputs {p}_outputs;",
                  f"  memcpy({p}_inputs.x, {p}_input_data_x, TVMGEN_DEFAULT_X_SIZE);",
                  f"  {p}_outputs = {p}_map_outputs(&{p}_workspace_pools);",
                  f"  if ({p}_run(&{p}_workspace_pools) == -1) {fail}"]
    else:   # packed: DLTensors over the buffers, as TVM's harness fakes them (num_args 0, type codes unset)
        actual = f"{p}_output_data_output"
        lines += ["  static DLDevice fake_device = {kDLCPU, 0};", "  static int64_t fake_dims = 0;",
                  "  static int64_t fake_shape = {0};",
                  f"  void* {p}_inputs[1] = {{ {p}_input_data_x, }};",
                  f"  void* {p}_outputs[1] = {{ {p}_output_data_output, }};",
                  f"  DLTensor {p}_tensors[2];", f"  TVMValue {p}_values[2];", f"  int {p}_typeids[2];"]
        for k, (src, j) in enumerate([("inputs", 0), ("outputs", 0)]):
            lines += [f"  {p}_tensors[{k}].device = fake_device;", f"  {p}_tensors[{k}].data = {p}_{src}[{j}];",
                      f"  {p}_tensors[{k}].shape = &fake_shape;", f"  {p}_tensors[{k}].ndim = fake_dims;",
                      f"  {p}_tensors[{k}].byte_offset = 0;", f"  {p}_tensors[{k}].strides = NULL;",
                      f"  {p}_values[{k}].v_handle = &{p}_tensors[{k}];"]
        # a caller that states the count and the type codes is checked against them ...
        lines += [f"  {p}_typeids[0] = kTVMDLTensorHandle;", f"  {p}_typeids[1] = kTVMDLTensorHandle;",
                  f"  if ({p}_run({p}_values, {p}_typeids, 1, NULL, NULL, NULL) != -1) {fail}",
                  f"  {p}_typeids[1] = kTVMStr;",
                  f"  if ({p}_run({p}_values, {p}_typeids, 2, NULL, NULL, NULL) != -1) {fail}",
                  f"  {p}_typeids[1] = kTVMDLTensorHandle;",
                  f"  if ({p}_run({p}_values, {p}_typeids, 2, NULL, NULL, NULL) != 0) {fail}",
                  # ... and TVM's harness call (count 0, its result unchecked) is what the outputs come from
                  f"  memset({p}_output_data_output, 0, sizeof {p}_output_data_output);",
                  f"  {p}_run({p}_values, {p}_typeids, 0, NULL, 0, NULL);"]
    lines += [f"  for (i = 0; i < {p}_output_data_output_len; i++) {{",
              f"    if (fabs({actual}[i] - {p}_expected_output_data_output[i]) > "
              f"1e-5 + 1e-5 * fabs({p}_expected_output_data_output[i])) {fail}",
              "  }", f'  client_puts("{SUCCESS}\\n");', "  return 0;", "}", ""]
    return "\n".join(lines)


def write_harness(d, variant, x, expected):
    p = "tvmgen_default"
    data_header(os.path.join(d, f"{p}_input_data_x.h"), f"{p}_input_data_x", x)
    data_header(os.path.join(d, f"{p}_expected_output_data_output.h"), f"{p}_expected_output_data_output", expected)
    data_header(os.path.join(d, f"{p}_output_data_output.h"), f"{p}_output_data_output", np.zeros_like(expected))
    with open(os.path.join(d, "test.c"), "w") as f:
        f.write(harness_main(variant))


def build_host(d, flags):
    """As default.mk: the program, the generated sources and the two runtime sources at TVM's paths."""
    codegen = sorted(os.path.join(d, "codegen/host/src", s) for s in os.listdir(os.path.join(d, "codegen/host/src")))
    srcs = [os.path.join(d, "test.c"), os.path.join(CLIENTS, "harness/platform_host.c"), *codegen,
            *(os.path.join(d, s) for s in RUNTIME_SRCS)]
    exe = os.path.join(d, "aot_test_runner")
    cmd = ["gcc", *STRICT, *flags, "-I", d, "-I", os.path.join(d, "codegen/host/include"),
           "-isystem", os.path.join(d, "runtime/include"), *srcs, "-o", exe, "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return exe


@pytest.mark.parametrize("flags", [["-O2"], SANITIZE], ids=["O2", "asan_ubsan"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_harness_client_host(tmp_path, variant, flags):
    m, x, ref = model_and_data()
    d = str(tmp_path)
    compile_mlf(m, d, **VARIANTS[variant])
    write_harness(d, variant, x, ref)
    r = subprocess.run([build_host(d, flags)], capture_output=True, text=True)
    assert r.returncode == 0 and SUCCESS in r.stdout, r.stdout + r.stderr


def test_harness_client_can_fail(tmp_path):
    """The program's comparison catches its largest output off by 1e-3."""
    m, x, ref = model_and_data()
    d = str(tmp_path)
    compile_mlf(m, d)
    wrong = ref.copy()
    wrong.flat[int(np.argmax(ref))] += 1e-3
    write_harness(d, "unpacked", x, wrong)
    r = subprocess.run([build_host(d, ["-O2"])], capture_output=True, text=True)
    assert r.returncode != 0 and FAILURE in r.stdout


def test_model_names_fail_a_tvm_client(tmp_path):
    """Without --io-names tvm the output member is the ONNX name, and TVM's naming does not compile."""
    import aot
    m, x, ref = model_and_data()
    d = str(tmp_path)
    with tarfile.open(fileobj=io.BytesIO(aot.compile(m.SerializeToString()).tar)) as t:
        t.extractall(d, filter="data")
    write_harness(d, "unpacked", x, ref)
    r = subprocess.run(["gcc", *STRICT, "-I", d, "-I", os.path.join(d, "codegen/host/include"), "-isystem",
                        os.path.join(d, "runtime/include"), "-c", os.path.join(d, "test.c"), "-o", os.path.join(d, "t.o")],
                       capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
    assert r.returncode != 0 and "has no member named 'output'" in r.stderr, r.stderr


def test_tvm_output_names():
    """TVM's AOT executor names an ONNX model's outputs output0, output1, ... (several) and keeps inputs'."""
    import aot
    r = np.random.default_rng(1)
    nodes = [helper.make_node("Relu", ["in:0"], ["a"]), helper.make_node("Add", ["in:0", "c"], ["b"])]
    m = make_model(nodes, [vi("in:0", [4])], [vi("a", [4]), vi("b", [4])],
                   [init("c", r.standard_normal(4).astype(np.float32))])
    res = aot.compile(m.SerializeToString(), io_names="tvm")
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        hdr = t.extractfile("./codegen/host/include/tvmgen_default.h").read().decode()
    assert "void* in_0;" in hdr and "void* output0;" in hdr and "void* output1;" in hdr
    assert "TVMGEN_DEFAULT_OUTPUT1_SIZE 16" in hdr
    x = r.standard_normal(4).astype(np.float32)
    got = aot.run(res, {"in:0": x})      # results stay keyed by the model's names
    for k, v in ort_run(m, {"in:0": x}).items():
        np.testing.assert_allclose(got[k], v, rtol=1e-6)


@pytest.mark.parametrize("args,msg", [
    (["--interface-api", "packed", "--use-workspace-io"], "--use-workspace-io"),
    (["--interface-api", "packed", "--workspace-pools", "sram"], "--workspace-pools"),
    (["--interface-api", "cpp"], "invalid choice"),
    (["--io-names", "onnx"], "invalid choice"),
])
def test_bad_option_combinations(tmp_path, args, msg):
    m, _, _ = model_and_data()
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    r = subprocess.run([sys.executable, "-m", "aot", "compile", str(path), "-o", str(tmp_path / "o.tar"), *args],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "o.tar").exists()


# -- projects laid out like TVM's demos ----------------------------------------------------

def _aot_cli():
    return f"{sys.executable} -m aot"


def int8_cnn(seed=0):
    """An int8 TFLite model, input 'x' and output 'Identity': CONV_2D, DEPTHWISE_CONV_2D,
    AVERAGE_POOL_2D, FULLY_CONNECTED and SOFTMAX (what CMSIS-NN covers) around a TANH (which it
    does not), so that both the CMSIS-NN module (lib2) and the host's (lib1) have kernels."""
    from tflite_build import ModelBuilder
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()

    def per_channel(n, lo=0.005, hi=0.025):
        return (rng.random(n) * (hi - lo) + lo).astype(np.float32)

    def i8(*shape):
        return rng.integers(-127, 128, shape).astype(np.int8)

    x = mb.tensor("x", [1, 12, 12, 3], "int8", scale=0.05, zero_point=-3)
    s1 = per_channel(8)
    w1 = mb.tensor("w1", [8, 3, 3, 3], "int8", data=i8(8, 3, 3, 3), scale=s1, zero_point=[0] * 8, quantized_dimension=0)
    b1 = mb.tensor("b1", [8], "int32", data=rng.integers(-300, 300, 8).astype(np.int32), scale=0.05 * s1,
                   zero_point=[0] * 8)
    c1 = mb.tensor("c1", [1, 12, 12, 8], "int8", scale=0.12, zero_point=-128)
    mb.op("CONV_2D", [x, w1, b1], [c1], padding="SAME", stride_h=1, stride_w=1, fused_activation_function="RELU")
    s2 = per_channel(8, 0.01, 0.04)
    w2 = mb.tensor("w2", [1, 3, 3, 8], "int8", data=i8(1, 3, 3, 8), scale=s2, zero_point=[0] * 8, quantized_dimension=3)
    b2 = mb.tensor("b2", [8], "int32", data=rng.integers(-300, 300, 8).astype(np.int32), scale=0.12 * s2,
                   zero_point=[0] * 8)
    d1 = mb.tensor("d1", [1, 6, 6, 8], "int8", scale=0.15, zero_point=4)
    mb.op("DEPTHWISE_CONV_2D", [c1, w2, b2], [d1], padding="SAME", stride_h=2, stride_w=2, depth_multiplier=1)
    t1 = mb.tensor("t1", [1, 6, 6, 8], "int8", scale=1 / 128, zero_point=0)
    mb.op("TANH", [d1], [t1])
    p1 = mb.tensor("p1", [1, 3, 3, 8], "int8", scale=1 / 128, zero_point=0)
    mb.op("AVERAGE_POOL_2D", [t1], [p1], padding="VALID", stride_h=2, stride_w=2, filter_height=2, filter_width=2)
    shape = mb.tensor("shape", [2], "int32", data=np.array([1, 72], np.int32))
    r1 = mb.tensor("r1", [1, 72], "int8", scale=1 / 128, zero_point=0)
    mb.op("RESHAPE", [p1, shape], [r1], new_shape=[1, 72])
    w3 = mb.tensor("w3", [10, 72], "int8", data=i8(10, 72), scale=0.01, zero_point=0)
    b3 = mb.tensor("b3", [10], "int32", data=rng.integers(-200, 200, 10).astype(np.int32), scale=0.01 / 128,
                   zero_point=0)
    f1 = mb.tensor("f1", [1, 10], "int8", scale=0.05, zero_point=3)
    mb.op("FULLY_CONNECTED", [r1, w3, b3], [f1])
    y = mb.tensor("Identity", [1, 10], "int8", scale=1 / 256, zero_point=-128)
    mb.op("SOFTMAX", [f1], [y], beta=1.0)
    return mb.finish(inputs=[x], outputs=[y])


# TVM's apps/microtvm/zephyr_cmsisnn/CMakeLists.txt lists these (its file list, kept as it is)
TVM_RUNTIME_LIST = ["runtime/src/runtime/crt/common/crt_backend_api.c", "runtime/src/runtime/crt/memory/stack_allocator.c"]
CODEGEN_OUTPUT_LIST = [f"codegen/host/src/default_lib{k}.c" for k in range(3)]


def _cmake_set(text, name):
    import re
    body = re.search(r"^set\(" + name + r"\n(.*?)^\)", text, re.M | re.S).group(1)
    return [line.strip().replace("${CMAKE_CURRENT_BINARY_DIR}/", "") for line in body.splitlines() if line.strip()]


@pytest.mark.parametrize("board", ["host"])     # qemu-cortex-m55: tests/board/test_tvm_clients_on_boards.py
def test_zephyr_cmsisnn_like_cmake_project(tmp_path, board):
    """CMake, with TVM's file lists and tvmc's "cmsis-nn -mcpu=cortex-m55, c": the MLF compiled and
    unpacked into the build directory, every file the lists name found (CMake reruns no rule), and
    the int8 model's output equal to TFLite Micro's. On the board, the cross compiler and its
    flags are given as CMake cache variables."""
    from tflm_oracle import run_tflm, tflm_available
    if shutil.which("cmake") is None:
        pytest.skip("cmake not installed")
    if not tflm_available():
        pytest.skip("tflite-micro wheel not installed")
    model = int8_cnn(1)
    x = np.random.default_rng(11).integers(-128, 128, (1, 12, 12, 3)).astype(np.int8)
    ref = run_tflm(model, [x])[0]
    src = tmp_path / "app"
    shutil.copytree(os.path.join(CLIENTS, "zephyr_cmsisnn"), src)
    lists = (src / "CMakeLists.txt").read_text()
    assert _cmake_set(lists, "TVM_RUNTIME") == TVM_RUNTIME_LIST
    assert _cmake_set(lists, "CODEGEN_OUTPUT") == CODEGEN_OUTPUT_LIST
    assert '--target="cmsis-nn -mcpu=cortex-m55, c"' in lists
    (src / "model" / "model.tflite").write_bytes(model)
    (src / "model" / "input.txt").write_text(" ".join(str(int(v)) for v in x.ravel()) + "\n")
    build = tmp_path / "build"
    env = dict(os.environ, PYTHONPATH=ROOT)
    configure = ["cmake", "-S", str(src), "-B", str(build), f"-DPYTHON={sys.executable}"]
    if board != "host":
        if any(shutil.which(t) is None for t in BOARD_TOOLS):
            pytest.skip("Arm toolchain or QEMU not installed")
        from aot.firmware import LINK, board_dir, load_qemu_board, qemu_command
        b = load_qemu_board(board)
        objs = _qemu_objects(str(tmp_path), b)
        configure += ["-DCMAKE_SYSTEM_NAME=Generic", "-DCMAKE_C_COMPILER=arm-none-eabi-gcc",
                      "-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY",
                      "-DCMAKE_C_FLAGS=" + " ".join(["-O2", *b["cflags"]]),
                      "-DCMAKE_EXE_LINKER_FLAGS=" + " ".join([*objs, *LINK, "-L", board_dir(board),
                                                              "-L", board_dir("cortex_m"), "-T", "link.ld"])]
    for cmd in (configure, ["cmake", "--build", str(build)]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # the CMSIS-NN module holds the operators it covers; the TANH stays with the host's operators
    lib1 = (build / CODEGEN_OUTPUT_LIST[1]).read_text()
    lib2 = (build / CODEGEN_OUTPUT_LIST[2]).read_text()
    assert lib2.count("int32_t tvmgen_default_cmsis_nn_main_") == 5 and "tvmgen_default_fused_" not in lib2
    assert "int32_t tvmgen_default_fused_" in lib1 and "tvmgen_default_cmsis_nn_main_4(" in lib1
    # the build ran the compile once: a second build finds every listed file and has nothing to do
    r = subprocess.run(["cmake", "--build", str(build), "--", "-n"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "aot compile" not in r.stdout and " -m aot " not in r.stdout, r.stdout[-2000:]
    r = subprocess.run([str(build / "app")] if board == "host" else qemu_command(b, str(build / "app")),
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr      # QEMU's semihosting console is its stderr
    assert r.returncode == 0, out
    lines = out.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("The class is"))
    got = np.array([int(v) for v in lines[k - 1].split()], np.int8)
    np.testing.assert_array_equal(got, ref.ravel())
    assert lines[k] == f"The class is {int(np.argmax(ref))}"


def _qemu_objects(d, b):
    """startup, semihosting and the demo's system calls for a QEMU board, compiled: what the
    board's firmware links besides the application (TVM's demos link their platform's the same way)."""
    from aot.firmware import BOARD_CFLAGS, board_dir
    common = board_dir("cortex_m")
    objs = []
    for src in (os.path.join(common, "startup.c"), os.path.join(common, "semihost.c"),
                os.path.join(CLIENTS, "harness", "retarget_qemu.c")):
        obj = os.path.join(d, os.path.basename(src)[:-2] + ".o")
        r = subprocess.run([b["cc"], *BOARD_CFLAGS, *b["cflags"], "-O2", "-I", common, "-c", src, "-o", obj],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        objs.append(obj)
    return objs


@pytest.mark.parametrize("board", ["host"])     # qemu-cortex-m55: tests/board/test_tvm_clients_on_boards.py
def test_cmsisnn_like_makefile_project(tmp_path, board):
    """Make: build/runtime as the standalone CRT, include/tvm_runtime.h, src/demo_bare_metal.c.
    On the board, the Makefile's compiler and flag variables are set on make's command line."""
    m, x, ref = model_and_data(2)
    app = tmp_path / "app"
    shutil.copytree(os.path.join(CLIENTS, "cmsisnn"), app)
    (app / "build").mkdir()
    (app / "model.onnx").write_bytes(m.SerializeToString())
    env = dict(os.environ, PYTHONPATH=ROOT)
    target = [] if board == "host" else ["--target=c -mcpu=cortex-m55"]
    # run_demo.sh's steps: compile with the module name 'detection', unpack, convert the input, make
    r = subprocess.run([sys.executable, "-m", "aot", "compile", "model.onnx", *target, "--executor-aot-interface-api=c",
                        "--io-names", "tvm", "--module-name=detection", "-o", "build/module.tar"],
                       cwd=app, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    with tarfile.open(app / "build" / "module.tar") as t:
        t.extractall(app / "build", filter="data")
    with open(app / "include" / "inputs.h", "w") as f:
        f.write(f"static float input[{x.size}] = {{{c_floats(x)}}};\n")
    with open(app / "include" / "outputs.h", "w") as f:
        f.write(f"static float output[{ref.size}];\n")
    make = ["make", "-C", str(app)]
    if board != "host":
        if any(shutil.which(t) is None for t in BOARD_TOOLS):
            pytest.skip("Arm toolchain or QEMU not installed")
        from aot.firmware import LIBS, LINK, board_dir, load_qemu_board, qemu_command
        b = load_qemu_board(board)
        objs = _qemu_objects(str(tmp_path), b)
        make += ["CC=arm-none-eabi-gcc", "AR=arm-none-eabi-ar", "RANLIB=arm-none-eabi-ranlib",
                 "PKG_COMPILE_OPTS=" + " ".join(["-g", *STRICT, "-O2", *b["cflags"]]),
                 # newlib-nano prints floats only when asked to link that code
                 "PKG_LDFLAGS=" + " ".join([*objs, *LINK, "-u", "_printf_float", "-L", board_dir(board), "-L", board_dir("cortex_m"),
                                            "-T", "link.ld", *LIBS])]
    r = subprocess.run(make, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    demo = str(app / "build" / "demo")
    r = subprocess.run([demo] if board == "host" else qemu_command(b, demo), capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    vals = [line for line in out.splitlines() if line.startswith("output ")]
    got = np.array([float(v) for v in vals[0].split()[1:]], np.float32)
    np.testing.assert_allclose(got, ref.ravel(), rtol=1e-5, atol=1e-6)
    assert f"Class {int(np.argmax(ref))} detected." in out


ETHOSU_DECL = ("#include <stdint.h>\n"
               "int32_t TVMEthosULaunch(void* context, const float* in, float* out, int32_t n, float floor_);\n")


def test_ethosu_like_device_demo(tmp_path):
    """A demo shaped like apps/microtvm/ethosu: the firmware reserves its driver, hands it to the
    model in struct tvmgen_default_devices (.ethos_u), and implements TVMEthosULaunch and the
    TVMDeviceEthosU* hooks on its typed context. The "NPU" is a plug-in backend named ethos-u."""
    import aot
    from aot.uma import UMABackend, call_extern

    class EthosU(UMABackend):
        target_name = "ethos-u"

        def __init__(self):
            super().__init__()
            self._register_op("Relu")
            self._register_lowering("Relu", lambda c: call_extern("TVMEthosULaunch", c.device, c.inputs[0],
                                                                  c.outputs[0], c.inputs[0].size, 0.0))
            self._register_device_context()
            self._register_codegen(includes=["aot_ethosu.h"], sources={"aot_ethosu.h": ETHOSU_DECL})
    EthosU().register()
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    m = make_model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])])
    x = np.random.default_rng(5).standard_normal((2, 5)).astype(np.float32)
    ref = ort_run(m, {"x": x})["y"]
    app = tmp_path / "app"
    shutil.copytree(os.path.join(CLIENTS, "ethosu"), app)
    compile_mlf(m, str(app / "build"), target="ethos-u, c")
    (app / "include" / "inputs.h").write_text(f"static float input[{x.size}] = {{{c_floats(x)}}};\n")
    (app / "include" / "outputs.h").write_text(f"static float output[{ref.size}];\n")
    b = app / "build"
    srcs = [str(app / "src" / "demo_bare_metal.c"), str(app / "src" / "tvm_ethosu_runtime.c"),
            *sorted(str(p) for p in (b / "codegen/host/src").glob("*.c")), *(str(b / s) for s in RUNTIME_SRCS)]
    exe = str(b / "demo")
    r = subprocess.run(["gcc", *STRICT, *SANITIZE, "-I", str(app / "include"), "-I", str(b / "codegen/host/include"),
                        "-I", str(b / "runtime/include"), *srcs, "-o", exe, "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([exe], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "launches 2 opened 0 active 0" in r.stdout    # both ReLUs ran on the device, hooks balanced
    vals = [line for line in r.stdout.splitlines() if line.startswith("output ")]
    np.testing.assert_allclose(np.array(vals[0].split()[1:], np.float32), ref.ravel(), rtol=1e-6)


# -- the same programs on qemu-cortex-m55 -----------------------------------------------------
