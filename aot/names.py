"""Model names -> C identifiers. Nothing from a model reaches C without passing here."""
from __future__ import annotations

import hashlib
import re

# C99's keywords, and main: no identifier of ours may be spelt like one
C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto
if inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Bool _Complex _Imaginary main""".split())

# C99 promises 63 significant characters in an identifier; longer names keep a prefix and a
# hash of the whole name, so distinct long names stay distinct.
MAX_C_NAME = 63
# --model-name is part of every file name (tvmgen_<mod>.h, <mod>_lib0.c) and C identifier of the
# MLF: file names are limited to 255 bytes and identifiers grow by up to ~100 characters.
MAX_MODEL_NAME = 100
# Object-like macros of the headers the generated code and harnesses include (and of GNU C
# modes): a struct member spelt like one would be replaced by the preprocessor.
C_MACROS = frozenset("""NULL EOF BUFSIZ FILENAME_MAX FOPEN_MAX L_tmpnam TMP_MAX SEEK_SET SEEK_CUR SEEK_END stdin
stdout stderr EXIT_SUCCESS EXIT_FAILURE RAND_MAX MB_CUR_MAX errno INFINITY NAN HUGE_VAL HUGE_VALF HUGE_VALL
FP_NAN FP_INFINITE FP_ZERO FP_SUBNORMAL FP_NORMAL FP_ILOGB0 FP_ILOGBNAN MATH_ERRNO MATH_ERREXCEPT math_errhandling
M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2 M_SQRT1_2 CLOCKS_PER_SEC
CLOCK_REALTIME CLOCK_MONOTONIC CLOCK_PROCESS_CPUTIME_ID CLOCK_THREAD_CPUTIME_ID TIME_UTC SIZE_MAX PTRDIFF_MIN
PTRDIFF_MAX SIG_ATOMIC_MIN SIG_ATOMIC_MAX WCHAR_MIN WCHAR_MAX WINT_MIN WINT_MAX INTPTR_MIN INTPTR_MAX UINTPTR_MAX
INTMAX_MIN INTMAX_MAX UINTMAX_MAX CHAR_BIT true false bool linux unix i386""".split())
_LIMIT_MACRO = re.compile(r"^U?INT(_LEAST|_FAST)?(8|16|32|64|MAX)_(MIN|MAX|C)$")


def sanitize(name: str) -> str:
    """Non-alphanumerics become '_' (case kept, as TVM does); never empty, a keyword or digit-led."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", str(name))
    if not s:
        s = "_"
    if s[0].isdigit():
        s = "_" + s
    if s in C_KEYWORDS or s in C_MACROS or _LIMIT_MACRO.match(s) or s[:2] == "__" or re.match("_[A-Z]", s):
        s += "_"       # reserved identifiers (__LINE__, _Pragma, ...) never end in "___" or "_X..._"
    if len(s) > MAX_C_NAME:
        s = s[:MAX_C_NAME - 9] + "_" + hashlib.sha256(str(name).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return s


def unique_c_names(names, reserved=()):
    """Sanitised, pairwise-distinct names, also distinct when upper-cased (they form macros).

    Returns (c_names, notes) where notes describe every rename a collision caused."""
    taken = {r.upper() for r in reserved}
    out, notes = [], []
    for n in names:
        base = sanitize(n)
        cand, k = base, 1
        while cand.upper() in taken:
            cand, k = f"{base}_{k}", k + 1
        if cand != base:
            notes.append(f"tensor name '{n}' sanitises to '{base}', which is taken; it is '{cand}' in C")
        taken.add(cand.upper())
        out.append(cand)
    return out, notes


def model_c_name(name: str) -> str:
    """--model-name as used inside identifiers (tvmgen_<mod>_run): lowercased, [a-z0-9_] only.

    It is always a part of a longer identifier, so keywords need no escaping."""
    return re.sub(r"[^a-z0-9_]", "_", str(name).lower())


def comment_safe(text: str) -> str:
    """Text that cannot end a C comment or start a preprocessor line."""
    return re.sub(r"[^0-9A-Za-z_.:,+=\-\[\] ]", "_", str(text))[:120]


def tvm_sanitize(name: str) -> str:
    """TVM's SanitizeName: every byte of the name (UTF-8) that is not an ASCII letter or digit
    becomes '_'. So 'x::2' -> 'x__2', 'é' -> '__' (two bytes), and '1x' or 'int' stay as they are."""
    raw = str(name).encode("utf-8", "surrogatepass")
    return "".join(chr(b) if chr(b).isascii() and chr(b).isalnum() else "_" for b in raw)


# predefined macros (__FILE__, __STDC_VERSION__, ...) have this shape
_PREDEFINED_MACRO = re.compile(r"^__[A-Za-z]\w*__$")


def tvm_c_names(inputs, outputs, macros=("WORKSPACE",)):
    """--io-names tvm: the I/O members named as TVM's header names them, or an AotError.

    TVM renames nothing after sanitising: two tensors of one struct that sanitise alike are
    refused ("Sanitized input tensor name clash"), so they are refused here, naming both, where
    the model mode renames. Names that TVM would write into a header that does not compile (a
    leading digit, a C keyword or standard macro, an empty name) and size macros
    (TVMGEN_<MOD>_<NAME>_SIZE) that two tensors, or a tensor and the workspace size, would both
    define are refused too."""
    from .errors import AotError
    taken = {m.upper(): f"the {m.lower()} size macro" for m in macros}
    result = []
    for kind, names in (("input", inputs), ("output", outputs)):
        seen, out = {}, []
        for n in names:
            if str(n) == "":
                raise AotError(f"{kind} tensor name is empty: TVM's naming (--io-names tvm) refuses an empty name")
            s = tvm_sanitize(n)
            if s in seen:
                raise AotError(f"{kind} names '{seen[s]}' and '{n}' both sanitise to '{s}' (Sanitized {kind} "
                               f"tensor name clash: TVM refuses it); rename one, or use --io-names model")
            if s[0].isdigit() or s in C_KEYWORDS or s in C_MACROS or _LIMIT_MACRO.match(s) or _PREDEFINED_MACRO.match(s):
                why = "starts with a digit" if s[0].isdigit() else "is a C keyword or standard macro"
                raise AotError(f"{kind} name '{n}' is '{s}' in TVM's naming, which {why}: the header would not "
                               f"compile; rename it, or use --io-names model")
            macro = s.upper()
            if macro in taken:
                raise AotError(f"{kind} name '{n}' ('{s}') and {taken[macro]} give one size macro "
                               f"..._{macro}_SIZE; rename one, or use --io-names model")
            seen[s] = n
            taken[macro] = f"{kind} name '{n}' ('{s}')"
            out.append(s)
        result.append(out)
    return result[0], result[1]
