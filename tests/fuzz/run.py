"""Classify one case: compile with aot, build with gcc + ASan/UBSan, run, compare with the oracle.

Classes: pass; pass-by-reference (onnxruntime differs, the reference evaluator agrees with aot);
refused (an AotError: the reason normalised so that counts group); wrong (shape, dtype or values
beyond tolerance); crash (any other exception in compile, a build failure, a non-zero exit or a
signal of the harness); sanitizer (an ASan/UBSan report); generator-invalid (onnxruntime rejects
what the generator made: a generator bug).
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time
import traceback

# UBSan must abort rather than print and go on (the host build also passes
# -fno-sanitize-recover=all); ASan reports are fatal by default.
os.environ.setdefault("UBSAN_OPTIONS", "halt_on_error=1:abort_on_error=0:print_stacktrace=1")
os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=0:halt_on_error=1")

CLASSES = ("pass", "pass-by-reference", "refused", "wrong", "crash", "sanitizer", "generator-invalid")
RUN_TIMEOUT = 60
SANITIZER_MARKS = ("AddressSanitizer", "UndefinedBehaviorSanitizer", "runtime error:", "LeakSanitizer")


@dataclasses.dataclass
class Result:
    cls: str
    reason: str = ""           # normalised (refused, crash, sanitizer): what counts group by
    detail: str = ""
    seed: int = None
    kind: str = ""
    ops: tuple = ()
    seconds: dict = dataclasses.field(default_factory=dict)

    def line(self):
        return f"seed {self.seed} ({self.kind}) {self.cls}: {self.reason or self.detail}"[:400]


def normalise(msg):
    """A reason that groups: quoted names, numbers and shapes replaced by placeholders."""
    first = msg.strip().splitlines()
    lines = [ln.strip(" -") for ln in first if ln.strip()]
    if len(lines) > 1 and re.match(r"\d+ unsupported element", lines[0]):
        lines = sorted(set(lines[1:]))
    else:
        lines = lines[:1]
    out = []
    for ln in lines:
        ln = re.sub(r"'[^']*'", "'<>'", ln)
        ln = re.sub(r"\"[^\"]*\"", "'<>'", ln)
        ln = re.sub(r"\[[-\d, ]*\]|\([-\d, ]*\)", "[..]", ln)
        ln = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", ln)
        out.append(ln)
    return "; ".join(sorted(set(out)) if len(out) > 1 else out)[:300]


def _sanitizer_reason(text):
    for ln in text.splitlines():
        if ln.startswith("SUMMARY:"):
            return normalise(re.sub(r"\S+\.c:\d+(:\d+)?", "<file>", ln))
    m = re.search(r"runtime error: .*", text)
    return normalise(m.group(0)) if m else "sanitizer report"


def _crash_reason(e):
    tb = traceback.extract_tb(e.__traceback__)
    where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].name}" if tb else "?"
    return f"{type(e).__name__} in {where}: {normalise(str(e))[:150]}"


def tiling_for(model, seed):
    """("cut value", strips, column tiles) drawn by seed among the model's first stages, each
    strip cut into 2 or more tiles of columns (patch-based execution's 2-D patches), or None
    where no stage is two columns wide. The stages are found on the graph the compiler's
    execution choice sees (passes, channels-last, the input's views dropped)."""
    import random
    from aot.compiler import run_passes
    from aot.frontend import import_model
    from aot.passes.layout import channels_last
    from aot.passes.patch import drop_input_views, stage_cuts
    data = model if isinstance(model, bytes) else model.SerializeToString()
    g = run_passes(import_model(data, None, name="m", log=lambda m: None), lambda m: None)
    cuts = [c for c in stage_cuts(drop_input_views(channels_last(g)[0])[0]) if c.cols >= 2]
    if not cuts:
        return None
    rng = random.Random(seed)
    c = rng.choice(cuts)
    return c.value, rng.randint(1, c.rows), rng.randint(2, min(c.cols, 6))


def run_case(model, feeds, expected=None, sanitize=True, opt=None, timeout=RUN_TIMEOUT, patch=None, seed=0):
    """Result of compiling and running (model, feeds) against onnxruntime's `expected`; patch:
    aot.compile's (e.g. "force": the first stage patched wherever the model has one), or "tiles":
    a tiling of rows and columns drawn by `seed` (tiling_for; layer by layer where none)."""
    import aot
    from aot.errors import AotError, BuildError
    from aot.host import run_host

    from .oracle import expected_outputs, judge, model_ops

    secs = {}
    ops = tuple(model_ops(model))
    t = time.perf_counter()
    if expected is None:
        try:
            expected = expected_outputs(model, feeds)
        except Exception as e:          # noqa: BLE001 -- onnxruntime refuses the model at run time
            return Result("generator-invalid", normalise(str(e))[:200], str(e)[:2000], ops=ops, seconds=secs)
    secs["ort"] = time.perf_counter() - t
    t = time.perf_counter()
    if patch == "tiles":
        patch = tiling_for(model, seed)
    try:
        res = aot.compile(model, patch=patch)
    except AotError as e:
        return Result("refused", normalise(str(e)), str(e)[:2000], ops=ops, seconds=secs)
    except Exception as e:              # noqa: BLE001 -- any other exception is a compiler crash
        return Result("crash", _crash_reason(e), traceback.format_exc()[-3000:], ops=ops, seconds=secs)
    secs["compile"] = time.perf_counter() - t
    t = time.perf_counter()
    try:
        got = run_host(res.tar, feeds, sanitize=sanitize, opt=opt, timeout=timeout)
    except BuildError as e:
        text = str(e)
        if "at run time" in text and any(m in text for m in SANITIZER_MARKS):
            return Result("sanitizer", _sanitizer_reason(text), text[-3000:], ops=ops, seconds=secs)
        kind = "harness exit" if "at run time" in text else "build failure"
        first = [ln for ln in text.splitlines()[1:] if "error" in ln][:1] or text.splitlines()[:1]
        return Result("crash", f"{kind}: {normalise(first[0])}", text[-3000:], ops=ops, seconds=secs)
    except subprocess.TimeoutExpired:
        return Result("crash", f"harness timeout ({timeout} s)", "", ops=ops, seconds=secs)
    except Exception as e:              # noqa: BLE001 -- an AotError here is a bug too: the MLF was ours
        return Result("crash", _crash_reason(e), traceback.format_exc()[-3000:], ops=ops, seconds=secs)
    secs["build+run"] = time.perf_counter() - t
    t = time.perf_counter()
    cls, detail = judge(model, feeds, expected, got)
    secs["compare"] = time.perf_counter() - t
    reason = detail.split(":")[0] if cls == "pass-by-reference" else ""
    return Result(cls, reason, detail, ops=ops, seconds=secs)


def run_seed(seed, kind="mix", sanitize=True, opt=None, patch=None):
    from .gen import GeneratorInvalid, generate
    t = time.perf_counter()
    try:
        case = generate(seed, kind)
    except GeneratorInvalid as e:
        r = Result("generator-invalid", normalise(str(e).split(":", 1)[-1])[:200], str(e))
        r.seed, r.kind = seed, kind
        return r
    gen_s = time.perf_counter() - t
    r = run_case(case.model, case.feeds, sanitize=sanitize, opt=opt, patch=patch, seed=seed)
    r.seed, r.kind = seed, case.kind
    r.seconds["generate"] = gen_s
    return r


def same_failure(orig: Result):
    """A predicate on a new Result: the same failure class (and for refused, crash and sanitizer
    the same normalised reason) -- what the shrinker must keep."""
    def pred(r: Result):
        if r.cls != orig.cls:
            return False
        if orig.cls in ("refused", "crash", "sanitizer"):
            return r.reason == orig.reason
        return True
    return pred


def fails_like(orig: Result, sanitize=True, opt=None):
    """A shrink predicate (model, feeds) -> bool: running it fails the way `orig` did."""
    keep = same_failure(orig)

    def pred(model, feeds):
        try:
            r = run_case(model, feeds, sanitize=sanitize, opt=opt)
        except Exception:           # onnxruntime rejects the reduced model: not the same failure
            return False
        return keep(r)
    return pred


def shrink_seed(seed, kind="mix", directory=None, sanitize=True, opt=None, log=None):
    """Run seed; if it fails (not pass, pass-by-reference or refused), shrink it and save the
    reproducer in `directory`. Returns (first Result, Result of the shrunk model, base path)."""
    from .gen import generate
    from .shrink import save, shrink
    r = run_seed(seed, kind, sanitize=sanitize, opt=opt)
    if r.cls in ("pass", "pass-by-reference", "refused", "generator-invalid"):
        return r, None, None
    case = generate(seed, kind)
    m, f = shrink(case.model, case.feeds, fails_like(r, sanitize, opt), log=log)
    r2 = run_case(m, f, sanitize=sanitize, opt=opt)
    base = None
    if directory:
        ops = "_".join(sorted({n.op_type for n in m.graph.node}))[:60] or "noop"
        name = f"{r.cls}_{ops}_s{seed}"
        base = save(m, f, directory, name, f"seed {seed} ({case.kind}) {r2.cls}: {(r2.reason or r2.detail)}")
    return r, r2, base
