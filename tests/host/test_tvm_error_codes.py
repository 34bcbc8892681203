"""runtime_c's crt/error_codes.h against Apache TVM's (513c2be): every enumerator, its value and type.

The table below is TVM's header read by hand (category << 8 | index; the system-error mask is the
int sign bit), so that a checkout without TVM's mirror still checks; where the mirror is present the
values also come from compiling TVM's own header."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from runtime_c import RUNTIME_DIR


ROOT = Path(__file__).resolve().parents[2]
TVM_GIT = ROOT.parent / ".mirror" / "apache+tvm" / "repo"
TVM_REF = "513c2be"
INCLUDE_DIR = Path(RUNTIME_DIR) / "include"
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
INT_MIN = -(2 ** 31)

CATEGORIES = {
    "kTvmErrorCategoryFunctionRegistry": 1, "kTvmErrorCategoryFraming": 2,
    "kTvmErrorCategoryWriteStream": 3, "kTvmErrorCategorySession": 4, "kTvmErrorCategoryPlatform": 5,
    "kTvmErrorCategoryGenerated": 6, "kTvmErrorCategoryExecutor": 7, "kTvmErrorCategoryFunctionCall": 8,
    "kTvmErrorCategoryTimeEvaluator": 9,
}
ERRORS = {
    "kTvmErrorNoError": 0,
    "kTvmErrorFunctionNameNotFound": 0x100, "kTvmErrorFunctionIndexInvalid": 0x101,
    "kTvmErrorFunctionRegistryFull": 0x102, "kTvmErrorFunctionAlreadyDefined": 0x103,
    "kTvmErrorBufferTooSmall": 0x104,
    "kTvmErrorFramingInvalidState": 0x200, "kTvmErrorFramingShortPacket": 0x201,
    "kTvmErrorFramingInvalidEscape": 0x202, "kTvmErrorFramingPayloadOverflow": 0x203,
    "kTvmErrorFramingPayloadIncomplete": 0x204,
    "kTvmErrorWriteStreamShortWrite": 0x300, "kTvmErrorWriteStreamLongWrite": 0x301,
    "kTvmErrorSessionInvalidState": 0x400, "kTvmErrorSessionReceiveBufferBusy": 0x401,
    "kTvmErrorSessionReceiveBufferShortWrite": 0x402,
    "kTvmErrorPlatformCheckFailure": 0x500, "kTvmErrorPlatformMemoryManagerInitialized": 0x501,
    "kTvmErrorPlatformShutdown": 0x502, "kTvmErrorPlatformNoMemory": 0x503,
    "kTvmErrorPlatformTimerBadState": 0x504, "kTvmErrorPlatformStackAllocBadFree": 0x505,
    "kTvmErrorGeneratedInvalidStorageId": 0x600,
    "kTvmErrorExecutorModuleAlreadyCreated": 0x700, "kTvmErrorExecutorModuleBadContext": 0x701,
    "kTvmErrorExecutorModuleNoSuchInput": 0x702,
    "kTvmErrorFunctionCallNumArguments": 0x800, "kTvmErrorFunctionCallWrongArgType": 0x801,
    "kTvmErrorFunctionCallNotImplemented": 0x802, "kTvmErrorFunctionCallInvalidArg": 0x803,
    "kTvmErrorTimeEvaluatorBadHandle": 0x900,
    "kTvmErrorSystemErrorMask": INT_MIN,
}
MACROS = {"TVM_CRT_ERROR_CATEGORY_Pos": 8, "TVM_CRT_ERROR_CATEGORY_Msk": 0xff00,
          "TVM_CRT_ERROR_CODE_Pos": 0, "TVM_CRT_ERROR_CODE_Msk": 0xff}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _program(names, checks=""):
    body = "\n".join(f'  printf("%s %ld\\n", "{n}", (long){n});' for n in names)
    return ("#include <stdio.h>\n#include <tvm/runtime/crt/error_codes.h>\n" + checks +
            "int main(void) {\n" + body + "\n  return 0;\n}\n")


def _values(tmp_path, src, include, flags):
    c, exe = tmp_path / "codes.c", tmp_path / "codes"
    c.write_text(src)
    r = subprocess.run(["gcc", *flags, "-I", str(include), str(c), "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {k: int(v) for k, v in (line.split() for line in out.splitlines())}


# Compile-time facts about the types: each code is an enumerator (not a macro), of int type
# (negative mask, as TVM's), and each typedef names the enum its enumerators belong to.
TYPE_CHECKS = "".join(f"#ifdef {n}\n#error {n} is a macro, not an enumerator\n#endif\n" for n in ERRORS) + """
typedef char mask_is_a_negative_int[(kTvmErrorSystemErrorMask < 0 && sizeof(kTvmErrorSystemErrorMask) == sizeof(int)) ? 1 : -1];
static tvm_crt_error_t as_error(int v) { return (tvm_crt_error_t)v; }
static tvm_crt_error_category_t as_category(int v) { return (tvm_crt_error_category_t)v; }
typedef char error_t_is_signed[((tvm_crt_error_t)kTvmErrorSystemErrorMask < 0) ? 1 : -1];
"""


def test_every_tvm_code_with_its_value_and_type(tmp_path):
    src = _program([*CATEGORIES, *ERRORS, *MACROS], TYPE_CHECKS).replace(
        "  return 0;", "  (void)as_error(kTvmErrorFramingShortPacket);\n"
                       "  (void)as_category(kTvmErrorCategoryFraming);\n  return 0;")
    got = _values(tmp_path, src, INCLUDE_DIR, CFLAGS)
    assert got == {**CATEGORIES, **ERRORS, **MACROS}


def test_same_as_tvm_header_compiled(tmp_path):
    """TVM's own header, compiled: every enumerator it defines is ours with the same value."""
    if not (TVM_GIT / "HEAD").exists() and not (TVM_GIT / ".git").exists():
        pytest.skip(f"TVM's mirror is not at {TVM_GIT}; the pinned table above still checks")
    text = subprocess.run(["git", "-C", str(TVM_GIT), "show", f"{TVM_REF}:include/tvm/runtime/crt/error_codes.h"],
                          capture_output=True, text=True)
    if text.returncode:
        pytest.skip(f"TVM {TVM_REF} not readable from the mirror: {text.stderr.strip()}")
    names = re.findall(r"^\s*(kTvm\w+)\s*=", text.stdout, re.M)
    assert len(names) == len(CATEGORIES) + len(ERRORS)
    inc = tmp_path / "tvm_inc"
    (inc / "tvm" / "runtime" / "crt").mkdir(parents=True)
    (inc / "tvm" / "runtime" / "crt" / "error_codes.h").write_text(text.stdout)
    theirs = _values(tmp_path, _program(names + list(MACROS)), inc, ["-std=c99", "-w"])
    ours = _values(tmp_path, _program(names + list(MACROS)), INCLUDE_DIR, CFLAGS)
    assert ours == theirs
    assert theirs == {**CATEGORIES, **ERRORS, **MACROS}
