"""tvm.ir.instrument (also tvm.instrument): pass instruments, objects whose hooks a PassContext
calls around every pass it runs (enter_pass_ctx / exit_pass_ctx, should_run, run_before_pass,
run_after_pass). They live with the pass infrastructure (aot/ir/transform.py), whose PassContext
calls them; what happens when a hook raises is PassContext's business (see there)."""
from __future__ import annotations

import time

from ..errors import AotError

HOOKS = ("enter_pass_ctx", "exit_pass_ctx", "should_run", "run_before_pass", "run_after_pass")


class PassInstrument:
    """The base of instruments: every hook does nothing (should_run says yes). Subclass it, or
    decorate a plain class with @pass_instrument."""

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

    def __repr__(self):
        return type(self).__name__


def pass_instrument(pi_cls=None):
    """@pass_instrument over a class with some of the hooks: a PassInstrument class of the same
    name (a class already derived from PassInstrument is returned as it is)."""
    def wrap(cls):
        if not isinstance(cls, type):
            raise AotError(f"pass_instrument decorates a class, not {type(cls).__name__}")
        if issubclass(cls, PassInstrument):
            return cls
        wrapped = type(cls.__name__, (cls, PassInstrument), {"__doc__": cls.__doc__, "__module__": cls.__module__})
        return wrapped
    return wrap(pi_cls) if pi_cls is not None else wrap


# -- timing ------------------------------------------------------------------------------------------
# One profile tree per process, as TVM keeps one per thread: every PassTimingInstrument records
# into it, render() is static, and leaving a context with a timing instrument clears it.
class _Profile:
    def __init__(self, name):
        self.name, self.children = name, []
        self.start = self.end = time.perf_counter()

    @property
    def duration_us(self):
        return (self.end - self.start) * 1e6


_ROOT = _Profile("root")
_STACK: list = []


class PassTimingInstrument(PassInstrument):
    """Times each pass, nested passes under the pass that runs them; render() gives the tree."""

    def run_before_pass(self, mod, info):
        cur = _STACK[-1] if _STACK else _ROOT
        p = _Profile(info.name)
        cur.children.append(p)
        _STACK.append(p)

    def run_after_pass(self, mod, info):
        if not _STACK:
            raise AotError(f"PassTimingInstrument: pass {info.name} ended without having started")
        _STACK.pop().end = time.perf_counter()

    def exit_pass_ctx(self):
        # a pass that raised left its entry open: leaving the context forgets it with the rest
        _ROOT.children.clear()
        _STACK.clear()

    @staticmethod
    def render():
        """One line per pass, in the order they ran, nested ones indented by a tab:
        `name: total_us [self_us] (% of all top-level passes; % of its parent)`, as TVM's."""
        if _STACK:
            raise AotError("PassTimingInstrument.render: cannot render the profile while a pass is running")
        top = sum(p.duration_us for p in _ROOT.children)
        lines = []

        def walk(p, depth, parent_us):
            own = p.duration_us - sum(c.duration_us for c in p.children)
            total_pct = p.duration_us / top * 100 if top else 0.0
            parent_pct = p.duration_us / parent_us * 100 if parent_us else 0.0
            lines.append(f"{chr(9) * depth}{p.name}: {p.duration_us:.0f}us [{own:.0f}us] "
                         f"({total_pct:.2f}%; {parent_pct:.2f}%)\n")
            for c in p.children:
                walk(c, depth + 1, p.duration_us)
        for p in _ROOT.children:
            walk(p, 0, top)
        return "".join(lines)


@pass_instrument
class PassPrintingInstrument:
    """Prints the module before the passes named in print_before_pass_names, after those in
    print_after_pass_names."""

    def __init__(self, print_before_pass_names, print_after_pass_names):
        self.print_before_pass_names = print_before_pass_names
        self.print_after_pass_names = print_after_pass_names

    def run_before_pass(self, mod, pass_info):
        if pass_info.name in self.print_before_pass_names:
            print(f"Print IR before: {pass_info.name}\n{mod}\n\n")

    def run_after_pass(self, mod, pass_info):
        if pass_info.name in self.print_after_pass_names:
            print(f"Print IR after: {pass_info.name}\n{mod}\n\n")


@pass_instrument
class PrintAfterAll:
    """Prints each pass's info and the module after it."""

    def run_after_pass(self, mod, info):
        print(f"After Running Pass: {info}")
        print(mod)


@pass_instrument
class PrintBeforeAll:
    """Prints each pass's info and the module before it."""

    def run_before_pass(self, mod, info):
        print(f"Before Running Pass: {info}")
        print(mod)
