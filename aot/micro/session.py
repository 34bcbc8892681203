"""micro.Session with TVM's names: a session over a generated project's transport, and the AOT
executor it creates. Each run() hands the executor's inputs to the project's built runner (on
this machine, or the board's firmware under its emulator) and reads its outputs back."""
from __future__ import annotations

import numpy as np

from ..errors import AotError
from ..runtime import NDArray, cpu


class SessionTerminatedError(AotError):
    """The session was used after it was closed."""


class Session:
    """with Session(project.transport()) as session: session.create_aot_executor()"""

    def __init__(self, transport_context_manager=None, session_name="micro-rpc", timeout_override=None):
        if transport_context_manager is None or not hasattr(transport_context_manager, "project"):
            raise AotError("Session takes a generated project's transport: Session(project.transport())")
        self.transport = transport_context_manager
        self.session_name = session_name
        self.timeout = 600 if timeout_override is None else float(getattr(timeout_override, "session_start_timeout_sec",
                                                                          timeout_override))
        self._open = False

    @property
    def device(self):
        return cpu(0)

    def __enter__(self):
        self.transport.open()
        self._open = True
        return self

    def __exit__(self, *exc):
        self._open = False
        self.transport.close()

    def _check_open(self, what):
        if not self._open:
            raise SessionTerminatedError(f"{what}: the session is not open (use it inside `with Session(...)`)")

    def create_aot_executor(self):
        """The AOT executor of the project's model; wrap it in aot_executor.AotModule."""
        self._check_open("create_aot_executor")
        return AotExecutor(self)

    def get_system_lib(self):
        raise AotError("Session.get_system_lib: aot's projects run the AOT executor only; use "
                       "session.create_aot_executor() (the graph executor's system library is not built)")


class AotExecutor:
    """The executor a Session creates: the model's inputs and outputs as arrays it owns, one
    inference per run() by the project's runner."""

    def __init__(self, session):
        self.session = session
        info = session.transport.project.mlf.aot
        self.input_info = list(info["inputs"])
        self.output_info = list(info["outputs"])
        self.inputs = [NDArray(np.zeros(t["shape"], t["dtype"])) for t in self.input_info]
        self.outputs = [NDArray(np.zeros(t["shape"], t["dtype"])) for t in self.output_info]
        self.has_run = False

    def input_index(self, key):
        names = [t["name"] for t in self.input_info]
        if isinstance(key, (int, np.integer)):
            if not 0 <= int(key) < len(names):
                raise AotError(f"input index {key} out of range: the model has {len(names)} input(s)")
            return int(key)
        if key not in names:
            raise AotError(f"the model has no input named '{key}' (its inputs: {', '.join(names)})")
        return names.index(key)

    def run(self):
        self.session._check_open("run")
        project = self.session.transport.project
        feed = {t["name"]: a.numpy() for t, a in zip(self.input_info, self.inputs)}
        outs = project.run(feed, timeout=self.session.timeout)
        for t, a in zip(self.output_info, self.outputs):
            a.copyfrom(outs[t["name"]])
        self.has_run = True
