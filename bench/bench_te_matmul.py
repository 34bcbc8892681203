"""A 512x512x512 float32 matmul written with aot.te, unscheduled (the plain i, j, k nest with a
scalar accumulator) and scheduled as TVM's CPU tutorial does it (32x32 output tiles, k split by 4
and reordered among the output loops, the innermost j loop vectorised, the outer loop marked
parallel), built with aot.build for C and timed with the harness's back-to-back runs
(time_evaluator). Each is checked against numpy first.

The same with the tutorial's write cache (each 32x32 tile accumulated in a local buffer, copied
to C at the tile's loop). Each scheduled kernel is timed twice: without -fopenmp (the parallel
loop runs serially: one core) and as aot.build's host build makes it, with -fopenmp (the parallel
loop's body is a static function with restrict pointers, called per iteration from an OpenMP
loop, so it vectorises as the serial one does), on every core.

  python bench/bench_te_matmul.py [N]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    import aot
    from aot import te
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    plain = te.create_schedule(C.op)
    s = te.create_schedule(C.op)            # TVM's CPU matmul tutorial: tiles, k split, j vectorised
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=32)
    jo, ji = s[C].split(j, factor=32)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)    # k among the output loops: C accumulates in place
    s[C].vectorize(ji)
    s[C].parallel(io)
    w = te.create_schedule(C.op)            # the tutorial's "write cache" step: each tile accumulates locally
    CC = w.cache_write(C, "local")
    xo, yo, xi, yi = w[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
    w[CC].compute_at(w[C], yo)
    xc, yc = w[CC].op.axis
    kc, = w[CC].op.reduce_axis
    ko, ki = w[CC].split(kc, factor=4)
    w[CC].reorder(ko, xc, ki, yc)
    w[CC].unroll(ki)
    w[CC].vectorize(yc)
    w[C].parallel(xo)
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    print(f"matmul {n}x{n}x{n}, {os.cpu_count()} cores")
    import aot.host
    results = {}
    openmp = aot.host.uses_openmp
    for label, sch, omp in (("unscheduled", plain, False), ("scheduled, 1 core", s, False),
                            ("scheduled+parallel", s, True), ("cache_write, 1 core", w, False),
                            ("cache_write+parallel", w, True)):
        aot.host.uses_openmp = openmp if omp else (lambda tar: False)
        try:
            f = aot.build(sch, [A, B, C], target="c", name="mm")
            c = np.zeros((n, n), np.float32)
            f(a, b, c)
            np.testing.assert_allclose(c, a @ b, rtol=1e-4)
            t = f.time_evaluator(f.entry_name, aot.cpu(0), number=5)(a, b, c).mean
        finally:
            aot.host.uses_openmp = openmp
        results[label] = t
        print(f"  {label:24s} {t * 1e3:9.2f} ms  {2 * n ** 3 / t / 1e9:6.2f} GFLOP/s")
    base = results["unscheduled"]
    print("  speed-up over unscheduled: " + ", ".join(f"{k} {base / v:.2f}x" for k, v in results.items()
                                                        if k != "unscheduled"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
