"""micro.Session with TVM's names: a session over a generated project's transport, and the AOT
executor it creates. Each run() hands the executor's inputs to the project's built runner (on
this machine, or the board's firmware under its emulator) and reads its outputs back."""
from __future__ import annotations

from ..errors import AotError
from ..runtime import cpu
from ..runtime.executor.aot_executor import ExecutorState


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
        """The project's model as a library for create_local_graph_executor."""
        self._check_open("get_system_lib")
        return SystemLib(self)


class SystemLib:
    """session.get_system_lib(): the model the project's runner was built with."""

    def __init__(self, session):
        self.session = session


def create_local_graph_executor(graph_json_str, mod, device, *args, **kwargs):
    """TVM's graph executor over a session's system library: the model runs as the project built
    it (its AOT main, one call per run()); graph_json_str must be the module's get_graph_json()."""
    import json
    if not isinstance(mod, SystemLib):
        raise AotError("create_local_graph_executor takes session.get_system_lib() as its module, not "
                       f"{type(mod).__name__}")
    try:
        graph = json.loads(graph_json_str)
        nulls = [n["name"] for n in graph["nodes"] if n.get("op") == "null"]
    except (TypeError, ValueError, KeyError):
        raise AotError("create_local_graph_executor: graph_json_str is not a graph executor's JSON "
                       "(give module.get_graph_json())") from None
    ex = AotExecutor(mod.session)
    names = [t["name"] for t in ex.input_info]
    missing = [n for n in names if n not in nulls]
    if missing:
        raise AotError(f"create_local_graph_executor: the graph JSON has no input {', '.join(missing)}: it is not the "
                       "JSON of the model this project was made from")
    return MicroGraphModule(ex)


class MicroGraphModule:
    """The graph executor's calls (set_input / run / get_output) over a session's executor. The
    parameters relay.build bound are constants of the compiled model: set_input of a parameter
    (set_input(**module.get_params())) is taken and changes nothing."""

    def __init__(self, ex):
        from ..runtime.executor.aot_executor import AotModule
        self._ex, self._aot = ex, AotModule(ex)

    def set_input(self, key=None, value=None, **params):
        names = [t["name"] for t in self._ex.input_info]
        items = ([(key, value)] if key is not None else []) + list(params.items())
        for k, v in items:
            if isinstance(k, str) and k not in names:
                continue          # a bound parameter: already in the model
            self._aot.set_input(k, v)

    def run(self, **inputs):
        self.set_input(**inputs)
        self._aot.run()

    def get_input(self, key, out=None):
        return self._aot.get_input(key, out)

    def get_output(self, index, out=None):
        return self._aot.get_output(index, out)

    def get_num_inputs(self):
        return self._aot.get_num_inputs()

    def get_num_outputs(self):
        return self._aot.get_num_outputs()


class AotExecutor(ExecutorState):
    """The executor a Session creates: the model's inputs and outputs as arrays it owns, one
    inference per run() by the project's runner."""

    def __init__(self, session):
        self.session = session
        info = session.transport.project.mlf.aot
        self.output_info = list(info["outputs"])
        super().__init__(info["inputs"], [(t["shape"], t["dtype"]) for t in self.output_info])

    def time_evaluator(self, func_name="run", dev=None, number=1, repeat=1, min_repeat_ms=0):
        """f() -> result with .mean / .results (seconds per run): the wall time of `number` runs
        through the transport, `repeat` times (on an emulated board, the emulator's time)."""
        import time
        if func_name != "run":
            raise AotError(f"time_evaluator: the AOT executor times 'run', not '{func_name}'")

        def evaluate():
            results = []
            for _ in range(max(int(repeat), 1)):
                t0 = time.perf_counter()
                for _ in range(max(int(number), 1)):
                    self.run()
                results.append((time.perf_counter() - t0) / max(int(number), 1))
            return _Timing(results)
        return evaluate

    def run(self):
        self.session._check_open("run")
        project = self.session.transport.project
        feed = {t["name"]: a.numpy() for t, a in zip(self.input_info, self.inputs)}
        outs = project.run(feed, timeout=self.session.timeout)
        for t, a in zip(self.output_info, self.outputs):
            a.copyfrom(outs[t["name"]])
        self.has_run = True


class _Timing:
    def __init__(self, results):
        self.results = list(results)
        self.mean = sum(self.results) / len(self.results)
