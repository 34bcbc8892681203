"""OpenCL C: the C renderer with OpenCL's kernel prefix, address spaces, barrier and work-item
indices. A buffer parameter is a (cl_mem, byte offset) pair, because OpenCL 1.2 cannot pass a
pointer into the middle of a buffer; the kernel's first lines make the typed pointers."""
from __future__ import annotations

from .c_renderer import CRenderer

# the fixed-width names the generated code uses, in OpenCL C's own types
PREAMBLE = """typedef char int8_t;
typedef uchar uint8_t;
typedef short int16_t;
typedef ushort uint16_t;
typedef int int32_t;
typedef uint uint32_t;
typedef long int64_t;
typedef ulong uint64_t;
#define INT64_C(x) (x##L)
#define UINT64_C(x) (x##UL)
"""
FP64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"


class OpenCLRenderer(CRenderer):
    name = "OpenCL"
    function_prefix = "__kernel"
    return_value = None
    restrict = "restrict"
    shared_prefix = "__local"
    barrier_text = "barrier(CLK_LOCAL_MEM_FENCE);"
    openmp = False
    thread_indices = {f"{k}.{a}": f"(int32_t){fn}({d})" for k, fn in (("blockIdx", "get_group_id"),
                                                                      ("threadIdx", "get_local_id"))
                      for a, d in zip("xyz", "012")}

    def math_fn(self, fn, dtype):
        # overloaded by type (exp, not expf); rint rounds half to even as C's nearbyint does
        return {"nearbyint": "rint"}.get(fn, fn)

    def param(self, buf, is_input, restrict):
        name = self.names[id(buf)]
        return f"__global {'const ' if is_input else ''}uchar* {name}_base, uint {name}_off"

    def prologue(self, func, restrict):
        lines = []
        for k, b in enumerate(func.params):
            const = "const " if k < func.num_inputs else ""
            q = f" {self.restrict}" if restrict else ""
            name = self.names[id(b)]
            lines.append(f"  __global {const}{self.types[b.dtype]}*{q} {name} = "
                         f"(__global {const}{self.types[b.dtype]}*)({name}_base + {name}_off);")
        return lines
