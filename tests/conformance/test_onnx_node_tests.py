"""The ONNX backend node tests: every case either passes or is refused with a reason; none
may give a wrong answer or generated code that fails to build. docs/operators.md is the
generated record of the run and must be up to date."""
import os

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.conformance, pytest.mark.xdist_group("conformance")]


def _names():
    from aot.conformance import cases
    return [c.name for c in cases()]


@pytest.fixture(scope="module")
def results():
    from aot.conformance import run_all
    return {r.name: r for r in run_all(jobs=2)}


@pytest.mark.parametrize("name", _names())
def test_node(results, name):
    r = results[name]
    assert r.status in ("pass", "refused"), f"{r.status}: {r.reason}"


def test_operator_table_up_to_date(results):
    from aot.conformance import table
    path = os.path.join(ROOT, "docs", "operators.md")
    with open(path) as f:
        current = f.read()
    fresh = table(sorted(results.values(), key=lambda r: r.name))
    assert current == fresh, "docs/operators.md is stale: run `python -m aot.conformance --write docs/operators.md`"
