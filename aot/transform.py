"""tvm.transform: PassContext, the settings a build reads (opt_level, config, disabled passes), as a
context manager. relay.build maps the config keys this compiler has onto its options (CONFIG
below); a key it has no meaning for is named in one warning per context, not silently dropped,
since a user who sets it expects an effect."""
from __future__ import annotations

import threading
import warnings

from .errors import AotError

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
        _stack().append(self)
        return self

    def __exit__(self, *exc):
        stack = _stack()
        if len(stack) > 1 and stack[-1] is self:
            stack.pop()

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
