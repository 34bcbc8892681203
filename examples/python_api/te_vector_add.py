"""TVM's tensor-expression vector add, with aot.te: the size a te.var, split by 64, the halves bound
to blockIdx.x and threadIdx.x on a GPU target, its source printed, saved and reloaded, run and
checked. Only the imports differ from TVM's tutorial. Built for the host C target by default; pass
opencl (PoCL runs it on a CPU) or cuda for a GPU target, where the machine has one. The symbolic
size n comes from each call's arrays: the module serves every size (aot compiles each size it is
called with once, with n a constant, so loops and tails fold).

Run:  python examples/python_api/te_vector_add.py [c|opencl|cuda]
"""
import os
import sys
import tempfile

import numpy as np

import aot as tvm
from aot import te

tgt = sys.argv[1] if len(sys.argv) > 1 else "c"       # the host C target: no GPU or OpenCL needed
if tgt.split()[0] not in ("c", "opencl", "cuda"):
    sys.exit(f"usage: python {sys.argv[0]} [c|opencl|cuda] (not {tgt!r})")
dev = {"c": tvm.cpu(0), "opencl": tvm.opencl(0), "cuda": tvm.cuda(0)}[tgt.split()[0]]
if not dev.exist:       # asked for a GPU API this machine lacks: say so, before building for it
    sys.exit(f"error: no {tgt.split()[0]} device on this machine"
             + (" (OpenCL on a CPU: install PoCL)" if tgt.startswith("opencl") else "")
             + f"; run 'python {sys.argv[0]}' for the host C target")
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
s = te.create_schedule(C.op)
bx, tx = s[C].split(C.op.axis[0], factor=64)
if tgt != "c":
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
fadd = tvm.build(s, [A, B, C], target=tgt, name="myadd")

n = 1024
a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
fadd(a, b, c)
np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
print((fadd.imported_modules[0] if fadd.imported_modules else fadd).get_source()[:1200])

path = os.path.join(tempfile.mkdtemp(), "myadd.tar")
fadd.export_library(path)
fadd2 = tvm.runtime.load_module(path)          # still symbolic: any n
c2 = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
fadd2(a, b, c2)
np.testing.assert_allclose(c2.numpy(), a.numpy() + b.numpy())
print(f"{tgt}: vector add matches numpy, before and after export_library/load_module ({path})")
