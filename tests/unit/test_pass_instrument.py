"""tvm.ir.instrument: which hooks a PassContext calls, in which order, and what happens when one
raises (as TVM's src/ir/transform.cc does it), override_instruments, and PassTimingInstrument's
render format."""
import re

import pytest

import aot
from aot import relay
from aot.ir.instrument import PassInstrument, PassTimingInstrument, pass_instrument
from aot.transform import PassContext, Sequential, module_pass


def _identity(name, opt_level=0):
    return module_pass(lambda mod, ctx: mod, opt_level=opt_level, name=name)


def _mod():
    x = relay.var("x", shape=(2,))
    return relay.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))


@pass_instrument
class Log:
    def __init__(self, name, log, bad=(), run=True):
        self.name, self.log, self.bad, self.run = name, log, bad, run

    def _hook(self, what):
        self.log.append(f"{self.name}.{what}")
        if what in self.bad:
            raise ValueError(f"{self.name} bad {what}")

    def enter_pass_ctx(self):
        self._hook("enter")

    def exit_pass_ctx(self):
        self._hook("exit")

    def should_run(self, mod, info):
        self._hook("should_run")
        return self.run

    def run_before_pass(self, mod, info):
        self._hook("before")

    def run_after_pass(self, mod, info):
        self._hook("after")


def test_decorated_class_is_an_instrument_with_its_name():
    assert issubclass(Log, PassInstrument) and Log.__name__ == "Log"
    assert aot.ir.instrument.PassTimingInstrument is aot.instrument.PassTimingInstrument


def test_hooks_in_order_around_a_pass():
    log = []
    with PassContext(instruments=[Log("a", log), Log("b", log)]):
        _identity("P")(_mod())
    assert log == ["a.enter", "b.enter", "a.should_run", "b.should_run", "a.before", "b.before", "a.after",
                   "b.after", "a.exit", "b.exit"]


def test_should_run_false_skips_the_pass_but_every_instrument_is_asked():
    log, ran = [], []
    p = module_pass(lambda mod, ctx: ran.append(1) or mod, opt_level=0, name="P")
    with PassContext(instruments=[Log("a", log, run=False), Log("b", log)]):
        p(_mod())
    assert ran == [] and log == ["a.enter", "b.enter", "a.should_run", "b.should_run", "a.exit", "b.exit"]
    log.clear()
    with PassContext(required_pass=["P"], instruments=[Log("a", log, run=False)]):
        p(_mod())             # a required pass is not asked about
    assert ran == [1] and log == ["a.enter", "a.before", "a.after", "a.exit"]


def test_bad_enter_exits_those_entered_and_drops_the_instruments():
    log = []
    ctx = PassContext(instruments=[Log("a", log), Log("b", log, bad=("enter",)), Log("c", log)])
    with pytest.raises(ValueError) as e:
        with ctx:
            pass
    assert str(e.value).split("\n")[-1] == "ValueError: b bad enter"
    assert log == ["a.enter", "b.enter", "a.exit"]
    assert ctx.instruments == [] and PassContext.current() is not ctx


def test_bad_exit_stops_the_exits_there():
    log = []
    ctx = PassContext(instruments=[Log("a", log), Log("b", log, bad=("exit",)), Log("c", log)])
    with pytest.raises(ValueError):
        with ctx:
            pass
    assert log == ["a.enter", "b.enter", "c.enter", "a.exit", "b.exit"]
    assert ctx.instruments == [] and PassContext.current() is not ctx


def test_bad_run_before_stops_the_pass_and_the_context_still_exits_all():
    log = []
    with pytest.raises(ValueError):
        with PassContext(instruments=[Log("a", log), Log("b", log, bad=("before",)), Log("c", log)]):
            _identity("P")(_mod())
    assert log == ["a.enter", "b.enter", "c.enter", "a.should_run", "b.should_run", "c.should_run", "a.before",
                   "b.before", "a.exit", "b.exit", "c.exit"]


def test_override_instruments_exits_the_old_and_enters_the_new():
    log = []
    ctx = PassContext.current()
    ctx.override_instruments([Log("a", log)])
    try:
        _identity("P")(_mod())
        ctx.override_instruments([Log("b", log)])
    finally:
        ctx.override_instruments([])
    assert log == ["a.enter", "a.should_run", "a.before", "a.after", "a.exit", "b.enter", "b.exit"]


def test_sequential_runs_required_passes_and_skips_by_opt_level():
    names = []

    @pass_instrument
    class Names:
        def run_before_pass(self, mod, info):
            names.append(info.name)
    with PassContext(opt_level=2, instruments=[Names()]):
        relay.transform.FoldScaleAxis()(_mod())
    assert names == ["FoldScaleAxis", "FoldConstant"]       # the opt_level-3 folds are skipped
    names.clear()
    with PassContext(opt_level=3, instruments=[Names()]):
        Sequential([relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "default"]})])(_mod())
    assert names == ["sequential", "InferType", "CanonicalizeOps", "ConvertLayout"]


def test_timing_render_nests_and_clears_on_exit():
    timing = PassTimingInstrument()
    with PassContext(opt_level=3, instruments=[timing]):
        Sequential([_identity("A"), Sequential([_identity("B")], name="inner")], name="outer")(_mod())
        text = PassTimingInstrument.render()
    lines = text.split("\n")
    assert lines[-1] == ""
    line = r"(\t*)(\w+): (\d+)us \[(\d+)us\] \((\d+\.\d\d)%; (\d+\.\d\d)%\)"
    rows = [re.fullmatch(line, x).groups() for x in lines[:-1]]
    assert [(len(r[0]), r[1]) for r in rows] == [(0, "outer"), (1, "A"), (1, "inner"), (2, "B")]
    assert rows[0][4] == rows[0][5] == "100.00"          # the only top-level pass
    assert PassTimingInstrument.render() == ""             # leaving the context cleared the profile


def test_pass_instrument_refuses_a_non_class():
    with pytest.raises(aot.errors.AotError):
        pass_instrument(lambda: None)
