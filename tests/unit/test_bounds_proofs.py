"""The access verifier proves each loop nest once (the index's constant split off, proofs shared
across kernels): it must still refuse every out-of-bounds access, in unrolled lanes, vectorised
loops, micro-kernel calls and nests whose bounds depend on outer loops. Reference: enumeration."""
import itertools

import numpy as np
import pytest

from aot.tir import schedule as tsch
from aot.tir.expr import Const, Load, Var, max_, min_
from aot.tir.stmt import Buffer, For, PrimFunc, Seq, Store
from aot.tir.verify import AccessError, endpoints, _nest_endpoints, verify_accesses


def _copy(n_src, shift, lanes=4, outer=4):
    """dst[i*lanes + l] = src[i*lanes + l + shift] for the unrolled lanes l of a split loop."""
    src, dst = Buffer("src", "float32", (n_src,)), Buffer("dst", "float32", (outer * lanes,))
    j = Var("j")
    body = For(j, 0, outer * lanes, Store(dst, j, Load(src, j + shift)))
    body, jo, ji = tsch.split(body, j, lanes)
    return PrimFunc("f", [src, dst], tsch.unroll(body, ji), 1)


def test_an_unrolled_lane_past_the_end_is_refused():
    assert verify_accesses(_copy(16, 0)).unproven == 0
    # only the last lane of the last iteration reads src[16]: its siblings share the nest's proof
    with pytest.raises(AccessError, match=r"src\[4..16\] is outside its 16 elements"):
        verify_accesses(_copy(16, 1))
    with pytest.raises(AccessError, match=r"src\[-1..11\] is outside its 16 elements"):
        verify_accesses(_copy(16, -1))


def test_a_proof_shared_across_kernels_is_checked_against_each_buffer():
    """The same nest shape over a smaller buffer: the cached range is compared with this buffer."""
    assert verify_accesses(_copy(17, 1)).checked > 0
    with pytest.raises(AccessError, match=r"src\[4..16\] is outside its 16 elements"):
        verify_accesses(_copy(16, 1))


def test_a_vectorised_loop_past_the_end_is_refused():
    a, out = Buffer("a", "int32", (8, 8)), Buffer("out", "int32", (64,))
    i, k = Var("i"), Var("k")

    def func(width):
        body = For(i, 0, 8, For(k, 0, width, Store(out, i * 8 + k, Load(a, (i * 8 + k,)))))
        return PrimFunc("v", [a, out], tsch.vectorize(body, k), 1)
    assert verify_accesses(func(8)).unproven == 0
    with pytest.raises(AccessError, match=r"out\[0..64\] is outside its 64 elements"):
        verify_accesses(func(9))


def _padded_nest(n, pad, kw, stride, shift):
    """A padded 1-D window as the conv schedules leave it: the kernel loop's bounds clipped by
    the output position (min and extent depend on the outer loop)."""
    o, r = Var("o"), Var("r")
    lo = max_(Const(0, "int32"), pad - o * stride)
    hi = min_(Const(kw, "int32"), n + pad - o * stride)
    n_out = (n + 2 * pad - kw) // stride + 1
    return o * stride + r - pad + shift, [(o, Const(0, "int32"), Const(n_out, "int32")), (r, lo, hi - lo)]


def _enumerate(index, loops):
    vals, env = [], {}

    def value(e):
        from aot.tir.expr import Bin
        if isinstance(e, Var):
            return env[id(e)]
        if isinstance(e, Const):
            return e.value
        a, b = value(e.a), value(e.b)
        return {"+": a + b, "-": a - b, "*": a * b, "min": min(a, b), "max": max(a, b)}[e.op]

    def go(k):
        if k == len(loops):
            vals.append(value(index))
            return
        v, mn, ext = loops[k]
        start = value(mn)
        for x in range(start, start + value(ext)):
            env[id(v)] = x
            go(k + 1)
    go(0)
    return min(vals), max(vals)


@pytest.mark.parametrize("n,pad,kw,stride", [(7, 1, 3, 1), (9, 2, 5, 2), (12, 0, 3, 3), (5, 3, 7, 1)])
def test_nest_endpoints_match_enumeration_on_clipped_windows(n, pad, kw, stride):
    for shift in (0, 3, -2):
        index, loops = _padded_nest(n, pad, kw, stride, shift)
        want = _enumerate(index, loops)
        assert _nest_endpoints(index, loops) == want
        assert endpoints(index, loops) == want


def test_nest_endpoints_match_enumeration_on_random_affine_nests():
    rng = np.random.default_rng(3)
    for _ in range(60):
        vs = [Var(f"v{k}") for k in range(3)]
        loops = [(v, Const(int(rng.integers(-2, 3)), "int32"), Const(int(rng.integers(1, 5)), "int32")) for v in vs]
        index = Const(int(rng.integers(-9, 10)), "int32")
        for v in vs:
            index = index + v * int(rng.integers(-4, 5))
        assert _nest_endpoints(index, loops) == _enumerate(index, loops)


def test_a_clipped_window_past_the_end_is_refused():
    """A nest on the slow (non-rectangular) path, proven once and shared: the shifted copy whose
    last window reads one element too far is still refused."""
    x, y = Buffer("x", "float32", (7,)), Buffer("y", "float32", (7,))

    def func(shift):
        index, ((o, _, n_out), (r, lo, ext)) = _padded_nest(7, 1, 3, 1, shift)
        body = For(o, 0, n_out, For(r, lo, ext, Store(y, o, Load(y, o) + Load(x, index))))
        return PrimFunc("w", [x, y], body, 1)
    assert verify_accesses(func(0)).unproven == 0
    with pytest.raises(AccessError, match=r"x\[1..7\] is outside its 7 elements"):
        verify_accesses(func(1))


def test_a_micro_kernel_past_the_end_is_refused_after_its_nest_was_proven():
    """dot_s8 reads n elements: a proven call in bounds does not let a longer one through."""
    from aot.tir.expr import Cast
    from aot.tir.flatten import flatten
    from aot.tir.stmt import Allocate

    def func(n):
        a, b, out = Buffer("a", "int8", (4, 8)), Buffer("b", "int8", (8,)), Buffer("out", "int32", (4,))
        acc = Buffer("acc", "int32", (1,), "local")
        i, k = Var("i"), Var("k")
        prod = Cast("int32", Load(a, (i, k))) * Cast("int32", Load(b, (k,)))
        body = For(i, 0, 4, Allocate(acc, Seq([Store(acc, 0, Const(0, "int32")),
                                               For(k, 0, n, Store(acc, 0, Load(acc, 0) + prod)),
                                               Store(out, i, Load(acc, 0))])))
        return flatten(PrimFunc("f", [a, b, out], tsch.tensorize(body, k, "dot_s8"), 2))
    for _ in range(2):
        assert verify_accesses(func(8)).checked > 0
        with pytest.raises(AccessError, match=r"a\[8..32\] is outside its 32 elements"):
            verify_accesses(func(9))


def _func_over(index, loops, size):
    """A nest of `loops` (innermost last) storing to x[index] for a buffer of `size` elements."""
    x = Buffer("x", "float32", (size,))
    body = Store(x, index, Const(0.0, "float32"))
    for v, mn, ext in reversed(loops):
        body = For(v, mn, ext, body)
    return PrimFunc("n", [x], body, 1)


def _refused_exactly_past(index, loops):
    """The nest is proven over the smallest buffer that holds it and refused one element shorter
    (or, reading below 0, always), at the enumerated range."""
    lo, hi = _enumerate(index, loops)
    assert _nest_endpoints(index, loops) == (lo, hi)
    if lo >= 0:
        assert verify_accesses(_func_over(index, loops, hi + 1)).unproven == 0
    with pytest.raises(AccessError, match=rf"x\[{lo}..{hi}\] is outside"):
        verify_accesses(_func_over(index, loops, hi))


def test_a_triangular_nest_is_not_taken_for_a_rectangle():
    """j runs to i (extent i+1) and from i (min i): the box of the loops' widest ranges would
    over- or under-state the index; the proof follows the outer loop."""
    i, j = Var("i"), Var("j")
    c0, c1 = Const(0, "int32"), Const(1, "int32")
    _refused_exactly_past(i * 4 + j, [(i, c0, Const(5, "int32")), (j, c0, i + c1)])
    _refused_exactly_past(i * 4 + j, [(i, c0, Const(5, "int32")), (j, i, Const(5, "int32") - i)])
    # the index reads only j, whose range still follows i
    _refused_exactly_past(j * 3 + 2, [(i, c0, Const(6, "int32")), (j, c0, i + c1)])


def test_negative_strides_take_their_ends_the_other_way_round():
    i, j = Var("i"), Var("j")
    c0 = Const(0, "int32")
    # a reversed copy, rectangular: x[15 - i*4 - j]
    _refused_exactly_past(Const(15, "int32") - i * 4 - j, [(i, c0, Const(4, "int32")), (j, c0, Const(4, "int32"))])
    # a reversed clipped window: the outer loop's coefficient is negative, its values enumerated
    index, loops = _padded_nest(9, 2, 5, 2, 0)
    (o, _, _), (r, _, _) = loops
    _refused_exactly_past(Const(20, "int32") - o * 2 - r, loops)
    _refused_exactly_past(Const(20, "int32") - o * 3 + r, loops)
    # one element under 0 is refused as well
    with pytest.raises(AccessError, match=r"x\[-1..14\] is outside"):
        verify_accesses(_func_over(Const(14, "int32") - i * 4 - j, [(i, c0, Const(4, "int32")), (j, c0, Const(4, "int32"))], 64))


def test_a_clamped_window_is_proven_by_its_clamp():
    """An index clamped by min/max (edge replication) is not linear in the loops: the clamp's
    constants decide, and a proof cached for one clamp is not reused for another."""
    o, r = Var("o"), Var("r")
    c0 = Const(0, "int32")
    loops = [(o, c0, Const(8, "int32")), (r, c0, Const(3, "int32"))]

    def clamped(top):
        return min_(max_(o + r - 1, c0), Const(top, "int32"))
    for top in (7, 8, 6):
        _refused_exactly_past(clamped(top), loops)
        _refused_exactly_past(clamped(top) * 2 + 5, loops)
    # an unclamped side still reads below 0
    with pytest.raises(AccessError, match=r"x\[-1..7\] is outside"):
        verify_accesses(_func_over(min_(o + r - 1, Const(7, "int32")), loops, 8))


def test_a_proof_cached_for_one_nest_shape_is_not_reused_for_a_longer_one():
    """Same index, same loop structure, one more output position: a different key."""
    for n in (7, 8, 7, 9):
        index, loops = _padded_nest(n, 1, 3, 1, 1)
        _refused_exactly_past(index, loops)


def test_a_window_too_large_to_enumerate_falls_back_to_the_symbolic_proof():
    index, loops = _padded_nest(6000, 2, 5, 1, 0)
    lo, hi = _enumerate(index, loops)
    assert _nest_endpoints(index, loops) == (lo, hi) == (0, 5999)


def test_an_inner_loop_empty_for_some_outer_values_still_gets_a_sound_range():
    """extent i - 1 is empty for i < 2: the enumeration stops and the symbolic proof (which
    covers those values too) decides; its range contains every executed index."""
    i, j = Var("i"), Var("j")
    c0, c1 = Const(0, "int32"), Const(1, "int32")
    loops = [(i, c0, Const(5, "int32")), (j, c0, i - c1)]
    lo, hi = _nest_endpoints(i * 4 + j, loops)
    assert lo <= 8 and hi >= 4 * 4 + 2


def test_a_2d_clipped_window_is_proven_row_and_column_apart():
    """Rows (oh, kh) and columns (ow, kw) bound no loop of the other: their ranges add up; a
    loop whose bounds read both joins them. Each case against enumeration, and refused one
    element short."""
    ih, ((oh, _, n_oh), (kh, kh_lo, kh_n)) = _padded_nest(9, 2, 5, 2, 0)
    iw, ((ow, _, n_ow), (kw, kw_lo, kw_n)) = _padded_nest(7, 1, 3, 1, 0)
    c0 = Const(0, "int32")
    loops = [(oh, c0, n_oh), (ow, c0, n_ow), (kh, kh_lo, kh_n), (kw, kw_lo, kw_n)]
    _refused_exactly_past(ih * 7 + iw, loops)
    _refused_exactly_past(ih * 7 - iw + 6, loops)
    # a depth loop whose extent reads both outer loops links the groups
    d = Var("d")
    linked = loops + [(d, c0, min_(Const(4, "int32"), Const(12, "int32") - oh - ow))]
    _refused_exactly_past(ih * 7 + iw + d * 100, linked)
