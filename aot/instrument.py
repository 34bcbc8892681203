"""tvm.instrument: pass instruments, objects whose hooks a PassContext calls around every pass
it runs (enter_pass_ctx / exit_pass_ctx, should_run, run_before_pass, run_after_pass)."""
from __future__ import annotations

import time

from .errors import AotError

_HOOKS = ("enter_pass_ctx", "exit_pass_ctx", "should_run", "run_before_pass", "run_after_pass")


class PassInstrument:
    """The base of instruments: every hook does nothing (should_run says yes)."""

    def enter_pass_ctx(self):
        pass

    def exit_pass_ctx(self):
        pass

    def should_run(self, mod, info):
        return True

    def run_before_pass(self, mod, info):
        pass

    def run_after_pass(self, mod, info):
        pass


def pass_instrument(pi_cls=None):
    """@pass_instrument over a class with some of the hooks: a PassInstrument class."""
    def wrap(cls):
        if not isinstance(cls, type):
            raise AotError("pass_instrument decorates a class")
        if not any(hasattr(cls, h) for h in _HOOKS):
            raise AotError(f"pass_instrument: class {cls.__name__} has none of the hooks {', '.join(_HOOKS)}")
        return type(cls.__name__, (cls, PassInstrument), {})
    return wrap(pi_cls) if pi_cls is not None else wrap


class PassTimingInstrument(PassInstrument):
    """Times each pass; render() lists them."""

    def __init__(self):
        self._start, self.times = {}, []

    def run_before_pass(self, mod, info):
        self._start[info.name] = time.perf_counter()

    def run_after_pass(self, mod, info):
        self.times.append((info.name, time.perf_counter() - self._start.pop(info.name, time.perf_counter())))

    @staticmethod
    def render():
        from .transform import PassContext
        ctx = PassContext.current()
        timers = [i for i in ctx.instruments if isinstance(i, PassTimingInstrument)]
        return "\n".join(f"{name}: {t * 1e6:.0f}us" for i in timers for name, t in i.times)
