"""The fuzz tier: seeds 0-299 of the differential fuzzer (tests/fuzz/gen.py), each model compiled at -O0,
run under ASan/UBSan and compared with onnxruntime (onnx.reference where onnxruntime departs from the
spec). More seeds on demand: python bench/fuzz.py --seeds 0:10000 --jobs 2. The saved reproducers and
the shrinker: tests/host/test_fuzz_reproducers.py."""
import pytest

from fuzz.run import run_seed

from test_fuzz_reproducers import CI_SEEDS, OK, _refusal_ok  # noqa: F401


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", CI_SEEDS)
def test_seed(seed):
    r = run_seed(seed, opt="-O0")
    assert r.cls in OK or _refusal_ok(r), f"{r.line()}\nops: {', '.join(r.ops)}\n{r.detail}"
