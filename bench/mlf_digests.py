"""sha256 of every MLF the corpus compiles, to show that a refactor changes no generated file.

    python bench/mlf_digests.py --save before.json          # on the old tree
    python bench/mlf_digests.py --compare before.json       # on the new one: exit 1 on any difference

The corpus: every MLPerf Tiny model under ../shared (ONNX and TFLite, float and int8) on c, Cortex-M4,
Cortex-M55, cuda, cuda -libs=cudnn,cublas and opencl; the ONNX light models on c, Cortex-M4, cuda and
opencl; the accelerator examples' backends; the memory and interface options on two models; and the
small op models the check_model tests build (tests/model_corpus.py) on c and Cortex-M55. A refusal is
recorded as its message, so a case that starts or stops compiling shows too. --quick: the MLPerf Tiny
and accelerator cases only.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
MLPERF = os.path.join(SHARED, "models", "mlperf_tiny")
EXAMPLES = os.path.join(ROOT, "examples", "accelerators")

M4, M55 = "c -mcpu=cortex-m4", "c -mcpu=cortex-m55"
MLPERF_TARGETS = ("c", M4, M55, "cuda", "cuda -libs=cudnn,cublas", "opencl")
LIGHT_TARGETS = ("c", M4, "cuda", "opencl")
OPTION_SETS = {
    "workspace_io": {"use_workspace_io": True},
    "no_in_place": {"in_place": False},
    "pools": {"workspace_pools": [("sram", 20000), ("ext", None)]},
    "packed": {"interface_api": "packed", "io_names": "tvm"},
}
ACCEL = [  # (backend example, model, target)
    ("vanilla", "keyword_spotting/kws_ref_model_float32.onnx", "vanilla_accelerator, c"),
    ("vanilla", "keyword_spotting/kws_ref_model_float32.onnx", "vanilla_accelerator, " + M4),
    ("conv_bias_relu", "image_classification/pretrainedResnet.onnx", "conv_bias_relu, c"),
    ("npu", "visual_wake_words/vww_96_float.onnx", "npu, c"),
]


def mlperf_models():
    out = []
    for d in sorted(os.listdir(MLPERF)):
        full = os.path.join(MLPERF, d)
        if os.path.isdir(full):
            out += [os.path.join(d, f) for f in sorted(os.listdir(full)) if f.endswith((".onnx", ".tflite"))]
    return out


def cases(quick=False):
    """[(case name, model path or bytes, target, options, backend example or None)]"""
    out = []
    for m in mlperf_models():
        for t in MLPERF_TARGETS:
            out.append((f"{m} @ {t}", os.path.join(MLPERF, m), t, {}, None))
    for m in ("keyword_spotting/kws_ref_model.tflite", "visual_wake_words/vww_96_float.onnx"):
        for t in ("c", M4, M55):
            for oname, opts in OPTION_SETS.items():
                out.append((f"{m} @ {t} [{oname}]", os.path.join(MLPERF, m), t, opts, None))
    for ex, m, t in ACCEL:
        out.append((f"{ex}: {m} @ {t}", os.path.join(MLPERF, m), t, {}, ex))
    if quick:
        return out
    import onnx
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for f in sorted(os.listdir(light)):
        if f.startswith("light_") and f.endswith(".onnx"):
            for t in LIGHT_TARGETS:
                out.append((f"{f} @ {t}", os.path.join(light, f), t, {}, None))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from model_corpus import op_cases
    for c in op_cases():
        for t in ("c", M55):
            out.append((f"op {c.name} @ {t}", c.source(), t, c.options, None))
    return out


def _digest(tar: bytes) -> str:
    """One hash over the members' names and contents (the tar's own bytes too: its headers are
    part of what a user gets)."""
    h = hashlib.sha256(tar)
    with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
        for m in sorted(tf.getmembers(), key=lambda m: m.name):
            if m.isfile():
                h.update(m.name.encode() + b"\0" + hashlib.sha256(tf.extractfile(m).read()).digest())
    return h.hexdigest()


def one(case):
    name, model, target, opts, backend = case
    import aot
    from aot.errors import AotError
    try:
        if backend is not None:
            from aot.uma.backend import load_backend_file
            load_backend_file(os.path.join(EXAMPLES, backend, "backend.py"))
        res = aot.compile(model, target=target, **opts)
        return name, _digest(res.tar)
    except AotError as e:
        return name, f"refused: {e}"
    except Exception as e:      # an internal error is a result too: it must not change either
        return name, f"internal: {type(e).__name__}: {e}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--save", help="write {case: digest} to this JSON file")
    ap.add_argument("--compare", help="compare with a saved JSON file; exit 1 on any difference")
    ap.add_argument("--quick", action="store_true", help="MLPerf Tiny and the accelerator examples only")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("-k", help="only cases whose name contains this text")
    args = ap.parse_args(argv)
    todo = cases(args.quick)
    if args.k:
        todo = [c for c in todo if args.k in c[0]]
    with ProcessPoolExecutor(args.j) as pool:
        got = dict(pool.map(one, todo, chunksize=4))
    refused = sum(v.startswith(("refused", "internal")) for v in got.values())
    print(f"{len(got)} cases, {refused} refused or failing")
    if args.save:
        with open(args.save, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
    if args.compare:
        with open(args.compare) as f:
            before = json.load(f)
        diff = sorted(k for k in got if k in before and before[k] != got[k])
        missing = sorted(set(before) - set(got)) if not (args.quick or args.k) else []
        for k in diff:
            print(f"CHANGED {k}\n  before: {before[k][:200]}\n  after:  {got[k][:200]}")
        for k in missing:
            print(f"MISSING {k}")
        print(f"{len(got) - len(diff)} of {len(got)} identical; {len(diff)} changed; {len(missing)} missing")
        return 1 if diff or missing else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
