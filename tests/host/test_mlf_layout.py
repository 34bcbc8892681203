"""MLF layout, metadata, determinism and the `aot info` report."""
import io
import json
import os
import struct
import subprocess
import sys
import tarfile

import pytest

from conftest import ROOT
from test_c_client import small_cnn


def compile_bytes(**kw):
    import aot
    return aot.compile(small_cnn().SerializeToString(), **kw).tar


def members(tar_bytes):
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as t:
        return t.getmembers()


def test_layout_and_metadata():
    from mlf import read_mlf, validate
    tb = compile_bytes()
    names = [m.name for m in members(tb)]
    assert all(n == "." or n.startswith("./") for n in names)
    for need in ("./metadata.json", "./codegen/host/include/tvmgen_default.h", "./codegen/host/src/default_lib0.c",
                 "./codegen/host/src/default_lib1.c", "./parameters/default.params", "./src/default.relay",
                 "./runtime/include/tvm/runtime/c_runtime_api.h", "./runtime/include/tvm/runtime/c_backend_api.h",
                 "./runtime/include/tvm/runtime/crt/error_codes.h", "./runtime/include/tvm/runtime/crt/stack_allocator.h",
                 "./runtime/src/runtime/crt/memory/stack_allocator.c",
                 "./runtime/src/runtime/crt/common/crt_backend_api.c", "./runtime/include/dlpack/dlpack.h",
                 "./runtime/include/crt_config.h", "./runtime/include/tvm/runtime/crt/logging.h", "./mlf.mk", "./mlf.cmake"):
        assert need in names, need
    assert all(m.uid == 0 and m.gid == 0 for m in members(tb))
    m = read_mlf(tb)
    assert validate(m) == []
    meta = m.metadata
    assert meta["version"] == 7 and list(meta["modules"]) == ["default"]
    mod = meta["modules"]["default"]
    assert mod["executors"] == ["aot"] and mod["style"] == "full-model" and mod["target"] == ["c -keys=cpu"]
    # TVM's MLF names the CRT it ships as its one external dependency, and has templates/ to start from
    assert [(d["short_name"], d["url"], d["url_type"]) for d in mod["external_dependencies"]] == \
        [("tvm_standalone_crt", "./runtime", "mlf_path")]
    assert "./templates/crt_config.h.template" in names and "./templates/platform.c.template" in names
    # one C file per module: no partitioned module here, so lib0 and lib1 only
    assert mod["aot"]["sources"] == ["codegen/host/src/default_lib0.c", "codegen/host/src/default_lib1.c"]
    main = mod["memory"]["functions"]["main"][0]
    assert main["device"] == 1
    assert main["inputs"] == {"x": {"dtype": "float32", "size": 3 * 16 * 16 * 4}}
    assert main["outputs"] == {"y": {"dtype": "float32", "size": 40}}
    assert main["io_size_bytes"] == 3 * 16 * 16 * 4 + 40
    assert main["constants_size_bytes"] == (8 * 27 + 8 + 8 * 18 + 80 + 10) * 4
    lib0 = m.files["codegen/host/src/default_lib0.c"].decode()
    assert "global_workspace[TVMGEN_DEFAULT_WORKSPACE_BYTES]" in lib0
    hdr = m.files["codegen/host/include/tvmgen_default.h"].decode()
    assert f"#define TVMGEN_DEFAULT_WORKSPACE_SIZE {main['workspace_size_bytes']}" in hdr
    assert ".rodata.tvm" in lib0 and ".bss.noinit.tvm" in lib0
    fnames = [f["function_name"] for f in mod["memory"]["functions"]["operator_functions"]]
    lib1 = m.files["codegen/host/src/default_lib1.c"].decode()
    assert fnames and all(f"int32_t {f}(" in lib1 for f in fnames)
    params = m.files["parameters/default.params"]
    assert struct.unpack("<QQQQ", params) == (0xF7E58D4F05049CB7, 0, 0, 0)


def test_deterministic_and_source_date_epoch(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    a, b = compile_bytes(), compile_bytes()
    assert a == b
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    c, d = compile_bytes(), compile_bytes()
    assert c == d and c != a
    from mlf import read_mlf
    assert read_mlf(c).module["export_datetime"] == "2023-11-14 22:13:20Z"
    assert {m.mtime for m in members(c)} == {1700000000}


def test_sections_overridable():
    from mlf import read_mlf
    import aot
    from aot.compiler import Options, compile_model
    res = compile_model(small_cnn().SerializeToString(), Options(const_section=".model_rodata", workspace_section=".sram2"))
    lib0 = read_mlf(res.tar).files["codegen/host/src/default_lib0.c"].decode()
    assert 'section(".model_rodata")' in lib0 and 'section(".sram2")' in lib0
    with pytest.raises(aot.AotError):
        compile_model(small_cnn().SerializeToString(), Options(workspace_section='x") int evil; ("'))


def test_info_cli(tmp_path):
    tb = compile_bytes()
    p = tmp_path / "m.tar"
    p.write_bytes(tb)
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "aot", "info", str(p), "--json"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["valid"] and info["summary"]["module"] == "default"
    assert info["summary"]["inputs"][0]["shape"] == [1, 3, 16, 16]
    r = subprocess.run([sys.executable, "-m", "aot", "info", str(p)], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "valid" in r.stdout and "workspace" in r.stdout
    # a tarball without its kernels is reported invalid
    with tarfile.open(fileobj=io.BytesIO(tb)) as t, tarfile.open(tmp_path / "bad.tar", "w") as out:
        for m in t.getmembers():
            if not m.name.endswith("lib1.c"):
                out.addfile(m, t.extractfile(m) if m.isfile() else None)
    r = subprocess.run([sys.executable, "-m", "aot", "info", str(tmp_path / "bad.tar")], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "lib1.c" in r.stdout


def test_make_fragment_builds(tmp_path):
    """The Make fragment in the MLF is enough for a firmware Makefile."""
    from test_c_client import extract, write_client
    import numpy as np
    extract(compile_bytes(), tmp_path / "mlf")
    write_client(str(tmp_path), "default", np.zeros((1, 3, 16, 16), np.float32))
    (tmp_path / "Makefile").write_text(
        "include mlf/mlf.mk\n"
        "app: client.c $(TVMGEN_DEFAULT_SRCS)\n"
        "\tgcc -std=c99 -Wall -Wextra -Werror -pedantic -I. $(TVMGEN_DEFAULT_INCLUDES) $^ -o $@ $(TVMGEN_DEFAULT_LIBS)\n")
    subprocess.run(["make", "-s", "app"], cwd=tmp_path, check=True)
    assert subprocess.run([str(tmp_path / "app")], capture_output=True).returncode == 0


@pytest.mark.skipif(subprocess.run(["which", "cmake"], capture_output=True).returncode != 0, reason="cmake not installed")
def test_cmake_fragment_builds(tmp_path):
    from test_c_client import extract, write_client
    import numpy as np
    extract(compile_bytes(), tmp_path / "mlf")
    write_client(str(tmp_path), "default", np.zeros((1, 3, 16, 16), np.float32))
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(fw C)\nset(CMAKE_C_STANDARD 99)\n"
        "include(mlf/mlf.cmake)\nadd_executable(app client.c)\n"
        "target_include_directories(app PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})\n"
        "target_link_libraries(app PRIVATE tvmgen_default)\n")
    subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "b")], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(tmp_path / "b")], check=True, capture_output=True)
    assert subprocess.run([str(tmp_path / "b" / "app")], capture_output=True).returncode == 0


def test_templates_build_a_firmware_platform(tmp_path):
    """templates/: crt_config.h filled with runtime/include/crt_config.h's values, and platform.c,
    compile warning-free (C99, strict) with the MLF's runtime and serve its stack allocator."""
    import re
    import string
    from test_c_client import extract
    extract(compile_bytes(), tmp_path / "mlf")
    mlf = tmp_path / "mlf"
    ours = (mlf / "runtime" / "include" / "crt_config.h").read_text()
    values = dict(re.findall(r"^#define (TVM_CRT_\w+) (\S+)", ours, re.M))
    (tmp_path / "cfg").mkdir()
    filled = string.Template((mlf / "templates" / "crt_config.h.template").read_text()).substitute(values)
    (tmp_path / "cfg" / "crt_config.h").write_text(filled)
    (tmp_path / "main.c").write_text(
        "#include <tvm/runtime/crt/platform.h>\n#include <crt_config.h>\n"
        "int main(void) {\n  void* p = 0;\n  uint8_t r[4];\n  double s = 1.0;\n"
        "  if (TVMPlatformInitialize() != kTvmErrorNoError) return 1;\n"
        "  if (TVMPlatformMemoryAllocate(100, (DLDevice){kDLCPU, 0}, &p) != kTvmErrorNoError || p == 0) return 2;\n"
        "  if (TVMPlatformMemoryFree(p, (DLDevice){kDLCPU, 0}) != kTvmErrorNoError) return 3;\n"
        "  if (TVMPlatformGenerateRandom(r, sizeof(r)) != kTvmErrorNoError) return 4;\n"
        "  if (TVMPlatformTimerStart() != kTvmErrorNoError || TVMPlatformTimerStop(&s) != kTvmErrorNoError) return 5;\n"
        "  TVMLogf(\"max args %d\\n\", TVM_CRT_MAX_ARGS);\n  return s == 0.0 ? 0 : 6;\n}\n")
    (tmp_path / "platform.c").write_text((mlf / "templates" / "platform.c.template").read_text())
    r = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", str(tmp_path / "cfg"),
                        "-I", str(mlf / "runtime" / "include"), str(tmp_path / "main.c"), str(tmp_path / "platform.c"),
                        str(mlf / "runtime" / "src" / "runtime" / "crt" / "memory" / "stack_allocator.c"),
                        "-o", str(tmp_path / "app")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == f"max args {values['TVM_CRT_MAX_ARGS']}\n", (r.returncode, r.stderr)


def test_cmsis_nn_takes_add_and_mul_not_sub_and_matches_tflm():
    """TVM's CMSIS-NN partition takes int8 ADD and MUL (not SUB): those kernels are lib2's, the SUB
    lib1's, and the whole model computes what TFLite Micro computes, bit for bit."""
    import numpy as np
    import aot
    from mlf import read_mlf
    from tflite_build import ModelBuilder
    from tflm_oracle import run_tflm, tflm_available
    if not tflm_available():
        pytest.skip("tflite-micro wheel not installed")
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 5, 7, 6], "int8", scale=0.04, zero_point=-5)
    y = mb.tensor("y", [1, 5, 7, 6], "int8", scale=0.03, zero_point=7)
    a = mb.tensor("a", [1, 5, 7, 6], "int8", scale=0.06, zero_point=1)
    mb.op("ADD", [x, y], [a], fused_activation_function="NONE")
    m = mb.tensor("m", [1, 5, 7, 6], "int8", scale=0.09, zero_point=-2)
    mb.op("MUL", [a, x], [m], fused_activation_function="RELU")
    z = mb.tensor("z", [1, 5, 7, 6], "int8", scale=0.1, zero_point=3)
    mb.op("SUB", [m, y], [z], fused_activation_function="NONE")
    model = mb.finish(inputs=[x, y], outputs=[z])
    res = aot.compile(model, target="cmsis-nn -mcpu=cortex-m55, c")
    mlf = read_mlf(res.tar)
    lib1, lib2 = (mlf.files[f"codegen/host/src/default_lib{k}.c"].decode() for k in (1, 2))
    # ADD and MUL fuse into one kernel of the module (TVM's would be a function each), the SUB stays apart
    assert [k for k in mlf.aot["kernels"] if "cmsis_nn" in k] == ["tvmgen_default_cmsis_nn_main_0"]
    assert "int32_t tvmgen_default_cmsis_nn_main_0(" in lib2
    host = [k for k in mlf.aot["kernels"] if "cmsis_nn" not in k]
    assert len(host) == 1 and f"int32_t {host[0]}(" in lib1
    rng = np.random.default_rng(5)
    xs = [rng.integers(-128, 128, (1, 5, 7, 6)).astype(np.int8) for _ in range(2)]
    got = aot.run(res, {"x": xs[0], "y": xs[1]})["z"]
    np.testing.assert_array_equal(got, run_tflm(model, xs)[0])
