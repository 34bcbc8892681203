"""Differential fuzzing of aot against onnxruntime on a range of seeds (on demand; CI runs a fixed
seed set through tests/fuzz/test_fuzz_seeds.py).

  python bench/fuzz.py --seeds 0:10000 --jobs 2 [--kind float|qdq|mix] [--failures DIR] [--shrink]
                       [--sanitize-every N]

Runs every seed (generate a random valid model, compile it, build it with gcc + ASan/UBSan at -O0,
run it, compare with onnxruntime; see tests/fuzz/), prints progress, then the counts by class,
the refusals by reason and the seeds of every failure. With --failures DIR each failing seed's
model is saved there (seed<N>.onnx/.npz/.txt); with --shrink it is shrunk first.

Where the time goes (per seed, 2 cores): gcc with ASan+UBSan about 70%, aot's compile about 25%,
onnxruntime and the generator the rest. The sanitizer build is -O0 (-O1 costs ~1.6x); a plain -O0
build costs a third of a sanitizer one, so --sanitize-every N (sanitizers on every N-th seed only,
default 1: all) is the knob for a fixed time budget, e.g. 10,000 seeds in about an hour.
"""
import argparse
import collections
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

FAILURES = ("wrong", "crash", "sanitizer", "generator-invalid")
OPT = "-O0"     # the sanitizer build: -O0 builds about twice as fast as the board's -O1 -g


def _init_worker(root):
    # a private build cache per worker, emptied after each seed: no build is ever reused; under
    # the run's own directory, which main removes (pool workers skip atexit handlers)
    os.environ["AOT_CACHE_DIR"] = tempfile.mkdtemp(prefix="worker-", dir=root)


def _one(args):
    seed, kind, failures, do_shrink, every, patch = args
    sanitize = seed % every == 0
    from fuzz.run import run_seed, shrink_seed
    from fuzz.gen import generate
    from fuzz.shrink import save
    t = time.perf_counter()
    try:
        r = run_seed(seed, kind, sanitize=sanitize, opt=OPT, patch=patch)
        path = None
        if failures and r.cls in FAILURES and r.cls != "generator-invalid":
            if do_shrink:
                _, r2, path = shrink_seed(seed, kind, failures, sanitize=sanitize, opt=OPT)
            else:
                c = generate(seed, kind)
                path = save(c.model, c.feeds, failures, f"seed{seed}", r.line())
    finally:
        shutil.rmtree(os.path.join(os.environ["AOT_CACHE_DIR"], "host"), ignore_errors=True)
    return dict(seed=seed, kind=r.kind, cls=r.cls, sanitize=sanitize, reason=r.reason, detail=r.detail[:1500],
                ops=list(r.ops), seconds={k: round(v, 3) for k, v in r.seconds.items()},
                wall=round(time.perf_counter() - t, 3), saved=path)


def parse_range(s):
    a, b = s.split(":")
    return range(int(a), int(b))


def report(results, wall, out=sys.stdout):
    counts = collections.Counter(r["cls"] for r in results)
    n = len(results)
    print(f"\n{n} seeds in {wall:.0f} s ({wall / max(n, 1):.2f} s/seed wall)", file=out)
    for c in ("pass", "pass-by-reference", "refused", "wrong", "crash", "sanitizer", "generator-invalid"):
        print(f"  {c:18s} {counts.get(c, 0)}", file=out)
    for cls in ("refused", "pass-by-reference", "crash", "sanitizer", "generator-invalid"):
        reasons = collections.Counter(r["reason"] for r in results if r["cls"] == cls)
        if reasons:
            print(f"\n{cls} by reason:", file=out)
            for k, v in reasons.most_common():
                print(f"  {v:5d}  {k}", file=out)
    secs = collections.Counter()
    for r in results:
        secs.update(r["seconds"])
    if n:
        print("\nmean seconds per seed: " + ", ".join(f"{k} {v / n:.3f}" for k, v in secs.items()), file=out)
    for cls in ("pass-by-reference",) + FAILURES:
        seeds = sorted(r["seed"] for r in results if r["cls"] == cls)
        if seeds:
            print(f"\n{cls} seeds: {' '.join(map(str, seeds))}", file=out)
            if cls == "pass-by-reference":
                continue
            for r in sorted((r for r in results if r["cls"] == cls), key=lambda r: r["seed"]):
                print(f"  {r['seed']}: {(r['reason'] or r['detail'])[:300]}", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0:1000", help="A:B, the seeds A..B-1")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--kind", choices=("float", "qdq", "stage", "mix"), default="mix")
    ap.add_argument("--failures", metavar="DIR", help="save each failing seed's model here")
    ap.add_argument("--shrink", action="store_true", help="shrink each failure before saving it")
    ap.add_argument("--log", metavar="FILE", help="append one JSON line per seed")
    ap.add_argument("--sanitize-every", type=int, default=1, metavar="N",
                    help="build with ASan+UBSan every N-th seed only (others plain -O0); default 1")
    ap.add_argument("--patch", choices=("auto", "force", "tiles"),
                    help="compile with patch-based execution ('force': the first stage patched wherever there is one; "
                         "'tiles': a tiling of rows and columns drawn by the seed)")
    args = ap.parse_args(argv)
    if args.shrink and not args.failures:
        ap.error("--shrink needs --failures DIR")
    seeds = parse_range(args.seeds)
    work = [(s, args.kind, args.failures, args.shrink, max(args.sanitize_every, 1), args.patch) for s in seeds]
    results = []
    t0 = time.perf_counter()
    log = open(args.log, "a") if args.log else None
    # fresh workers now and then: a long run picks up compiler changes made meanwhile
    root = tempfile.mkdtemp(prefix="aot-fuzz-cache-")
    try:
        with multiprocessing.Pool(args.jobs, initializer=_init_worker, initargs=(root,), maxtasksperchild=25) as pool:
            for k, r in enumerate(pool.imap(_one, work, chunksize=1)):
                results.append(r)
                if log:
                    log.write(json.dumps(r) + "\n")
                    log.flush()
                if r["cls"] in FAILURES:
                    print(f"[{k + 1}/{len(work)}] seed {r['seed']} {r['cls']}: {(r['reason'] or r['detail'])[:200]}",
                          flush=True)
                if (k + 1) % 50 == 0 or k + 1 == len(work):
                    c = collections.Counter(x["cls"] for x in results)
                    el = time.perf_counter() - t0
                    print(f"[{k + 1}/{len(work)}] {el:.0f} s, {el / (k + 1):.2f} s/seed: "
                          + ", ".join(f"{a} {b}" for a, b in sorted(c.items())), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(results, time.perf_counter() - t0)
    return 1 if any(r["cls"] in FAILURES for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
