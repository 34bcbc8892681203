"""micro.testing.evaluation with TVM's names: compile a model and open a session on a template's
board (create_aot_session), and label samples through it (predict_labels_aot). Tuning is not
offered: the schedules are the target's rules."""
from __future__ import annotations

import tempfile
from pathlib import Path

from ...errors import AotError


def tune_model(platform, board, target, mod, params, num_trials, tuner_cls=None, project_options=None):
    raise AotError("tune_model: autotuning is not offered; the schedules are the target's rules")


def create_aot_session(platform, board, target, mod, params, build_dir=None, tune_logs=None, timeout_override=None,
                       use_cmsis_nn=False, project_options=None, use_existing=False):
    """A Session on the model built with the AOT executor for `platform`'s template ("crt" or an
    emulated board), its project made in build_dir/project, built and flashed."""
    from ... import relay
    from ...relay.backend import Executor, Runtime
    from ...transform import PassContext
    from ..project import GeneratedProject, generate_project, get_microtvm_template_projects
    from ..session import Session
    if tune_logs is not None:
        raise AotError("create_aot_session: tune_logs are autotvm's; there is no tuning to apply here")
    if use_cmsis_nn:
        raise AotError("create_aot_session: use_cmsis_nn: CMSIS-NN is not a backend here (the Cortex-M schedules "
                       "use the DSP / Helium kernels of aot's own rules)")
    build_dir = Path(build_dir) if build_dir is not None else Path(tempfile.mkdtemp())
    with PassContext(opt_level=3, config={"tir.disable_vectorize": True}):
        lowered = relay.build(mod, target=target, params=params, runtime=Runtime("crt", {"system-lib": True}),
                              executor=Executor("aot"))
    options = dict(project_options or {})
    options.pop("board", None)           # the template is the board
    if use_existing:
        project = GeneratedProject.from_directory(build_dir / "project", options)
    else:
        project = generate_project(get_microtvm_template_projects(platform), lowered, build_dir / "project", options)
    project.build()
    project.flash()
    return Session(project.transport(), timeout_override=timeout_override)


def predict_labels_aot(session, aot_executor, input_data, runs_per_sample=1):
    """(label, seconds per run) for each sample: the argmax of output 0 after running it."""
    if aot_executor.get_num_inputs() != 1 or aot_executor.get_num_outputs() != 1:
        raise AotError("predict_labels_aot: the model must have one input and one output")
    for sample in input_data:
        aot_executor.get_input(0).copyfrom(sample)
        result = aot_executor.module.time_evaluator("run", session.device, number=runs_per_sample)()
        yield int(aot_executor.get_output(0).numpy().argmax()), result.mean
