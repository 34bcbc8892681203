"""microTVM's Python API with TVM's names (tvm.micro), over aot's MLF, host runner and boards.

    template = aot.micro.get_microtvm_template_projects("crt")        # or "qemu-cortex-m4", ...
    project = aot.micro.generate_project(template, module, "project", {})
    project.build(); project.flash()
    with aot.micro.Session(project.transport()) as session:
        ex = aot.runtime.executor.aot_executor.AotModule(session.create_aot_executor())

"crt" is this machine with its C compiler; each emulated Cortex-M board (boards/) is a template
too. See project.py for what a generated project holds and how it runs."""
from .model_library_format import (UnsupportedInModelLibraryFormatError,  # noqa: F401
                                   export_model_library_format)
from .project import (GeneratedProject, NotATemplateProjectError, ProjectOptionError,  # noqa: F401
                      TemplateProject, TemplateProjectError, generate_project, generate_project_from_mlf,
                      get_microtvm_template_projects)
from .session import Session, SessionTerminatedError, create_local_graph_executor  # noqa: F401


def get_standalone_crt_dir():
    """The C runtime the MLF builds against (TVM's standalone CRT: headers and sources)."""
    import runtime_c
    import os
    return os.path.dirname(os.path.abspath(runtime_c.__file__))


def _refused(name, why):
    def refuse(*args, **kwargs):
        from ..errors import AotError
        raise AotError(f"micro.{name}: {why}")
    refuse.__name__ = name
    return refuse


# TVM's other micro names: refused by name, each with what to use instead
autotvm_build_func = _refused("autotvm_build_func", "autotuning is not offered; the schedules are the target's rules")
AutoTvmModuleLoader = _refused("AutoTvmModuleLoader", "autotuning is not offered; the schedules are the target's rules")
create_local_debug_executor = _refused("create_local_debug_executor", "per-kernel outputs come from `aot debug` "
                                       "(aot.debug), which compares each kernel with onnxruntime")
copy_crt_config_header = _refused("copy_crt_config_header", "the MLF's runtime/include holds what its C needs; there "
                                  "is no crt_config.h to configure")
