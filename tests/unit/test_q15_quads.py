"""Q15Quads (aot/schedules/arm_q15.py): pw_s8's compile-time int16 weight layout, checked value by
value against its description written out with loops."""
import numpy as np
import pytest

from aot.schedules.arm_q15 import Q15Quads


def _expected(rows, cout, cin):
    """The layout by its definition: blocks of four channels (zero rows padding the last), each
    block's groups as [values 0 and 2 of channels 0..3][values 1 and 3 of channels 0..3], then the
    leftovers channel by channel."""
    out = []
    for b in range((cout + 3) // 4):
        chans = [rows[c] if c < cout else np.zeros(cin, np.int64) for c in range(4 * b, 4 * b + 4)]
        for g in range(cin // 4):
            for pair in ((0, 2), (1, 3)):
                for ch in chans:
                    out += [ch[4 * g + pair[0]], ch[4 * g + pair[1]]]
        for k in range(4 * (cin // 4), cin):
            out += [ch[k] for ch in chans]
    return np.array(out, "<i2")


@pytest.mark.parametrize("cout, cin, sw, wbase", [(4, 8, 8, 0), (7, 11, 11, 0), (9, 33, 40, 5), (1, 3, 0, 2),
                                                  (16, 64, 64, 0)])
def test_the_layout_is_its_definition(cout, cin, sw, wbase):
    rng = np.random.default_rng(cout * 100 + cin)
    w = rng.integers(-128, 128, size=wbase + sw * (cout - 1) + cin + 3).astype(np.int8)
    rows = np.stack([w[wbase + c * sw: wbase + c * sw + cin].astype(np.int64) for c in range(cout)])
    q = Q15Quads(cout, cin, sw, wbase)
    got = q.apply(w)
    assert got.dtype == np.int8 and got.shape == q.shape(w.shape) == (q.block_bytes * ((cout + 3) // 4),)
    np.testing.assert_array_equal(got.view("<i2"), _expected(rows, cout, cin))
