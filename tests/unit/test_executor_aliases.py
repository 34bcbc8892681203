"""The executor's one alias relation (aot/executor/memory.py): 'tensor lives inside host at
offset', whose kind says how the planner treats the pair: in place (the host's storage, not
planned), slice (inside the host, not planned) or pin (planned with its host as one cluster)."""
from aot.executor import Arg
from aot.executor.memory import IN_PLACE, PIN, SLICE, Aliases, Home


def test_in_place_and_slices_lead_home_and_pins_are_planned():
    al = Aliases()
    al.add("b", "a", 0, IN_PLACE)        # b written over a
    al.add("a", "cat", 64, SLICE)        # a produced into its slice of cat
    al.add("s", "b", 0, PIN)             # s written over the start of b
    assert al.find("b") == "a" and al.find("a") == "a"      # in-place writes only
    assert al.home("b") == Home("cat", 64) and al.home("cat") == Home("cat", 0)
    assert al.home("s") == Home("s", 0)  # a pinned tensor is planned where its pin puts it
    assert [k for k in ("a", "b", "cat", "s") if al.planned(k)] == ["cat", "s"]
    assert al.pin("s") == ("b", 0) and al.pin("b") is None
    assert al.pinned() == {"s", "b"} and al.in_place() == {"b"}
    al.remove("a")
    assert al.home("b") == Home("a", 0) and "a" not in al


def test_a_workspace_argument_is_placed_by_its_offset():
    ws = Arg("workspace", None, "float32", key=12345)
    ws.pool, ws.offset = 1, 64
    assert ws.place == ("workspace", 1, 64)
    assert Arg("input", 0, "float32").place == ("input", 0, 0)
