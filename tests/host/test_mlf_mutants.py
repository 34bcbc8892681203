"""A sample of the MLF mutants (tests/mlf_mutate.py; the 1,000-mutant run is in the fuzz tier):
each is refused by a one-line AotError before any compiler starts, or builds and gives the
untampered MLF's outputs exactly. Half of them have their digests recomputed after the change,
so that only the semantic cross-checks stand in their way."""
from conftest import SHARED
from mlf_mutate import campaign, report


def test_mlf_mutant_sample(tmp_path):
    counts, failures, builds, seconds = campaign(SHARED, str(tmp_path), 160, seed=0)
    print(f"\n{report(counts)}\n{builds} builds, {seconds:.1f} s")
    assert not failures, "\n".join(failures)
    refused = sum(c for (_, v), c in counts.items() if v == "refused")
    matched = sum(c for (_, v), c in counts.items() if v == "matched")
    assert refused > 100 and matched > 10, counts        # both outcomes are exercised
