"""CPU time per kernel of a model's generated C on the host (the host board's flags; --march
native adds -march=native): each kernel call in tvmgen_<mod>___tvm_main__ wrapped in a thread
CPU clock read, summed over REPEAT inferences; with each kernel's multiply-adds (an
accumulation's output elements x its reduction's extent), its GFLOP/s. Rows sorted by time,
then totals by kind (the kernel's name less its number).

  python bench/bench_host_profile.py MODEL [--march native] [--repeat N] [--top K] [--mlf TAR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

HOOK = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define AOT_PROF_MAX 4096
static double aot_prof_sum[AOT_PROF_MAX];
static long aot_prof_calls[AOT_PROF_MAX];
static struct timespec aot_prof_t0;
static int aot_prof_n;
static void aot_prof_dump(void) {
  int k;
  for (k = 0; k < aot_prof_n; ++k) {
    (void)fprintf(stderr, "PROF %d %ld %.9f\n", k, aot_prof_calls[k], aot_prof_sum[k]);
  }
}
void aot_prof_begin(int k) {
  (void)k;
  (void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &aot_prof_t0);
}
void aot_prof_end(int k) {
  struct timespec t1;
  (void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  if (aot_prof_n == 0) {
    (void)atexit(aot_prof_dump);
  }
  if (k + 1 > aot_prof_n) {
    aot_prof_n = k + 1;
  }
  aot_prof_sum[k] += (double)(t1.tv_sec - aot_prof_t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - aot_prof_t0.tv_nsec);
  aot_prof_calls[k] += 1;
}
"""


def _instrumented(tar_bytes, mod):
    """The MLF with every kernel call of the main function between aot_prof_begin/end(k)."""
    from bench_kernel_profile import rewrite_main
    symbols = []

    def edit(head, main):
        pieces, last = [], 0
        for k, c in enumerate(re.finditer(r"  if \((tvmgen_\w+)\(.*?\n  }\n", main, re.S)):
            symbols.append(c.group(1))
            pieces += [main[last:c.start()], f"  aot_prof_begin({k});\n", c.group(0), f"  aot_prof_end({k});\n"]
            last = c.end()
        return head + "void aot_prof_begin(int k);\nvoid aot_prof_end(int k);\n", "".join(pieces) + main[last:]
    return rewrite_main(tar_bytes, mod, edit), symbols


def _recording_work():
    """{kernel symbol: multiply-adds}, filled as the compile lowers each kernel (the plain
    nest's accumulations, counted by aot/schedules/x86.py's _work; every kernel is lowered, while
    a repeated layer is scheduled once)."""
    import aot.executor.lowering as ex
    from aot.schedules.x86 import _work
    work, lower_group = {}, ex.lower_group

    def recording(g, name):
        func, params = lower_group(g, name)
        work[name] = _work(func.body)
        return func, params
    ex.lower_group = recording
    return work


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--march")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--mlf", help="time this MLF tarball (compiled from MODEL) instead of compiling")
    a = ap.parse_args()
    if a.march:
        os.environ["AOT_HOST_CFLAGS"] = (os.environ.get("AOT_HOST_CFLAGS", "") + f" -march={a.march}").strip()
    import aot
    from aot.host import build_host, read_valid_mlf, write_inputs
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from bench_models import feeds_for
    if a.mlf:
        tar, work = open(a.mlf, "rb").read(), {}
    else:
        work = _recording_work()
        tar = aot.compile(a.model).tar
    mlf = read_valid_mlf(tar)
    mod = mlf.module_name
    inst, symbols = _instrumented(tar, mod)
    exe = build_host(inst, werror=False, extra_sources={"aot_prof.c": HOOK})
    model = onnx.load(a.model)
    with tempfile.TemporaryDirectory() as d:
        ins = write_inputs(mlf.aot, feeds_for(model), d)
        cmd = [exe, *ins, *[os.path.join(d, f"out{k}.bin") for k in range(len(model.graph.output))], str(a.repeat)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rows = []
    for line in r.stderr.splitlines():
        if line.startswith("PROF "):
            _, k, calls, s = line.split()
            sym = symbols[int(k)]
            macs = work.get(sym, 0)
            rows.append((sym, 1e3 * float(s) / int(calls), macs))
    total = sum(t for _, t, _ in rows)
    macs_all = sum(m for _, _, m in rows)
    print(f"{os.path.basename(a.model)}: {total:.2f} ms per inference, {2e-9 * macs_all:.2f} GFLOP, "
          f"{2e-9 * macs_all / (total * 1e-3):.1f} GFLOP/s")
    print(f"{'kernel':52s} {'ms':>8s} {'share':>6s} {'MMAC':>8s} {'GFLOP/s':>8s}")
    for sym, t, m in sorted(rows, key=lambda x: -x[1])[:a.top]:
        print(f"{sym:52s} {t:8.3f} {100 * t / total:5.1f}% {m * 1e-6:8.1f} {2e-6 * m / max(t, 1e-9):8.1f}")
    kinds = {}
    for sym, t, m in rows:
        kind = re.sub(r"_\d+$", "", sym.replace(f"tvmgen_{mod}_", ""))
        kt, km, kn = kinds.get(kind, (0.0, 0, 0))
        kinds[kind] = (kt + t, km + m, kn + 1)
    print(f"\n{'kind':40s} {'n':>3s} {'ms':>8s} {'share':>6s} {'GFLOP/s':>8s}")
    for kind, (t, m, n) in sorted(kinds.items(), key=lambda x: -x[1][0]):
        print(f"{kind:40s} {n:3d} {t:8.3f} {100 * t / total:5.1f}% {2e-6 * m / max(t, 1e-9):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
