"""The cycle model's QEMU plugin (boards/cortex_m/qemu_cycles_plugin.c) is host C that QEMU loads
into its own process: warning-free under gcc and clang, and clean under cppcheck and the
clang-analyzer checks."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "boards", "cortex_m", "qemu_cycles_plugin.c")


def _header_dir():
    from aot.cycles import plugin_header
    from aot.errors import AotError
    if shutil.which("qemu-system-arm") is None and not os.environ.get("AOT_QEMU_PLUGIN_H"):
        return None
    try:
        return os.path.dirname(plugin_header())
    except AotError:
        return None


HDR = _header_dir()
if HDR is None and os.environ.get("AOT_REQUIRE_STATIC") == "1" and shutil.which("qemu-system-arm"):
    raise RuntimeError("AOT_REQUIRE_STATIC=1 but qemu-plugin.h is missing (python -m aot.cycles --fetch-header)")
pytestmark = [pytest.mark.static, pytest.mark.skipif(HDR is None, reason="qemu-plugin.h not fetched")]


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_plugin_builds_warning_free(cc, tmp_path):
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed")
    from aot.cycles import PLUGIN_CFLAGS
    r = subprocess.run([cc, *PLUGIN_CFLAGS, "-Wshadow", "-Wconversion", "-Wno-sign-conversion", "-I", HDR, SRC,
                        "-o", str(tmp_path / "p.so")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_plugin_passes_cppcheck_and_clang_analyzer():
    for tool in ("cppcheck", "clang-tidy"):
        if shutil.which(tool) is None:
            if os.environ.get("AOT_REQUIRE_STATIC") == "1":
                raise RuntimeError(f"{tool} missing")
            pytest.skip(f"{tool} not installed")
    r = subprocess.run(["cppcheck", "-q", "--enable=warning,style,portability,performance", "--std=c11",
                        "--error-exitcode=1", "--suppress=missingIncludeSystem", "-I", HDR, SRC],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + r.stdout
    r = subprocess.run(["clang-tidy", "-quiet", SRC,
                        "--checks=-*,clang-analyzer-*,bugprone-*,-bugprone-easily-swappable-parameters,"
                        "-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling",
                        "--warnings-as-errors=*", "--", "-std=gnu11", "-I", HDR], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:]
