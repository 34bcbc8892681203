"""TVM's tvm.testing: the checks tutorials and tests call (assert_allclose, ...). Submodules:
aot.testing.aot (the AOT compile-and-run helpers of tvm.testing.aot)."""
from __future__ import annotations

import numpy as np


def assert_allclose(actual, desired, rtol=1e-7, atol=1e-7, verbose=True):
    """numpy's assert_allclose over arrays or aot NDArrays, with TVM's defaults (atol 1e-7, where
    numpy's is 0) and a shape check first, as TVM's does."""
    actual = np.asanyarray(actual.numpy() if hasattr(actual, "numpy") else actual)
    desired = np.asanyarray(desired.numpy() if hasattr(desired, "numpy") else desired)
    np.testing.assert_allclose(actual.shape, desired.shape)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=verbose)


def assert_prim_expr_equal(lhs, rhs):
    """Two index expressions equal after simplification."""
    from ..tir.simplify import simplify
    a, b = simplify(lhs), simplify(rhs)
    if str(a) != str(b):
        raise AssertionError(f"{a} != {b}")


def device_enabled(target):
    """Whether `target`'s device exists on this machine (TVM's tvm.testing.device_enabled)."""
    from ..runtime import device
    try:
        return device(str(target).split()[0]).exist
    except Exception:  # noqa: BLE001 -- an unknown name is simply not enabled
        return False
