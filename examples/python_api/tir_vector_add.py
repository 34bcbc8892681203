"""TVM's TensorIR tutorial, with aot: a vector add written in TVMScript, printed as script,
scheduled with tir.Schedule (split, reorder), built for C and run. Only the imports differ.

Run:  python examples/python_api/tir_vector_add.py
"""
import numpy as np

import aot as tvm
from aot import tir
from aot.script import tir as T


@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        A = T.match_buffer(a, (8,), dtype="float32")
        B = T.match_buffer(b, (8,), dtype="float32")
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + 1.0


print(MyModule.script())
sch = tir.Schedule(MyModule)
block_b = sch.get_block("B")
(i,) = sch.get_loops(block_b)
i_0, i_1 = sch.split(i, factors=[2, 4])
sch.reorder(i_1, i_0)
print(sch.mod.script())
mod = tvm.build(sch.mod, target="c")
a = tvm.nd.array(np.arange(8).astype("float32"))
b = tvm.nd.array(np.zeros((8,)).astype("float32"))
mod(a, b)
assert np.array_equal(b.numpy(), np.arange(8) + 1.0)
print("vector add after split/reorder:", b.numpy())
