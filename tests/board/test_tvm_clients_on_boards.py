"""Clients written for Apache TVM's MLF (tests/host/test_tvm_clients.py) built for and run on QEMU Cortex-M
boards."""
import os
import shutil
import subprocess

import pytest

from test_tvm_clients import test_cmsisnn_like_makefile_project as _makefile_project
from test_tvm_clients import test_zephyr_cmsisnn_like_cmake_project as _cmake_project
from test_tvm_clients import BOARD_TOOLS, CLIENTS, RUNTIME_SRCS, STRICT, SUCCESS, VARIANTS, compile_mlf, model_and_data, write_harness  # noqa: F401


@pytest.mark.board
@pytest.mark.skipif(any(shutil.which(t) is None for t in BOARD_TOOLS), reason="Arm toolchain or QEMU not installed")
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_harness_client_qemu_m55(tmp_path, variant):
    from aot.firmware import BOARD_CFLAGS, LIBS, LINK, board_dir, load_qemu_board, qemu_command
    b = load_qemu_board("qemu-cortex-m55")
    m, x, ref = model_and_data(3)
    d = str(tmp_path)
    compile_mlf(m, d, target="c -mcpu=cortex-m55", **VARIANTS[variant])
    write_harness(d, variant, x, ref)
    common = board_dir("cortex_m")
    codegen = sorted(os.path.join(d, "codegen/host/src", s) for s in os.listdir(os.path.join(d, "codegen/host/src")))
    incs = ["-I", d, "-I", os.path.join(d, "codegen/host/include"), "-isystem", os.path.join(d, "runtime/include"),
            "-I", common]
    jobs = [(s, STRICT) for s in [os.path.join(d, "test.c"), *codegen, *(os.path.join(d, s) for s in RUNTIME_SRCS)]]
    jobs += [(os.path.join(CLIENTS, "harness/platform_qemu.c"), BOARD_CFLAGS),
             (os.path.join(common, "startup.c"), BOARD_CFLAGS), (os.path.join(common, "semihost.c"), BOARD_CFLAGS)]
    objs = []
    for k, (s, std) in enumerate(jobs):
        obj = os.path.join(d, f"{k}.o")
        r = subprocess.run([b["cc"], *std, *b["cflags"], "-O2", *incs, "-c", s, "-o", obj], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-4000:]
        objs.append(obj)
    elf = os.path.join(d, "test.elf")
    r = subprocess.run([b["cc"], *b["cflags"], "-O2", *LINK, "-L", board_dir("qemu-cortex-m55"), "-L", common,
                        "-T", "link.ld", *objs, *LIBS, "-o", elf], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run(qemu_command(b, elf), capture_output=True, text=True, timeout=300, cwd=d)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and SUCCESS in out, out[-2000:]


@pytest.mark.board
def test_zephyr_cmsisnn_like_cmake_project_on_m55(tmp_path):
    _cmake_project(tmp_path, "qemu-cortex-m55")


@pytest.mark.board
def test_cmsisnn_like_makefile_project_on_m55(tmp_path):
    _makefile_project(tmp_path, "qemu-cortex-m55")
