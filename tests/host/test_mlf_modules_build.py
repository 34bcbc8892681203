"""An MLF of two modules (TVM's export of a list of relay.build results) builds as one program, as
a TVM user links it: every C file of codegen/host/src, both headers, no symbol clash; each module
computes what numpy does. `aot run --module` runs one of them."""
import subprocess
import sys
import tarfile

import numpy as np

import aot as tvm
from aot import micro, relay
from aot.relay.backend import Executor, Runtime

CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def _factory(name, k):
    x = relay.var("x", shape=(4,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.nn.relu(x) * relay.const(np.float32(k)))
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="c", executor=Executor("aot", {"unpacked-api": True, "interface-api": "c"}),
                           runtime=Runtime("crt"), mod_name=name)


MAIN = r"""
#include <stdio.h>
#include "tvmgen_mod1.h"
#include "tvmgen_mod2.h"
int main(void) {
  float x[4] = {-1.5f, 0.0f, 2.0f, 3.25f}, y1[4], y2[4];
  struct tvmgen_mod1_inputs i1 = {x};
  struct tvmgen_mod1_outputs o1 = {y1};
  struct tvmgen_mod2_inputs i2 = {x};
  struct tvmgen_mod2_outputs o2 = {y2};
  if (tvmgen_mod1_run(&i1, &o1) != 0 || tvmgen_mod2_run(&i2, &o2) != 0) return 1;
  for (int k = 0; k < 4; ++k) printf("%.9g %.9g\n", (double)y1[k], (double)y2[k]);
  return 0;
}
"""


def test_two_modules_link_into_one_program(tmp_path):
    tar = micro.export_model_library_format([_factory("mod1", 2.0), _factory("mod2", 3.0)], tmp_path / "lib.tar")
    out = tmp_path / "x"
    with tarfile.open(tar) as t:
        t.extractall(out)
    (tmp_path / "main.c").write_text(MAIN)
    srcs = sorted(str(p) for p in (out / "codegen/host/src").glob("*.c"))
    assert [p.rsplit("/", 1)[1] for p in srcs] == ["mod1_lib0.c", "mod1_lib1.c", "mod2_lib0.c", "mod2_lib1.c"]
    subprocess.run(["gcc", *CFLAGS, "-I", str(out / "codegen/host/include"), "-I", str(out / "runtime/include"),
                    *srcs, str(tmp_path / "main.c"), "-o", str(tmp_path / "prog"), "-lm"], check=True)
    got = np.array([[float(v) for v in line.split()] for line in
                    subprocess.run([str(tmp_path / "prog")], check=True, capture_output=True,
                                   text=True).stdout.splitlines()], dtype=np.float32)
    x = np.array([-1.5, 0.0, 2.0, 3.25], dtype=np.float32)
    np.testing.assert_array_equal(got[:, 0], np.maximum(x, 0) * np.float32(2))
    np.testing.assert_array_equal(got[:, 1], np.maximum(x, 0) * np.float32(3))


def test_aot_run_module_runs_the_module_named(tmp_path):
    tar = micro.export_model_library_format([_factory("mod1", 2.0), _factory("mod2", 3.0)], tmp_path / "lib.tar")
    x = np.array([-1.5, 0.0, 2.0, 3.25], dtype=np.float32)
    np.savez(tmp_path / "in.npz", x=x)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "aot", "run", str(tar), "--inputs", str(tmp_path / "in.npz"),
                               *args], capture_output=True, text=True)
    r = run("--outputs", str(tmp_path / "out.npz"))
    assert r.returncode == 2 and r.stderr == ("error: the MLF holds 2 modules (mod1, mod2): name the one to use "
                                              "(--module NAME; mlf.select_module in Python)\n")
    assert not (tmp_path / "out.npz").exists()
    r = run("--module", "mod2", "--outputs", str(tmp_path / "out.npz"))
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["output"], np.maximum(x, 0) * np.float32(3))
    before = tar.read_bytes() if hasattr(tar, "read_bytes") else open(tar, "rb").read()
    r = run("--module", "mod1", "--outputs", str(tar))
    assert r.returncode == 2 and "is the MLF itself" in r.stderr
    assert open(tar, "rb").read() == before
