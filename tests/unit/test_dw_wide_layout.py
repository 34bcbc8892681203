"""dw_s8w's constants (aot/schedules/arm_dw.py DwWide, aot/schedules/requant_table.py FoldedBias
doubled), checked against layouts written out element by element here."""
import numpy as np

from aot.schedules.arm_dw import DwWide
from aot.schedules.requant_table import FoldedBias
from aot.tir.schedule import PackLayout


def _int16s(b):
    return b.view("<i2").astype(np.int64)


def test_dw_wide_stores_each_taps_groups_of_four_channels_0_2_1_3_doubled():
    rng = np.random.default_rng(0)
    C, KH, KW = 12, 3, 3
    w = rng.integers(-128, 128, (C, KH, KW, 1)).astype(np.int8)      # TFLite's, as the rule sees it
    pack = PackLayout(0, C)                                           # tap-major: [.., KH, KW, 1, C]
    got = _int16s(DwWide(pack, C).apply(w))
    assert DwWide(pack, C).shape(w.shape) == (2 * w.size,) and got.size == w.size
    for r in range(KH):
        for s in range(KW):
            for k in range(C):
                slot = 4 * (k // 4) + (0, 2, 1, 3)[k % 4]
                assert got[(r * KW + s) * C + slot] == 2 * int(w[k, r, s, 0])


def test_dw_wide_without_a_pack_takes_rows_of_the_channels_as_they_are():
    w = np.arange(-64, 64, dtype=np.int8).reshape(1, 2, 4, 16)
    got = _int16s(DwWide(None, 16).apply(w)).reshape(8, 16)
    ref = w.reshape(8, 4, 4)[:, :, [0, 2, 1, 3]].reshape(8, 16).astype(np.int64) * 2
    np.testing.assert_array_equal(got, ref)


def _table(bias, mult, shift, doubled):
    fold = FoldedBias(("mult", "shift"), (1, 2), cout=bias.size, cin=9, sw=1, wbase=0, off=-3, zp=5, wide=True,
                      doubled=doubled)
    return fold.apply(bias, mult, shift).astype(np.int64)


def test_the_wide_table_doubles_its_biases_only_where_it_is_fast():
    bias = np.array([100, -7, 1 << 20, -(1 << 20)], np.int32)
    mult = np.full(4, 1 << 30, np.int32)
    right = np.full(4, -8, np.int32)              # every shift right: the folded form holds
    t = _table(bias, mult, right, True)
    assert t[1::4].all()
    np.testing.assert_array_equal(t[0::4], 2 * bias.astype(np.int64))
    np.testing.assert_array_equal(_table(bias, mult, right, False)[0::4], bias)
    left = right.copy()
    left[2] = 1                                   # one left shift: the exact form, its biases as they are
    t = _table(bias, mult, left, True)
    assert not t[1::4].any()
    np.testing.assert_array_equal(t[0::4], bias)
