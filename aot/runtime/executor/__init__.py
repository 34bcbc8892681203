"""runtime.executor with TVM's names: aot_executor.AotModule (a micro Session's AOT executor, or
a local relay.build module's)."""
from . import aot_executor  # noqa: F401
from .aot_executor import AotModule  # noqa: F401
