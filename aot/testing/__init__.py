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


# -- the decorators TVM's own tests wear (tvm.testing.requires_*, skip_if_32bit, main) --------
def _skip(func, reason):
    import pytest
    return pytest.mark.skip(reason=reason)(func)


def requires_micro(func):
    """microTVM's API is aot's: nothing to skip."""
    return func


def requires_llvm(func):
    """"llvm" is aot's host C path: nothing to skip."""
    return func


def requires_cmsisnn(func):
    """CMSIS-NN is aot's "cmsis-nn" partition target (relay.op.contrib.cmsisnn): nothing to skip."""
    return func


def requires_corstone300(func):
    return _skip(func, "the Arm Corstone-300 reference system (an FVP) is not a platform of aot")


def requires_package(*packages):
    """Skip unless every named Python package imports."""
    import importlib.util

    def wrap(func):
        absent = [p for p in packages if importlib.util.find_spec(p) is None]
        return _skip(func, f"needs the Python package(s) {', '.join(absent)}") if absent else func
    return wrap


def skip_if_32bit(reason):
    import struct

    def wrap(func):
        return _skip(func, reason) if struct.calcsize("P") == 4 else func
    return wrap


def main():
    """pytest over the calling test file (TVM's `if __name__ == "__main__": tvm.testing.main()`)."""
    import sys
    import pytest
    sys.exit(pytest.main([sys.argv[0], *sys.argv[1:]]))
