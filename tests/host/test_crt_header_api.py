"""runtime_c/include declares what TVM's standalone-CRT headers (513c2be) declare for a firmware over an
AOT MLF, each with a compatible type, value or layout; and the functions it defines behave as TVM's.

tests/host/data/crt_header_api.json pins one C probe per declaration (written by
`bench/tvm_header_api.py --pin`, from TVM's headers: the type, value or field offset TVM declares),
so that a checkout without TVM's mirror still checks that none regresses; where the mirror is
present the probes are also regenerated from TVM's headers and every one must hold."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_c import RUNTIME_DIR

ROOT = Path(__file__).resolve().parents[2]
PINNED = ROOT / "tests" / "host" / "data" / "crt_header_api.json"
INCLUDE_DIR = Path(RUNTIME_DIR) / "include"
SRC_DIR = Path(RUNTIME_DIR) / "src" / "runtime" / "crt"
TVM_GIT = ROOT.parent / ".mirror" / "apache+tvm" / "repo"
DLPACK_GIT = ROOT.parent / ".mirror" / "dmlc+dlpack" / "repo"
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _failures(header, probes, tmp_path):
    """{name: gcc's message} for each pinned probe of header that does not compile against ours."""
    lines, owner = ["#include <stdarg.h>", "#include <stddef.h>", f"#include <{header}>"], {}
    for p in probes:
        for ln in p["probe"].split("\n"):
            lines.append(ln)
            owner[len(lines)] = f"{p['kind']} {p['name']}"
    c = tmp_path / (re.sub(r"\W", "_", header) + ".c")
    c.write_text("\n".join(lines) + "\n")
    r = subprocess.run(["gcc", *STRICT, "-fsyntax-only", "-fmax-errors=0", "-I", str(INCLUDE_DIR), str(c)],
                       capture_output=True, text=True)
    if r.returncode == 0:
        return {}
    out = {}
    for m in re.finditer(r"^(.*?):(\d+):\d+: (?:fatal )?error: (.*)$", r.stderr, re.M):
        out.setdefault(owner.get(int(m.group(2)), f"{header} itself" if m.group(1) != str(c) else "?"),
                       m.group(3))
    return out or {"?": r.stderr.strip()}


def test_pinned_declarations_hold(tmp_path):
    pinned = json.loads(PINNED.read_text())["headers"]
    # the headers TVM's AOT clients include (the bench's CLIENT set), each with its declarations
    assert len(pinned) == 11 and sum(len(v) for v in pinned.values()) == 282
    bad = {}
    for header, probes in pinned.items():
        assert (INCLUDE_DIR / header).is_file(), header
        bad.update({f"{header}: {k}": v for k, v in _failures(header, probes, tmp_path).items()})
    assert not bad, "\n".join(f"{k}: {v}" for k, v in bad.items())


@pytest.mark.skipif(not (TVM_GIT / "HEAD").exists() or not (DLPACK_GIT / "HEAD").exists(),
                    reason="needs TVM's and dlpack's git mirrors")
def test_against_tvm_headers(tmp_path):
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "tvm_header_api.py"), "--tvm", str(TVM_GIT),
                        "--dlpack", str(DLPACK_GIT), "--json", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "probe error" not in r.stderr, r.stderr   # every probe holds against TVM's own header
    res = json.loads(out.read_text())
    present, headers, ok, total = res["totals"]["client"]
    assert (present, headers) == (11, 11) and ok == total and total >= 282, r.stdout


RUNTIME_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/module.h>
#include <tvm/runtime/crt/stack_allocator.h>

#define EXPECT(c) do { if (!(c)) { printf("FAIL %s:%d %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

static int add_one(TVMValue* a, int* t, int n, TVMValue* r, int* rt, void* h) {
  (void)t; (void)h; EXPECT(n == 1);
  r->v_int64 = a[0].v_int64 + 1; *rt = kTVMArgInt; return 0;
}
static int twice(TVMValue* a, int* t, int n, TVMValue* r, int* rt, void* h) {
  (void)t; (void)n; (void)h;
  r->v_int64 = a[0].v_int64 * 2; *rt = kTVMArgInt; return 0;
}
static int task(int id, TVMParallelGroupEnv* env, void* cdata) {
  (void)id; *(int*)cdata += env->num_task; return 0;
}
static int runs;
static int once(void* cdata) { (void)cdata; ++runs; return 0; }

/* a read-only registry as TVM's code generator lays one out: count, names, final NUL */
static const TVMBackendPackedCFunc funcs[] = {add_one, twice};

int main(void) {
  char names[32];
  uint16_t two = 2;
  TVMFuncRegistry reg;
  TVMModule mod;
  TVMModuleHandle mh;
  TVMFunctionHandle fh;
  TVMValue arg, ret;
  int code = kTVMArgInt, rcode = -1, sum = 0;
  tvm_function_index_t idx = 99;
  TVMBackendPackedCFunc f = NULL;
  TVMMutableFuncRegistry m;
  static uint8_t buf[64];
  static uint8_t tiny[4];
  static uint8_t ws_buf[256];
  tvm_workspace_t ws;
  void *p1, *p2, *p3;
  void* handle = NULL;

  memcpy(names, &two, 2);
  memcpy(names + 2, "add_one\0twice\0", 15);
  reg.names = names; reg.funcs = funcs;
  EXPECT(TVMFuncRegistry_GetNumFuncs(&reg) == 2);
  EXPECT(strcmp(TVMFuncRegistry_Get0thFunctionName(&reg), "add_one") == 0);
  EXPECT(TVMFuncRegistry_Lookup(&reg, "twice", &idx) == kTvmErrorNoError && idx == 1);
  EXPECT(TVMFuncRegistry_Lookup(&reg, "add", &idx) == kTvmErrorFunctionNameNotFound);
  EXPECT(TVMFuncRegistry_Lookup(&reg, "add_one_", &idx) == kTvmErrorFunctionNameNotFound);
  EXPECT(TVMFuncRegistry_GetByIndex(&reg, 1, &f) == kTvmErrorNoError && f == twice);
  EXPECT(TVMFuncRegistry_GetByIndex(&reg, 2, &f) == kTvmErrorFunctionIndexInvalid);

  EXPECT(TVMMutableFuncRegistry_Create(&m, tiny, sizeof tiny) == kTvmErrorBufferTooSmall);
  EXPECT(TVMMutableFuncRegistry_Create(&m, buf, sizeof buf) == kTvmErrorNoError);
  EXPECT(TVMFuncRegistry_GetNumFuncs(&m.registry) == 0 && m.max_functions >= 2);
  EXPECT(TVMMutableFuncRegistry_Set(&m, "a", add_one, 0) == kTvmErrorNoError);
  EXPECT(TVMMutableFuncRegistry_Set(&m, "bb", twice, 0) == kTvmErrorNoError);
  EXPECT(TVMMutableFuncRegistry_Set(&m, "a", twice, 0) == kTvmErrorFunctionAlreadyDefined);
  EXPECT(TVMMutableFuncRegistry_Set(&m, "a", twice, 1) == kTvmErrorNoError);
  EXPECT(TVMFuncRegistry_GetNumFuncs(&m.registry) == 2);
  EXPECT(TVMFuncRegistry_Lookup(&m.registry, "bb", &idx) == kTvmErrorNoError && idx == 1);
  EXPECT(TVMFuncRegistry_GetByIndex(&m.registry, 0, &f) == kTvmErrorNoError && f == twice);
  {   /* fill it: a full registry says so, and keeps what it has */
    char name[16];
    int i, err = kTvmErrorNoError;
    for (i = 0; i < 100 && err == kTvmErrorNoError; ++i) {
      sprintf(name, "f%d", i);
      err = TVMMutableFuncRegistry_Set(&m, name, add_one, 0);
    }
    EXPECT(err == kTvmErrorFunctionRegistryFull);
    EXPECT(TVMFuncRegistry_Lookup(&m.registry, "bb", &idx) == kTvmErrorNoError && idx == 1);
  }

  EXPECT(TVMInitializeRuntime() == kTvmErrorNoError);
  mod.registry = &reg;
  EXPECT(TVMModCreateFromCModule(&mod, &mh) == 0);
  EXPECT(TVMModGetFunction(mh, "twice", 0, &fh) == 0);
  EXPECT(TVMModGetFunction(mh, "nope", 0, &fh) != 0);
  EXPECT(TVMModGetFunction(mh, "add_one", 0, &fh) == 0);
  arg.v_int64 = 41;
  EXPECT(TVMFuncCall(fh, &arg, &code, 1, &ret, &rcode) == 0 && ret.v_int64 == 42 && rcode == kTVMArgInt);
  EXPECT(TVMFuncCall(NULL, &arg, &code, 1, &ret, &rcode) != 0);
  EXPECT(TVMFuncFree(fh) == 0 && TVMModFree(mh) == 0);
  EXPECT(TVMFuncRegisterGlobal("g.twice", (TVMFunctionHandle)(uintptr_t)twice, 0) == 0);
  EXPECT(TVMFuncRegisterGlobal("g.twice", (TVMFunctionHandle)(uintptr_t)twice, 0) != 0);
  EXPECT(TVMFuncGetGlobal("g.twice", &fh) == 0);
  arg.v_int64 = 21;
  EXPECT(TVMFuncCall(fh, &arg, &code, 1, &ret, &rcode) == 0 && ret.v_int64 == 42);
  EXPECT(TVMFuncGetGlobal("g.none", &fh) != 0 && strlen(TVMGetLastError()) > 0);
  EXPECT(TVMSynchronize(kDLCPU, 0, NULL) == 0 && TVMSynchronize(kDLCUDA, 0, NULL) != 0);

  EXPECT(TVMBackendParallelLaunch(task, &sum, 4) == 0 && sum == 1);
  EXPECT(TVMBackendParallelBarrier(0, NULL) == 0);
  EXPECT(TVMBackendRunOnce(&handle, once, NULL, 0) == 0 && TVMBackendRunOnce(&handle, once, NULL, 0) == 0);
  EXPECT(runs == 1);

  EXPECT(StackMemoryManager_Init(&ws, ws_buf, sizeof ws_buf) == kTvmErrorNoError);
  EXPECT(StackMemoryManager_Allocate_Body(&ws, 10, &p1, 0) == kTvmErrorNoError);
  EXPECT(StackMemoryManager_Allocate_Body(&ws, 10, &p2, 1) == kTvmErrorNoError);
  EXPECT(StackMemoryManager_Allocate(&ws, 10, &p3) == kTvmErrorNoError);
  EXPECT(StackMemoryManager_Free_Body(&ws, p1, 1) == kTvmErrorPlatformStackAllocBadFree);
  EXPECT(StackMemoryManager_Free_Body(&ws, p2, 0) == kTvmErrorNoError);   /* p2 and p3 go */
  EXPECT(ws.next_alloc == (uint8_t*)p2);
  EXPECT(StackMemoryManager_Free(&ws, p1) == kTvmErrorNoError && ws.next_alloc == ws.workspace);
  EXPECT(StackMemoryManager_Free_Body(&ws, ws_buf + 300 - 300, 0) == kTvmErrorPlatformStackAllocBadFree);
  puts("OK");
  return 0;
}
"""
PLATFORM = r"""
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <tvm/runtime/crt/platform.h>
void TVMPlatformAbort(tvm_crt_error_t code) { (void)code; abort(); }
tvm_crt_error_t TVMPlatformMemoryAllocate(size_t n, DLDevice d, void** p) { (void)n; (void)d; *p = NULL; return kTvmErrorPlatformNoMemory; }
tvm_crt_error_t TVMPlatformMemoryFree(void* p, DLDevice d) { (void)p; (void)d; return kTvmErrorNoError; }
void TVMLogf(const char* fmt, ...) { va_list a; va_start(a, fmt); vprintf(fmt, a); va_end(a); }
"""


def test_runtime_functions_behave(tmp_path):
    """The functions runtime/src defines for the headers above, strict and under ASan + UBSan."""
    (tmp_path / "t.c").write_text(RUNTIME_PROGRAM)
    (tmp_path / "platform.c").write_text(PLATFORM)
    srcs = [str(p) for p in sorted(SRC_DIR.glob("*/*.c"))]
    exe = tmp_path / "t"
    cmd = ["gcc", *STRICT, "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
           "-I", str(INCLUDE_DIR), str(tmp_path / "t.c"), str(tmp_path / "platform.c"), *srcs, "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr
