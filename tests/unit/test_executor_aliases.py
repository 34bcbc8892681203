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


def test_a_slice_that_would_stretch_a_pinned_buffer_past_its_shared_step_is_refused():
    """ONNX test_gru_bidirectional's shape: a concat input x pinned into the concat's output at
    the one step they share (56); a later slice placed in x would hold x to step 58, over the
    output's bytes while both are live. place refuses it, so the plan the pins make verifies."""
    from aot.executor.memory import Interval, Scratch, pin, place, plan_memory
    ivs = {"x": Interval(13, 56, Scratch("x", 20)), "cat": Interval(56, 62, Scratch("cat", 40)),
           "t": Interval(20, 58, Scratch("t", 20)), "other": Interval(40, 60, Scratch("other", 64))}
    al = Aliases()
    assert pin(al, ivs, "x", "cat", 0)
    assert not place(al, ivs, "t", "x", 0)
    assert (ivs["x"].first, ivs["x"].last) == (13, 56) and "t" not in al
    plan_memory(ivs, al, [("", None)], 16)          # verifies: no overlap but the pinned pair's step
    assert not pin(al, ivs, "t", "cat", 20)          # t and cat share steps 56..58


def test_a_pin_sharing_more_than_one_step_is_refused():
    from aot.executor.memory import Interval, Scratch, pin
    ivs = {"x": Interval(13, 58, Scratch("x", 20)), "cat": Interval(56, 62, Scratch("cat", 40))}
    al = Aliases()
    assert not pin(al, ivs, "x", "cat", 0) and "x" not in al
    assert not pin(al, ivs, "x", "cat", 20) and "x" not in al
