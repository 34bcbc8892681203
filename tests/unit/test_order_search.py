"""The execution-order search (aot/passes/order.py) on synthetic problems: its exact search is the
optimum that brute force over every topological order finds, and a stretch as wide as a thousand
branches is searched without recursion (a fan-out of 485 branches once overflowed Python's stack)."""
import itertools
import random

from aot.passes.order import _Problem, _Val


def _problem(n, edges, sizes):
    """n kernels; edges (a, b): kernel b reads kernel a's output (of sizes[a] bytes)."""
    p = _Problem.__new__(_Problem)
    p.n = n
    consumers = [0] * n
    for a, b in edges:
        consumers[a] |= 1 << b
    p.vals = {k: _Val(sizes[k], k, consumers[k], consumers[k] == 0) for k in range(n)}
    p.preds = [0] * n
    p.outs = [[p.vals[k]] for k in range(n)]
    for a, b in edges:
        p.preds[b] |= 1 << a
    p.out_bytes = [sizes[k] for k in range(n)]
    p.reads = [[v for v in p.vals.values() if v.consumers >> k & 1] for k in range(n)]
    return p


def _brute_force(p):
    best = None
    for order in itertools.permutations(range(p.n)):
        pos = {k: i for i, k in enumerate(order)}
        if all(pos[a] < pos[b] for b in range(p.n) for a in range(p.n) if p.preds[b] >> a & 1):
            peak = p.peak_of(list(order), 0)
            best = peak if best is None else min(best, peak)
    return best


def test_the_exact_search_finds_the_brute_force_optimum():
    rng = random.Random(5)
    for _ in range(60):
        n = rng.randint(3, 7)
        edges = [(a, b) for b in range(n) for a in range(b) if rng.random() < 0.35]
        sizes = [rng.choice([0, 16, 64, 256, 1024]) for _ in range(n)]
        p = _problem(n, edges, sizes)
        order = p.exact(list(range(n)), 0)
        assert sorted(order) == list(range(n))
        assert p.peak_of(order, 0) == _brute_force(p)


def test_a_thousand_branches_are_searched_without_recursion():
    n = 1002                        # one source, 1000 branches, one sink reading them all
    edges = [(0, k) for k in range(1, n - 1)] + [(k, n - 1) for k in range(1, n - 1)]
    p = _problem(n, edges, [64] * n)
    seg = list(range(n))
    assert p.exact(seg, 0) is None              # too many states: the caller falls back to greedy
    order = p.greedy(seg, 0)
    assert order[0] == 0 and order[-1] == n - 1 and sorted(order) == seg
