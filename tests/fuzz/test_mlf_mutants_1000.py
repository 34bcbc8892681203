"""1,000 mutants of real MLFs (tests/mlf_mutate.py: header macros, metadata fields, member lists,
contents and sizes, truncation; half of them with their digests recomputed): each is refused by a
one-line AotError before any compiler starts, or builds and gives the untampered outputs exactly."""
import pytest

from conftest import SHARED
from mlf_mutate import campaign, report


@pytest.mark.fuzz
def test_mlf_1000_mutants(tmp_path):
    counts, failures, builds, seconds = campaign(SHARED, str(tmp_path), 1000, seed=0)
    print(f"\n{report(counts)}\n{builds} builds, {seconds:.1f} s")
    assert not failures, "\n".join(failures)
    assert sum(counts.values()) == 1000
