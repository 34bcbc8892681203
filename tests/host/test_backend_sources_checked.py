"""A plug-in backend's C sources are compiled once at `aot compile` (syntax only, with the flags the
target's build uses): a broken source is refused there, naming the backend, the file and the
compiler's first error, instead of passing compile and failing at `aot run` as an internal error."""
import os
import shutil
import subprocess
import sys

import onnx
import pytest

from conftest import ROOT
from test_uma import EXAMPLES, conv_model


def _backend(tmp_path, c_text):
    """The vanilla example backend, copied with `c_text` as its vanilla.c."""
    d = tmp_path / "vanilla"
    shutil.copytree(os.path.join(EXAMPLES, "vanilla"), d, dirs_exist_ok=True)
    (d / "src" / "vanilla.c").write_text(c_text)
    return str(d / "backend.py")


def _compile(tmp_path, backend, target="vanilla_accelerator, c", env=None):
    onnx.save(conv_model(), str(tmp_path / "m.onnx"))
    return subprocess.run([sys.executable, "-m", "aot", "compile", "m.onnx", "-o", "out.tar", "--backend", backend,
                           "--target", target], capture_output=True, text=True,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT, **(env or {})))


def _refused(r, tmp_path, *needles):
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)
    assert not (tmp_path / "out.tar").exists()
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f or f.startswith(".out.tar")]


GOOD = open(os.path.join(EXAMPLES, "vanilla", "src", "vanilla.c")).read()


def test_a_syntax_error_is_refused_at_compile(tmp_path):
    broken = GOOD.replace("int o, y, x, c, ky, kx;", "int o, y, x, c, ky, kx")
    r = _compile(tmp_path, _backend(tmp_path, broken))
    _refused(r, tmp_path, "backend 'vanilla_accelerator'", "'vanilla.c'", "does not compile for target 'c'",
             "vanilla.c:", "error:")


def test_the_builds_warnings_are_errors_too(tmp_path):
    """The host build compiles the model with -Wall -Wextra -Werror -pedantic: so does the check."""
    unused = GOOD.replace("static int fits(", "static int unused_helper(int v) { return 0; }\nstatic int fits(")
    r = _compile(tmp_path, _backend(tmp_path, unused))
    _refused(r, tmp_path, "backend 'vanilla_accelerator'", "'vanilla.c'", "-Werror", "unused")


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no Arm embedded toolchain")
def test_a_cortex_m_target_checks_with_the_boards_compiler(tmp_path):
    """Host-only code (a header the bare-metal C library lacks) passes the host but not the M4's build."""
    host_only = "#include <sys/mman.h>\n" + GOOD
    r = _compile(tmp_path, _backend(tmp_path, host_only))
    assert r.returncode == 0, r.stderr
    os.remove(tmp_path / "out.tar")
    r = _compile(tmp_path, _backend(tmp_path, host_only), "vanilla_accelerator, c -mcpu=cortex-m4")
    _refused(r, tmp_path, "backend 'vanilla_accelerator'", "target 'c -mcpu=cortex-m4'", "arm-none-eabi-gcc",
             "-mcpu=cortex-m4", "sys/mman.h")


def test_no_compiler_is_a_warning_not_a_silent_skip(tmp_path):
    broken = GOOD.replace("int o, y, x, c, ky, kx;", "int o, y, x, c, ky, kx")
    r = _compile(tmp_path, _backend(tmp_path, broken), env={"CC": "/nonexistent/cc"})
    assert r.returncode == 0, r.stderr
    assert "warning: C compiler '/nonexistent/cc' not found" in r.stderr and "'vanilla.c'" in r.stderr
    assert (tmp_path / "out.tar").exists()


def test_a_good_backend_compiles_quietly(tmp_path):
    r = _compile(tmp_path, os.path.join(EXAMPLES, "vanilla", "backend.py"))
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    assert (tmp_path / "out.tar").exists()
