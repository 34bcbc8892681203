"""The MLF as firmware sees it: a bare-metal-style C client built against the tarball."""
import io
import os
import subprocess
import tarfile

import numpy as np
import pytest
from onnx import helper

from conftest import init, make_model, ort_run, vi

RNG = np.random.default_rng(3)
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]

CLIENT = r"""
/* Written the way TVM's AOT demos are: fill the structs, call run. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "tvmgen_{mod}.h"
#include "input_data.h"

static float input_buf[TVMGEN_{MOD}_X_SIZE / sizeof(float)];
static float output_buf[TVMGEN_{MOD}_Y_SIZE / sizeof(float)];

int main(void) {{
  struct tvmgen_{mod}_inputs inputs;
  struct tvmgen_{mod}_outputs outputs;
  size_t i;
  int32_t ret;
  memcpy(input_buf, input_data, sizeof input_buf);
  inputs.x = input_buf;
  outputs.y = output_buf;
  ret = tvmgen_{mod}_run(&inputs, &outputs);
  if (ret != 0) {{
    return 1;
  }}
  for (i = 0; i < sizeof output_buf / sizeof output_buf[0]; ++i) {{
    printf("%.9g\n", (double)output_buf[i]);
  }}
  return 0;
}}
"""


def small_cnn(seed=0):
    r = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=4),
             helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["l"], transB=1),
             helper.make_node("Softmax", ["l"], ["y"])]
    inits = [init("w1", r.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3), init("b1", r.standard_normal(8).astype(np.float32)),
             init("w2", r.standard_normal((8, 2, 3, 3)).astype(np.float32) * 0.3),
             init("wf", r.standard_normal((10, 8)).astype(np.float32)), init("bf", r.standard_normal(10).astype(np.float32))]
    return make_model(nodes, [vi("x", [1, 3, 16, 16])], [vi("y", [1, 10])], inits)


def extract(tar_bytes, dest):
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as t:
        t.extractall(dest, filter="data")


def write_client(d, mod, x):
    with open(os.path.join(d, "input_data.h"), "w") as f:
        f.write("static const float input_data[] = {" + ", ".join(f"{v:.9g}" for v in x.ravel()) + "};\n")
    with open(os.path.join(d, "client.c"), "w") as f:
        f.write(CLIENT.format(mod=mod, MOD=mod.upper()))


def build(cc, d, mlf_dirs, extra=(), out="client"):
    srcs = [os.path.join(d, "client.c")]
    incs = ["-I", d]
    for m in mlf_dirs:
        srcs += sorted(os.path.join(m, "codegen/host/src", s) for s in os.listdir(os.path.join(m, "codegen/host/src")))
        incs += ["-I", os.path.join(m, "codegen/host/include"), "-I", os.path.join(m, "runtime/include")]
    exe = os.path.join(d, out)
    subprocess.run([cc, *STRICT, *extra, *incs, *srcs, "-o", exe, "-lm"], check=True, capture_output=True, text=True)
    r = subprocess.run([exe], check=True, capture_output=True, text=True)
    return np.array([float(v) for v in r.stdout.split()], np.float32)


@pytest.mark.parametrize("cc,extra", [
    ("gcc", ["-O2"]), ("clang", ["-O2"]),
    ("gcc", ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-DTVMGEN_DEFAULT_WORKSPACE_ATTRIBUTE=__attribute__((aligned(16)))"]),
])
def test_bare_metal_client(tmp_path, cc, extra):
    import aot
    m = small_cnn()
    x = RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)
    ref = ort_run(m, {"x": x})["y"]
    extract(aot.compile(m.SerializeToString()).tar, tmp_path / "mlf")
    write_client(str(tmp_path), "default", x)
    got = build(cc, str(tmp_path), [str(tmp_path / "mlf")], extra)
    np.testing.assert_allclose(got, ref.ravel(), rtol=1e-5, atol=1e-6)


def test_runtime_sources_compile_strictly(tmp_path):
    import aot
    extract(aot.compile(small_cnn().SerializeToString()).tar, tmp_path)
    for cc in ("gcc", "clang"):
        for src in ("memory/stack_allocator.c", "common/crt_backend_api.c"):
            subprocess.run([cc, *STRICT, "-I", str(tmp_path / "runtime/include"), "-c", str(tmp_path / "runtime/src/runtime/crt" / src),
                            "-o", str(tmp_path / "runtime.o")], check=True)


def test_two_models_link_into_one_program(tmp_path):
    import aot
    ma, mb = small_cnn(1), small_cnn(2)
    x = RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)
    extract(aot.compile(ma.SerializeToString(), model_name="net_a").tar, tmp_path / "a")
    extract(aot.compile(mb.SerializeToString(), model_name="Net.B").tar, tmp_path / "b")   # sanitised to net_b
    with open(tmp_path / "input_data.h", "w") as f:
        f.write("static const float input_data[] = {" + ", ".join(f"{v:.9g}" for v in x.ravel()) + "};\n")
    client = r"""
#include <stdio.h>
#include <string.h>
#include "tvmgen_net_a.h"
#include "tvmgen_net_b.h"
#include "input_data.h"
static float in[TVMGEN_NET_A_X_SIZE / 4], out_a[TVMGEN_NET_A_Y_SIZE / 4], out_b[TVMGEN_NET_B_Y_SIZE / 4];
int main(void) {
  struct tvmgen_net_a_inputs ia; struct tvmgen_net_a_outputs oa;
  struct tvmgen_net_b_inputs ib; struct tvmgen_net_b_outputs ob;
  size_t i;
  memcpy(in, input_data, sizeof in);
  ia.x = in; oa.y = out_a; ib.x = in; ob.y = out_b;
  if (tvmgen_net_a_run(&ia, &oa) != 0 || tvmgen_net_b_run(&ib, &ob) != 0) return 1;
  for (i = 0; i < 10; ++i) printf("%.9g\n", (double)out_a[i]);
  for (i = 0; i < 10; ++i) printf("%.9g\n", (double)out_b[i]);
  return 0;
}
"""
    with open(tmp_path / "client.c", "w") as f:
        f.write(client)
    got = build("gcc", str(tmp_path), [str(tmp_path / "a"), str(tmp_path / "b")])
    np.testing.assert_allclose(got[:10], ort_run(ma, {"x": x})["y"].ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[10:], ort_run(mb, {"x": x})["y"].ravel(), rtol=1e-5, atol=1e-6)


def test_header_interface_parses_as_tvm_declares_it(tmp_path):
    """pycparser reads the preprocessed header: structs of void* members and the run signature."""
    import aot
    from pycparser import c_ast, c_parser
    extract(aot.compile(small_cnn().SerializeToString()).tar, tmp_path)
    hdr = (tmp_path / "codegen/host/include/tvmgen_default.h").read_text()
    pre = subprocess.run(["gcc", "-E", "-P", "-std=c99", "-"], input=hdr.replace("#include <stdint.h>", "typedef int int32_t;"),
                         capture_output=True, text=True, check=True).stdout
    ast = c_parser.CParser().parse(pre)
    structs = {n.type.name: n.type for n in ast.ext if isinstance(n, c_ast.Decl) and isinstance(n.type, c_ast.Struct)}
    for sname, member in (("tvmgen_default_inputs", "x"), ("tvmgen_default_outputs", "y")):
        decls = structs[sname].decls
        assert [d.name for d in decls] == [member]
        assert isinstance(decls[0].type, c_ast.PtrDecl) and decls[0].type.type.type.names == ["void"]
    run = [n for n in ast.ext if isinstance(n, c_ast.Decl) and n.name == "tvmgen_default_run"][0]
    assert [p.type.type.type.name for p in run.type.args.params] == ["tvmgen_default_inputs", "tvmgen_default_outputs"]
    assert "#define TVMGEN_DEFAULT_X_SIZE 3072" in hdr and "#define TVMGEN_DEFAULT_Y_SIZE 40" in hdr
    assert "#define TVMGEN_DEFAULT_WORKSPACE_SIZE " in hdr
