"""Every example script runs as given, on a machine without a GPU or an OpenCL platform: the host
C target by default, a GPU API only when asked for, and a clear message where it is missing."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPTS = ["examples/demo.py", "examples/python_api/te_vector_add.py", "examples/python_api/tir_vector_add.py",
           "examples/python_api/relay_quickstart.py", "examples/accelerators/vanilla/run.py"]


def _run(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=600)


def test_every_example_script_is_listed():
    found = set()
    for d, _, files in os.walk(os.path.join(ROOT, "examples")):
        for f in files:
            text = open(os.path.join(d, f)).read() if f.endswith(".py") else ""
            if "__main__" in text or "\nRun:" in text or f == "run.py" or f == "demo.py":
                found.add(os.path.relpath(os.path.join(d, f), ROOT))
    assert found <= set(SCRIPTS), sorted(found - set(SCRIPTS))


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs_with_its_defaults(tmp_path, script):
    args = [os.path.join(ROOT, script)] + ([str(tmp_path / "demo")] if script.endswith("demo.py") else [])
    r = _run(tmp_path, *args)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_te_vector_add_defaults_to_host_c(tmp_path):
    r = _run(tmp_path, os.path.join(ROOT, "examples/python_api/te_vector_add.py"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "c: vector add matches numpy" in r.stdout


def test_a_missing_gpu_api_is_named_not_a_traceback(tmp_path):
    import aot
    for script in ("examples/python_api/te_vector_add.py", "examples/python_api/relay_quickstart.py"):
        for api, dev in (("cuda", aot.cuda(0)), ("opencl", aot.opencl(0))):
            if dev.exist:
                continue
            r = _run(tmp_path, os.path.join(ROOT, script), api)
            assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
            assert f"error: no {api} device on this machine" in r.stderr and "host C target" in r.stderr
        r = _run(tmp_path, os.path.join(ROOT, script), "vulkan")
        assert r.returncode == 1 and "usage:" in r.stderr and "Traceback" not in r.stderr, r.stderr
