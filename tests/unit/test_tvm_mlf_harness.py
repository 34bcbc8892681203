"""bench/tvm_mlf_tests.py's counting rules, on a made-up test file (no TVM checkout needed): each
assert and pytest.raises counts per parameter set; a failing assert does not stop the ones after it;
an assert not reached because the test raised is unmet with that error; a branch the parameters do
not take is not owed; a test with no assertion owes one, that it runs to its end."""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SRC = '''
import pytest
import os


def helper(x):
    assert x > 0


@pytest.mark.parametrize("kind", ["graph", "aot"])
def test_params(kind):
    assert 1 == 1
    assert 1 == 2, "fails, the next one still runs"
    if kind == "graph":
        assert kind == "graph"
    helper(1)


def test_raises_then_stops():
    with pytest.raises(ValueError):
        int("x")
        assert False      # dead once the error comes: not counted
    with pytest.raises(KeyError):
        pass
    raise RuntimeError("boom")
    assert True


def test_no_asserts():
    os.getcwd()


def test_fixture(tmp_path_factory):
    assert True


@pytest.mark.parametrize("kind", ["graph", "aot"])
def test_stops_early(kind):
    raise ValueError("early")
    if kind == "graph":
        assert True
    assert True
'''


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location("tvm_mlf_tests", ROOT / "bench" / "tvm_mlf_tests.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return mod


def _run(harness, monkeypatch, name):
    monkeypatch.setattr(harness, "git_show", lambda repo, ref, path: SRC)
    ns, rw, tree, errors = harness.load_module("unused", "tests/fake_test.py", 0)
    return {r["id"]: [(s["key"].rsplit(":", 1)[-1] if s["key"].count(":") == 1 else s["key"], s["ok"], s["why"])
                      for s in r["sites"]] for r in harness.run_test("tests/fake_test.py", name, ns, rw, errors, 0)}


def test_counts_each_assert_per_parameter_set(harness, monkeypatch):
    got = _run(harness, monkeypatch, "test_params")
    assert got["graph"] == [("12", True, ""), ("13", False, "assertion false"), ("15", True, ""), ("7", True, "")]
    # the graph-only branch is not owed by the aot parameter set, which ran to its end
    assert got["aot"] == [("12", True, ""), ("13", False, "assertion false"), ("7", True, "")]


def test_raises_counted_and_unreached_asserts_unmet(harness, monkeypatch):
    got = _run(harness, monkeypatch, "test_raises_then_stops")[""]
    assert got[0] == ("20", True, "")
    assert got[1] == ("23", False, "no KeyError raised")
    assert got[2] == ("26", False, "not reached: RuntimeError: boom")
    assert len(got) == 3


def test_no_assert_owes_running_to_the_end(harness, monkeypatch):
    got = _run(harness, monkeypatch, "test_no_asserts")[""]
    assert [(ok, why) for _, ok, why in got] == [(True, "")]


def test_fixture_not_supplied_is_unmet(harness, monkeypatch):
    got = _run(harness, monkeypatch, "test_fixture")[""]
    assert got == [("34", False, "not reached: fixture tmp_path_factory cannot be supplied")]


def test_early_error_owes_branch_by_parameter(harness, monkeypatch):
    got = _run(harness, monkeypatch, "test_stops_early")
    assert [k for k, _, _ in got["graph"]] == ["41", "42"]
    assert [k for k, _, _ in got["aot"]] == ["42"]
    assert all(not ok and why == "not reached: ValueError: early" for k, ok, why in got["graph"] + got["aot"])
