"""tvm.ir.transform (also tvm.transform): PassContext, the settings a build reads (opt_level, config, disabled passes), as a
context manager. relay.build maps the config keys this compiler has onto its options (CONFIG
below); a key it has no meaning for is named in one warning per context, not silently dropped,
since a user who sets it expects an effect."""
from __future__ import annotations

import threading
import warnings

from ..errors import AotError

# config key -> what it does here. A key maps onto aot.compiler.Options (relay.build applies it)
# or is already what every build does (no option to set).
CONFIG = {
    "tir.disable_vectorize": "the generated C has no vector types in any case: loops marked vectorized "
                             "stay loops the C compiler may vectorize",
    "tir.usmp.enable": "static memory planning, which every build does (False is named in a warning)",
    "tir.usmp.use_workspace_io": "inputs and outputs in the workspace (Options.use_workspace_io)",
}
# config keys that take a bool
_BOOL_KEYS = ("tir.disable_vectorize", "tir.usmp.enable", "tir.usmp.use_workspace_io")

_local = threading.local()


def _stack():
    if not hasattr(_local, "stack"):
        _local.stack = [PassContext()]
    return _local.stack


class PassContext:
    """PassContext(opt_level=2, required_pass=None, disabled_pass=None, instruments=None, config=None).

    opt_level and the pass lists are recorded; this compiler runs one fixed pipeline (every
    level computes the same results), so they choose no passes."""

    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None, config=None,
                 **_tuning):
        for what, v in (("required_pass", required_pass), ("disabled_pass", disabled_pass),
                        ("instruments", instruments)):
            if v is not None and not isinstance(v, (list, tuple, set, frozenset)):
                raise AotError(f"PassContext: {what} must be a list, tuple or set, not {type(v).__name__}")
        if config is not None and not isinstance(config, dict):
            raise AotError(f"PassContext: config must be a dict, not {type(config).__name__}")
        self.opt_level = int(opt_level)
        self.required_pass = list(required_pass or [])
        self.disabled_pass = list(disabled_pass or [])
        self.instruments = list(instruments or [])
        self.config = dict(config or {})
        for k in _BOOL_KEYS:
            if k in self.config and not isinstance(self.config[k], (bool, int)):
                raise AotError(f"PassContext: config '{k}' takes a bool, not {self.config[k]!r}")
        notes = []
        unknown = sorted(k for k in self.config if k not in CONFIG)
        if unknown:
            notes.append(f"config {', '.join(repr(k) for k in unknown)} {'has' if len(unknown) == 1 else 'have'} "
                         f"no effect in this compiler (its keys: {', '.join(sorted(CONFIG))})")
        if self.config.get("tir.usmp.enable", True) is False:
            notes.append("config 'tir.usmp.enable' = False has no effect: every build plans its memory statically "
                         "(USMP's result), there is no run-time allocator to fall back to")
        if notes:
            warnings.warn("PassContext: " + "; ".join(notes), UserWarning, stacklevel=2)

    def __enter__(self):
        # as TVM: the instruments enter first, and the context is current only once all have
        _enter_instruments(self)
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        stack = _stack()
        if len(stack) > 1 and stack[-1] is self:
            stack.pop()
        _exit_instruments(self)

    def override_instruments(self, instruments):
        """The current instruments leave (exit_pass_ctx), the given ones take their place and enter
        (enter_pass_ctx), whether or not this context is entered, as TVM's."""
        if not isinstance(instruments, (list, tuple)):
            raise AotError(f"override_instruments takes a list of instruments, not {type(instruments).__name__}")
        _exit_instruments(self)
        self.instruments = list(instruments)
        _enter_instruments(self)

    @staticmethod
    def current():
        """The innermost PassContext entered (a default one outside any)."""
        return _stack()[-1]

    @staticmethod
    def list_configs():
        """{key: {"type": ..., "effect": ...}} of the config keys this compiler honours."""
        return {k: {"type": "IntImm" if k in _BOOL_KEYS else "runtime.String", "effect": v}
                for k, v in CONFIG.items()}

    def __repr__(self):
        return f"PassContext(opt_level={self.opt_level}, config={self.config})"


class PassInfo:
    def __init__(self, opt_level, name, required=None, traceable=False):
        self.opt_level, self.name = int(opt_level), str(name)
        self.required, self.traceable = list(required or []), bool(traceable)

    def __repr__(self):
        return f"The meta data of the pass - pass name: {self.name}, opt_level: {self.opt_level}, " \
               f"required passes: {self.required}"


class Pass:
    """A module -> module transformation: pass(mod). Subclasses give transform_module(mod, ctx)."""

    def __init__(self, info=None):
        self._info = info or PassInfo(0, type(self).__name__)

    @property
    def info(self):
        return self._info

    @info.setter
    def info(self, value):
        self._info = value

    def __call__(self, mod):
        ctx = PassContext.current()
        return run_instrumented(self.info, mod, lambda: self.transform_module(mod, ctx))

    def transform_module(self, mod, ctx):
        raise NotImplementedError(f"{self.info.name}.transform_module")


def run_instrumented(info, mod, run):
    """run() -> the new module, between the current context's instruments' hooks: every
    instrument's should_run is asked (none for a pass the context requires), and a pass one of them
    declines is not run; then each run_before_pass, the pass, each run_after_pass. A hook that
    raises stops the pass there (the context's exit still calls every exit_pass_ctx)."""
    ctx = PassContext.current()
    instruments = list(ctx.instruments)
    if info.name not in ctx.required_pass:
        answers = [_hook(i, "should_run", mod, info) for i in instruments]     # all asked, as TVM's
        if not all(answers):
            return mod
    for i in instruments:
        _hook(i, "run_before_pass", mod, info)
    out = run()
    for i in instruments:
        _hook(i, "run_after_pass", out, info)
    return out


def _hook(inst, hook, *args):
    """inst.hook(*args). An exception it raises comes out as the same Python exception type, its
    message's last line `Type: message` (TVM re-raises it through its FFI so, and programs print
    that line); our own errors come out as they are."""
    try:
        return getattr(inst, hook)(*args)
    except AotError:
        raise
    except Exception as e:        # noqa: BLE001  (re-raised, typed as it was)
        try:
            again = type(e)(f"pass instrument {type(inst).__name__}.{hook} raised:\n{type(e).__name__}: {e}")
        except Exception:         # noqa: BLE001  (an exception type that takes other arguments)
            raise e from None
        raise again from e


def _enter_instruments(ctx):
    """Each instrument's enter_pass_ctx in order. If one raises, those that entered exit (last
    first), the context keeps no instruments, and the exception goes on, as in TVM."""
    entered = []
    try:
        for i in ctx.instruments:
            _hook(i, "enter_pass_ctx")
            entered.append(i)
    except BaseException:
        ctx.instruments = []
        for i in reversed(entered):
            _hook(i, "exit_pass_ctx")
        raise


def _exit_instruments(ctx):
    """Each instrument's exit_pass_ctx in order; if one raises, the rest are not called, the
    context keeps no instruments, and the exception goes on, as in TVM."""
    try:
        for i in ctx.instruments:
            _hook(i, "exit_pass_ctx")
    except BaseException:
        ctx.instruments = []
        raise


class ModulePass(Pass):
    def __init__(self, fn, info):
        super().__init__(info)
        self._fn = fn

    def transform_module(self, mod, ctx):
        out = self._fn(mod, ctx)
        if out is None:
            raise AotError(f"module pass {self.info.name} returned nothing: a pass returns the module it makes")
        return out


class Sequential(Pass):
    """The passes in order; as TVM's, a pass runs when its opt_level is within the context's or
    it is required, and not when the context disables it by name."""

    def __init__(self, passes=None, opt_level=0, name="sequential", required=None, traceable=False):
        super().__init__(PassInfo(opt_level, name, required, traceable))
        self.passes = list(passes or [])
        for p in self.passes:
            if not callable(p):
                raise AotError(f"Sequential: {p!r} is not a pass")

    def transform_module(self, mod, ctx):
        for p in self.passes:
            info = getattr(p, "info", None)
            if info is not None:
                if info.name in ctx.disabled_pass:
                    continue
                if info.opt_level > ctx.opt_level and info.name not in ctx.required_pass:
                    continue
                for name in info.required:          # a pass's prerequisites run first, as TVM's
                    mod = get_pass(name)(mod)
            mod = p(mod)
        return mod


# pass name -> a function making that pass, for the passes other passes name as required
_PASSES: dict = {}


def register_pass(name, make):
    _PASSES[name] = make


def get_pass(name):
    """A new pass of that name (one another pass requires)."""
    if name not in _PASSES:
        raise AotError(f"pass {name!r} is required but no pass of that name is registered "
                       f"(registered: {', '.join(sorted(_PASSES)) or 'none'})")
    return _PASSES[name]()


def module_pass(pass_func=None, opt_level=None, name=None, required=None, traceable=False):
    """@module_pass(opt_level=2) over fn(mod, ctx) -> mod, or over a class whose
    transform_module(mod, ctx) does it: a Pass (for a class, a Pass class)."""
    if opt_level is None:
        raise AotError("module_pass: opt_level is needed")

    def create(arg):
        info = PassInfo(opt_level, name or arg.__name__, required, traceable)
        if isinstance(arg, type):
            class _Wrapped(ModulePass):
                def __init__(self, *args, **kwargs):
                    inst = arg(*args, **kwargs)
                    super().__init__(inst.transform_module, info)
                    self._inst = inst

                def __getattr__(self, attr):
                    return getattr(self.__dict__["_inst"], attr)
            _Wrapped.__name__ = arg.__name__
            return _Wrapped
        if callable(arg):
            return ModulePass(arg, info)
        raise AotError(f"module_pass decorates a function or a class, not {type(arg).__name__}")
    return create(pass_func) if pass_func is not None else create


def PrintIR(header="", show_meta_data=False):      # noqa: N802  (TVM's name)
    """A pass that prints the module and passes it on."""
    def show(mod, ctx):
        print(f"PrintIR({header}):\n{mod}")
        return mod
    return ModulePass(show, PassInfo(0, "PrintIR"))
