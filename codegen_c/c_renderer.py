"""Loop IR -> C99 text. Renderers only print: every decision was made in the IRs above.

CRenderer is the one loop-nest printer. What differs between C-like dialects is data on the
class (function prefix, return type and value, restrict keyword, shared-memory prefix,
barrier, thread indices) and a few small hooks (literals, math function names, the header
of a loop of each kind), so a dialect (CUDA, OpenCL) is a short subclass that overrides
only those; see tinygrad's CStyleLanguage for the model.
"""
from __future__ import annotations

import math
import re

from aot.dtypes import C_TAGS as _TYPE_TAG
from aot.dtypes import C_TYPES
from aot.errors import AotError, InternalError
from aot.names import C_KEYWORDS
from aot.tir.expr import Bin, Call, Cast, Const, Load, Select, Unary, Var, walk
from aot.tir.intrin import get_intrin
from aot.tir.intrin import gemmlowp as fx
from aot.tir.simplify import simplify
from aot.tir.op import ExternCall
from aot.tir.stmt import AccessPtr, Allocate, BufferData, For, PrimFunc, StmtVisitor, Store, stmt_exprs, walk_stmts


F16_HELPERS = r"""/* float16 is stored as IEEE binary16 bits and computed in float */
static inline float aot_h2f(uint16_t h) {
  union { uint32_t u; float f; } v;
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16, exp = ((uint32_t)h >> 10) & 0x1Fu, mant = (uint32_t)h & 0x3FFu;
  if (exp == 0u) {
    if (mant == 0u) {
      v.u = sign;
    } else {
      exp = 113u;
      while ((mant & 0x400u) == 0u) {
        mant <<= 1;
        exp--;
      }
      v.u = sign | (exp << 23) | ((mant & 0x3FFu) << 13);
    }
  } else if (exp == 0x1Fu) {
    v.u = sign | 0x7F800000u | (mant << 13);
  } else {
    v.u = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  return v.f;
}
static inline uint16_t aot_f2h(float f) {
  union { float f; uint32_t u; } v;
  uint32_t sign, exp, mant, hv, rem;
  int32_t e;
  v.f = f;
  sign = (v.u >> 16) & 0x8000u;
  exp = (v.u >> 23) & 0xFFu;
  mant = v.u & 0x7FFFFFu;
  if (exp == 0xFFu) {
    return (uint16_t)(sign | 0x7C00u | (mant != 0u ? 0x200u : 0u));
  }
  e = (int32_t)exp - 112;
  if (e >= 31) {
    return (uint16_t)(sign | 0x7C00u);
  }
  if (e <= 0) {
    uint32_t shift, mid;
    if (e < -10) {
      return (uint16_t)sign;
    }
    mant |= 0x800000u;
    shift = (uint32_t)(14 - e);
    hv = mant >> shift;
    rem = mant & ((1u << shift) - 1u);
    mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (hv & 1u) != 0u)) {
      hv++;
    }
    return (uint16_t)(sign | hv);
  }
  hv = sign | ((uint32_t)e << 10) | (mant >> 13);
  rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (hv & 1u) != 0u)) {
    hv++;   /* a carry into the exponent is the correct rounding */
  }
  return (uint16_t)hv;
}"""


BF16_HELPERS = r"""/* bfloat16 is stored as the top 16 bits of a float and computed in float */
static inline float aot_bf2f(uint16_t h) {
  union { uint32_t u; float f; } v;
  v.u = (uint32_t)h << 16;
  return v.f;
}
static inline uint16_t aot_f2bf(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  if ((v.u & 0x7FFFFFFFu) > 0x7F800000u) {
    return (uint16_t)((v.u >> 16) | 0x40u);   /* NaN stays a quiet NaN */
  }
  return (uint16_t)((v.u + 0x7FFFu + ((v.u >> 16) & 1u)) >> 16);   /* round half to even */
}"""

HALF = {"float16": ("aot_h2f", "aot_f2h"), "bfloat16": ("aot_bf2f", "aot_f2bf")}   # dtype -> (load, store) helpers


class CRenderer(StmtVisitor):
    # -- dialect points: a dialect overrides these -----------------------------------------
    types = C_TYPES
    function_prefix = ""          # before the return type: "static", 'extern "C" __global__', "__kernel"
    return_type = "int32_t"       # generated kernels return a status to the executor ...
    return_value = "0"            # ... which is 0; None for a void kernel
    restrict = "restrict"         # the no-alias qualifier on pointer parameters ("" for none)
    shared_prefix = None          # the qualifier of a 'shared' allocation; None: the dialect has none
    barrier_text = None           # the statement a Barrier prints as; None: the dialect has no threads
    thread_indices: dict = {}     # thread tag (blockIdx.x ...) -> the expression that reads it
    helper_prefix = "static inline"   # what the small helper functions are declared with
    openmp = True                 # a 'parallel' loop runs on the host's threads (OpenMP, when compiled with it)
    rolled_hint = "#pragma GCC unroll 1"   # before a 'simd' loop (gcc and clang read it); None: nothing
    name = "C"

    def __init__(self):
        self.helpers = {}     # name -> C definition, collected while rendering

    def vtype(self, dtype: str) -> str:
        """The C type a value of `dtype` is computed in (storage may differ: float16)."""
        return "float" if dtype in HALF else self.types[dtype]

    # -- literals and names -----------------------------------------------------
    def float_literal(self, v: float, dtype: str) -> str:
        if math.isnan(v):
            return "((double)NAN)" if dtype == "float64" else "NAN"
        if math.isinf(v):
            return ("-" if v < 0 else "") + ("((double)INFINITY)" if dtype == "float64" else "INFINITY")
        s = f"{v:.17g}" if dtype == "float64" else f"{v:.9g}"
        if not re.search(r"[.eE]", s):
            s += ".0"
        return s + ("" if dtype == "float64" else "f")

    def int_literal(self, v: int, dtype: str) -> str:
        if dtype in ("int64", "uint64"):
            if v == -(1 << 63):
                return "(-INT64_C(9223372036854775807) - 1)"
            return f"INT64_C({v})" if dtype == "int64" else f"UINT64_C({v})"
        if dtype in ("int32",) and v == -(1 << 31):
            return "(-2147483647 - 1)"
        if dtype in ("uint32",):
            return f"{v}u"
        return str(v)

    def literal(self, c: Const) -> str:
        if c.dtype == "bool":
            return "1" if c.value else "0"
        if isinstance(c.value, float):
            return self.float_literal(c.value, c.dtype)
        return self.int_literal(c.value, c.dtype)

    def math_fn(self, fn: str, dtype: str) -> str:
        if fn == "isnan" or fn == "isinf":
            return fn
        return fn + ("" if dtype == "float64" else "f")

    # -- helpers ---------------------------------------------------------------
    def _helper(self, kind: str, dtype: str) -> str:
        t = self.vtype(dtype)
        name = f"aot_{kind}_{_TYPE_TAG[dtype]}"
        if name not in self.helpers:
            if dtype.startswith("uint") and kind in ("floordiv", "floormod"):
                kind = kind.replace("floor", "trunc")     # identical for unsigned values
            body = {
                "truncdiv": "return a / b;",
                "truncmod": "return a % b;",
                "max": "return a > b ? a : b;",
                "min": "return a < b ? a : b;",
                "floordiv": f"{t} q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;",
                "floormod": f"{t} r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;",
            }[kind]
            self.helpers[name] = f"static inline {t} {name}({t} a, {t} b) {{ {body} }}"
        return name

    def _fixed_point_helper(self, fn: str) -> str:
        """gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT on int32 (the
        exponent 0..31); `>>` on a negative value is the arithmetic shift gcc and clang define."""
        i32, i64, u32 = self.vtype("int32"), self.vtype("int64"), self.vtype("uint32")
        name = f"aot_{fn}"
        if name not in self.helpers:
            if fn == "srdhm":
                body = (f"{i64} ab = {fx.product('a', 'b', i64)}; "
                        f"return {fx.srdhm('a', 'b', fx.high_mul('ab', i32, i64), fx.INT32_LITERALS)};")
            else:
                body = (f"{i32} mask = {fx.low_mask('b', i32, u32, f'({u32})1')}; "
                        f"{i32} threshold = {fx.round_threshold('a')}; return {fx.rdbpot('a', 'b', 'threshold')};")
            self.helpers[name] = f"static inline {i32} {name}({i32} a, {i32} b) {{ {body} }}"
        return name

    def _fma_helper(self) -> str:
        """fmaf where the C library's is the FPU's fused multiply-add (C99's FP_FAST_FMAF, or
        ACLE's __ARM_FEATURE_FMA: newlib's math.h does not define the first); else the unfused
        a * b + c, never a library call per multiply-add (a Cortex-M4 built with soft float)."""
        name = "aot_fma_f32"
        if name not in self.helpers:
            self.helpers[name] = "\n".join([
                f"static inline float {name}(float a, float b, float c) {{",
                "#if defined(FP_FAST_FMAF) || defined(__ARM_FEATURE_FMA)",
                "  return fmaf(a, b, c);", "#else", "  return a * b + c;", "#endif", "}"])
        return name

    # -- expressions -------------------------------------------------------------
    def expr(self, e) -> str:
        if isinstance(e, Const):
            return self.literal(e)
        if isinstance(e, Var):
            return self.names[id(e)]
        if isinstance(e, Load):
            if id(e.buffer) in self.scalars:
                return self.names[id(e.buffer)]
            ref = f"{self.names[id(e.buffer)]}[{self.expr(e.index)}]"
            return self._from_storage(e.buffer, ref)
        if isinstance(e, Bin):
            if e.op in ("min", "max", "floordiv", "floormod"):
                return f"{self._helper(e.op, e.a.dtype)}({self.expr(e.a)}, {self.expr(e.b)})"
            return f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"
        if isinstance(e, Unary):
            return f"({ {'neg': '-', 'not': '!', 'bnot': '~'}[e.op] }{self.expr(e.a)})"
        if isinstance(e, Select):
            return f"({self.expr(e.cond)} ? {self.expr(e.t)} : {self.expr(e.f)})"
        if isinstance(e, Call):
            if e.fn in ("f16round", "bf16round"):
                to_f, to_h = self._half_helpers("float16" if e.fn == "f16round" else "bfloat16")
                return f"{to_f}({to_h}({self.expr(e.args[0])}))"
            if e.fn in ("isnan", "isinf"):
                return f"((uint8_t){e.fn}({self.expr(e.args[0])}))"
            if e.fn in ("srdhm", "rdbpot"):
                return f"{self._fixed_point_helper(e.fn)}(" + ", ".join(self.expr(a) for a in e.args) + ")"
            if e.fn == "fma" and e.dtype == "float32":
                return f"{self._fma_helper()}(" + ", ".join(self.expr(a) for a in e.args) + ")"
            it = get_intrin(e.fn)
            if it is not None:       # a tensorized micro-kernel: pointers to its operands' first elements
                name = f"aot_{e.fn}"
                if name not in self.helpers:
                    self.helpers[name] = "\n".join(x for x in (it.c_includes(), it.c_source()) if x)
                args = [f"&{self.expr(a)}" if k in it.pointer_args else self.expr(a) for k, a in enumerate(e.args)]
                return f"{name}(" + ", ".join(args) + ")"
            return f"{self.math_fn(e.fn, e.dtype)}(" + ", ".join(self.expr(a) for a in e.args) + ")"
        if isinstance(e, ExternCall):
            return self._extern_call(e)
        if isinstance(e, AccessPtr):
            ptr = self._buffer_name(e.buffer, "access_ptr")
            return f"(({self.types[e.buffer.dtype]}*){ptr} + {self.expr(e.offset)})"
        if isinstance(e, Cast):
            if e.dtype in HALF:   # a value rounded to 16-bit precision, kept as float
                to_f, to_h = self._half_helpers(e.dtype)
                return f"{to_f}({to_h}((float){self.expr(e.a)}))"
            return f"(({self.vtype(e.dtype)}){self.expr(e.a)})"
        raise InternalError(f"cannot render {type(e).__name__}")

    def _buffer_name(self, buf, what):
        if id(buf) not in self.names:
            raise AotError(f"{self.func_name}: {what} of buffer {buf.name}, which is not a parameter or allocation "
                           "of the function")
        return self.names[id(buf)]

    def _extern_call(self, e):
        """tir.call_extern (a UMA backend's TIR pass calling its accelerator, a tensor intrinsic):
        buffer pointers passed as the buffer's element type (an input's const dropped: the
        callee's C signature decides), other arguments as expressions. A function defined in the
        LLVM IR a pragma import_llvm links is declared here from the call (its C source is not C).
        tir.call_packed: see _packed_call."""
        if e.packed:
            return self._packed_call(e)
        args, types = [], []
        for a in e.args:
            if isinstance(a, BufferData):
                t = f"{self.types[a.buffer.dtype]}*"
                args.append(f"({t}){self._buffer_name(a.buffer, f'call_extern({e.name!r}) passes')}")
            else:
                t = f"{self.types[a.buffer.dtype]}*" if isinstance(a, AccessPtr) else self.vtype(a.dtype)
                args.append(self.expr(a))
            types.append(t)
        if e.name in getattr(self, "llvm_defs", ()):
            self.helpers[f"~extern {e.name}"] = \
                f"{self.vtype(e.dtype)} {e.name}({', '.join(types) or 'void'});"
        return f"{e.name}({', '.join(args)})"

    def _packed_call(self, e):
        """tir.call_packed: a call of aot_packed_call with the function's name and, per argument,
        a pointer (buffers), a value (scalars) and a kind ("float32[1024,128]", "int32", ...). The
        module that runs it in-process (aot/module.py) defines aot_packed_call, which hands the
        call to the function registered under that name (aot.register_func)."""
        if self.packed_mode != "in_process":
            raise AotError(f"{self.func_name}: tir.call_packed('{e.name}') needs the functions registered in a Python "
                           "process (aot.build's modules run there); generated C for a device has no packed-function "
                           "runtime: use tir.call_extern")
        ptrs, vals, kinds = [], [], []
        for a in e.args:
            if isinstance(a, BufferData):
                b = a.buffer
                ptrs.append(f"(void*){self._buffer_name(b, f'call_packed({e.name!r}) passes')}")
                vals.append("0.0")
                kinds.append(f'"{b.dtype}[{",".join(str(d) for d in b.shape)}]"')
            elif isinstance(a, AccessPtr):
                raise AotError(f"{self.func_name}: call_packed('{e.name}') passes an access_ptr of {a.buffer.name}; "
                               "a packed function takes whole buffers (pass the buffer)")
            else:
                ptrs.append("(void*)0")
                vals.append(f"(double){self.expr(a)}")
                kinds.append(f'"{a.dtype}"')
        self.helpers["~packed"] = ("int32_t aot_packed_call(const char* name, int32_t n, void* const* ptrs, "
                                   "const double* vals, const char* const* kinds);")
        if not ptrs:
            return f'aot_packed_call("{e.name}", 0, (void* const*)0, (const double*)0, (const char* const*)0)'
        return (f'aot_packed_call("{e.name}", {len(ptrs)}, (void* const[]){{{", ".join(ptrs)}}}, '
                f'(const double[]){{{", ".join(vals)}}}, (const char* const[]){{{", ".join(kinds)}}})')

    # -- statements: one visitor method per statement kind ----------------------------------
    def emit(self, text):
        self.lines.append("  " * self.indent + text)

    def block(self, s):
        self.indent += 1
        self.visit(s)
        self.indent -= 1

    def loop_header(self, s, var: str) -> list:
        """The lines that open loop s (closed by one "}"). Every kind prints as a C loop: 'unroll'
        and 'vectorize' are hints the C compiler acts on by itself, and a 'parallel' loop's
        iterations are independent, so running them in order is one valid schedule."""
        if s.kind == "thread_binding":
            expr = self.thread_indices.get(s.thread_tag)
            if expr is None:
                raise AotError(f"{self.func_name}: loop {s.var.name} is bound to {s.thread_tag}, "
                               f"but the {self.name} target has no GPU threads")
            used = any(x is s.var for e in stmt_exprs(s.body) for x in walk(e))
            return ["{", f"  const int32_t {var} = {expr};"] + ([] if used else [f"  (void){var};"])
        end = simplify(s.min + s.extent)
        hint = [self.rolled_hint] if s.kind == "simd" and self.rolled_hint else []
        return hint + [f"for (int32_t {var} = {self.expr(s.min)}; {var} < {self.expr(end)}; ++{var}) {{"]

    def visit_For(self, s):
        if s.kind == "parallel" and self.openmp and self.parallel_loop(s):
            return
        head = self.loop_header(s, self.names[id(s.var)])
        for line in head[:-1]:
            self.emit(line)
        self.emit(head[-1])
        self.block(s.body)
        self.emit("}")

    def parallel_loop(self, s) -> bool:
        """A 'parallel' loop as an OpenMP loop whose iteration is a call of the loop body made a
        static function of its own, taking the buffers as restrict pointers: OpenMP's outlined
        body would otherwise see the kernel's pointers through a shared struct, without restrict,
        and the C compiler would stop vectorising it. The pragma is read only under -fopenmp
        (_OPENMP), so the C stays plain C99 and the loop runs serially without it. False (the
        caller prints a plain loop) when the body uses a scalar local of the kernel."""
        inside = {id(x.buffer) for x in walk_stmts(s.body) if isinstance(x, Allocate)}
        bufs, seen = [], set()
        for b in _stored_buffers(s.body) + [x.buffer for e in stmt_exprs(s.body) for x in walk(e)
                                             if isinstance(x, Load)]:
            if id(b) not in inside and id(b) not in seen:
                seen.add(id(b))
                bufs.append(b)
        if any(id(b) in self.scalars for b in bufs):
            return False
        bound = {id(x.var) for x in walk_stmts(s.body) if isinstance(x, For)}
        free, seen = [s.var], {id(s.var)}
        for e in stmt_exprs(s.body):
            for x in walk(e):
                if isinstance(x, Var) and id(x) not in bound and id(x) not in seen:
                    seen.add(id(x))
                    free.append(x)
        params = {id(b): k for k, b in enumerate(self.func_params)}
        order = sorted(bufs, key=lambda b: params.get(id(b), len(params)))
        decl = []
        for b in order:
            const = "const " if params.get(id(b), self.num_inputs) < self.num_inputs else ""
            q = f" {self.restrict}" if self.restrict and (self.use_restrict or id(b) not in params) else ""
            decl.append(f"{const}{self.vtype(b.dtype) if b.scope == 'local' else self.types[b.dtype]}*{q} "
                        f"{self.names[id(b)]}")
        decl += [f"int32_t {self.names[id(v)]}" for v in free]
        name = f"{self.func_name}_parallel_{len(self.outlined)}"
        used = any(x is s.var for e in stmt_exprs(s.body) for x in walk(e))
        body = ([] if used else [f"  (void){self.names[id(s.var)]};"]) + self.stmt(s.body, 1)
        self.outlined.append("\n".join([f"static void {name}({', '.join(decl)}) {{"] + body + ["}"]) + "\n")
        var = self.names[id(s.var)]
        self.lines += ["#ifdef _OPENMP", "#pragma omp parallel for schedule(static)", "#endif"]
        self.emit(self.loop_header(s, var)[-1])
        args = [self.names[id(b)] for b in order] + [self.names[id(v)] for v in free]
        self.emit(f"  {name}({', '.join(args)});")
        self.emit("}")
        return True

    def visit_Store(self, s):
        if id(s.buffer) in self.scalars:
            self.emit(f"{self.names[id(s.buffer)]} = {self.expr(s.value)};")
        else:
            value = self._to_storage(s.buffer, self.expr(s.value))
            self.emit(f"{self.names[id(s.buffer)]}[{self.expr(s.index)}] = {value};")

    def visit_Allocate(self, s):
        b = s.buffer
        if b.scope == "shared":        # declared at the kernel's scope (function() does it)
            self.visit(s.body)
            return
        # a block of its own: unrolled copies of a body may allocate the same buffer
        self.emit("{")
        if id(b) in self.scalars:
            self.emit(f"  {self.vtype(b.dtype)} {self.names[id(b)]};")
        else:
            self.emit(f"  {self.vtype(b.dtype)} {self.names[id(b)]}[{b.size}];")
        self.block(s.body)
        self.emit("}")

    def shared_declarations(self, func: PrimFunc) -> list:
        """A block's shared buffers, declared at the kernel's outermost scope: OpenCL C allows
        __local variables nowhere else, and in CUDA it is where a reader looks for them."""
        lines = []
        for x in walk_stmts(func.body):
            if isinstance(x, Allocate) and x.buffer.scope == "shared":
                if self.shared_prefix is None:
                    raise AotError(f"{self.func_name}: {x.buffer.name} is in shared memory, which the {self.name} "
                                   "target lacks")
                b = x.buffer
                lines.append(f"  {self.shared_prefix} {self.vtype(b.dtype)} {self.names[id(b)]}[{b.size}];")
        return lines

    def visit_IfThenElse(self, s):
        self.emit(f"if ({self.expr(s.cond)}) {{")
        self.block(s.then)
        if s.else_ is not None:
            self.emit("} else {")
            self.block(s.else_)
        self.emit("}")

    def visit_Evaluate(self, s):
        self.emit(f"(void){self.expr(s.call)};")

    def visit_Barrier(self, s):
        if self.barrier_text is None:
            raise AotError(f"{self.func_name}: a barrier needs a target with GPU threads, not {self.name}")
        self.emit(self.barrier_text)

    def stmt(self, s, indent: int):
        """The lines of statement s at `indent`."""
        saved = getattr(self, "lines", None), getattr(self, "indent", 0)
        self.lines, self.indent = [], indent
        self.visit(s)
        lines = self.lines
        self.lines, self.indent = saved
        return lines

    def _half_helpers(self, dtype):
        if dtype == "float16":
            self.helpers["aot_f16"] = F16_HELPERS
        else:
            self.helpers["aot_bf16"] = BF16_HELPERS
        return HALF[dtype][0], HALF[dtype][1]

    def _from_storage(self, buf, ref):
        if buf.dtype in HALF and buf.scope != "local":
            return f"{self._half_helpers(buf.dtype)[0]}({ref})"
        return ref

    def _to_storage(self, buf, value):
        if buf.dtype in HALF and buf.scope != "local":
            return f"{self._half_helpers(buf.dtype)[1]}({value})"
        return value

    # -- functions -------------------------------------------------------------
    def _assign_names(self, func: PrimFunc):
        self.names, self.scalars, taken = {}, set(), set()

        def name(obj, base):
            base = re.sub(r"[^0-9A-Za-z_]", "_", base) or "v"
            if base[0].isdigit() or base in C_KEYWORDS:
                base = "v_" + base
            cand, k = base, 1
            while cand in taken:
                cand, k = f"{base}_{k}", k + 1
            taken.add(cand)
            self.names[id(obj)] = cand

        for b in func.params:
            name(b, b.name)

        class Names(StmtVisitor):
            def visit_For(v, s):
                name(s.var, s.var.name)
                v.generic(s)

            def visit_Allocate(v, s):
                name(s.buffer, s.buffer.name)
                if s.buffer.size == 1 and s.buffer.scope == "local":
                    self.scalars.add(id(s.buffer))
                v.generic(s)
        Names().visit(func.body)

    def param(self, buf, is_input: bool, restrict: bool) -> str:
        const = "const " if is_input else ""
        q = f" {self.restrict}" if restrict and self.restrict else ""
        return f"{const}{self.types[buf.dtype]}*{q} {self.names[id(buf)]}"

    def prologue(self, func: PrimFunc, restrict: bool) -> list:
        """Lines before the body (a dialect whose parameters are not typed pointers makes them here)."""
        return []

    def signature(self, func: PrimFunc, restrict: bool = True) -> str:
        params = [self.param(b, k < func.num_inputs, restrict) for k, b in enumerate(func.params)]
        prefix = f"{self.function_prefix} " if self.function_prefix else ""
        ret = self.return_type if self.return_value is not None else "void"
        return f"{prefix}{ret} {func.name}({', '.join(params) or 'void'})"

    def function(self, func: PrimFunc, restrict: bool = True) -> str:
        """The definition of func. restrict=False when the caller may pass one buffer twice."""
        self.func_name = func.name
        self.func_params, self.num_inputs, self.use_restrict = func.params, func.num_inputs, restrict
        self.packed_mode = func.attrs.get("call_packed")
        self.llvm_defs = {m for ll in func.attrs.get("import_llvm", ())
                          for m in re.findall(r'^define\b[^@\n]*@"?([A-Za-z_][A-Za-z0-9_]*)', str(ll), re.M)}
        self.outlined = []              # the bodies of parallel loops, as functions of their own
        self._assign_names(func)
        used = set()
        for e in stmt_exprs(func.body):
            for x in walk(e):
                if isinstance(x, Load):
                    used.add(id(x.buffer))
                elif isinstance(x, BufferData):      # passed to an external call
                    used.add(id(x.buffer))
        used.update(id(b) for b in _stored_buffers(func.body))
        lines = [self.signature(func, restrict) + " {"] + self.prologue(func, restrict) + \
            self.shared_declarations(func)
        for b in func.params:
            if id(b) not in used:
                lines.append(f"  (void){self.names[id(b)]};")
        lines.extend(self.stmt(func.body, 1))
        if self.return_value is not None:
            lines.append(f"  return {self.return_value};")
        lines.append("}")
        return "".join(f + "\n" for f in self.outlined) + "\n".join(lines) + "\n"

    def helper_definitions(self) -> str:
        text = "\n".join(self.helpers[k] for k in sorted(self.helpers))
        return text.replace("static inline ", self.helper_prefix + " ")

    def device_sources(self, mod, target, launches, bodies):
        """A GPU dialect's device code, for codegen_c/emit_gpu.py: ({MLF path: text}, the values
        its family's host template needs). launches: each kernel's first DeviceLaunch; bodies:
        the kernels as this renderer printed them; target: the target's text for comments."""
        raise AotError(f"{type(self).__name__} renders kernels for the host, not device code")


def _stored_buffers(s):
    return [x.buffer for x in walk_stmts(s) if isinstance(x, Store)]
