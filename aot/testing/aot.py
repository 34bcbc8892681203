"""testing.aot with TVM's names: compile relay modules with the AOT executor and check them
running, against reference outputs computed without this compiler.

    output_list = generate_ref_data(mod, inputs)          # numpy (or the framework's runtime)
    compile_and_run(AOTTestModel(module=mod, inputs=inputs, outputs=output_list), AOT_DEFAULT_RUNNER,
                    interface_api="c", use_unpacked_api=True, target="c")

compile_and_run exports each model's Model Library Format into test_dir, writes a C test
program that feeds the model its inputs from embedded arrays, runs tvmgen_<name>_run and
compares every output element with the expected value, then builds it with the host compiler and
runs it: it prints AOT_TEST_SUCCESS, or AOT_TEST_FAILURE with the first mismatches, and a failure
raises AssertionError. The runner's prologue, epilogue and includes go into that program's main
as in TVM; its makefile names the platform ("default": this machine)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from typing import Any, Dict, List, NamedTuple, Optional, Union

import numpy as np

from ..errors import AotError, BuildError

AOT_SUCCESS_TOKEN = "AOT_TEST_SUCCESS"
AOT_FAILURE_TOKEN = "AOT_TEST_FAILURE"
MAKEFILES = ("default",)          # the platforms a runner may name: this machine


class AOTTestModel(NamedTuple):
    """A model to test: the relay module, {input name: array}, {output name: expected array}."""
    module: Any
    inputs: Dict[str, np.ndarray]
    outputs: Dict[str, np.ndarray]
    output_tolerance: Optional[Union[int, float]] = None
    name: str = "default"
    params: Optional[Dict[str, np.ndarray]] = None
    extra_memory_in_bytes: int = 0


class AOTCompiledTestModel(NamedTuple):
    model: AOTTestModel
    executor_factory: Any


class AOTDataLinkage(NamedTuple):
    """Where the test data goes: a section and an alignment."""
    section: str
    alignment: int


class AOTTestRunner(NamedTuple):
    """How the test program runs: the platform (makefile), code before and after the models run
    (prologue, epilogue), headers main includes, make parameters, and the PassContext config the
    models are compiled under."""
    makefile: str = "default"
    prologue: str = ""
    epilogue: str = ""
    includes: List[str] = []
    parameters: Dict[str, str] = {}
    pass_config: Dict[str, Any] = {}


NP_TYPE_TO_C = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
                "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "float32": "float",
                "float64": "double", "bool": "uint8_t"}


def generate_ref_data(mod, input_data, params=None, target="llvm"):
    """{output name: array} of the module on input_data, computed without this compiler: a relay
    function by numpy, op by op; a module a frontend imported by onnxruntime or TFLite Micro.
    Output names are TVM's: main's output_tensor_names (a TFLite model's outputs), else "output",
    or "output0", "output1", ... (target is not used: the reference runs on no target)."""
    from .reference import evaluate_imported, evaluate_relay
    del target
    func = mod["main"] if hasattr(mod, "functions") else mod
    func = getattr(func, "relay_function", func)
    inputs = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in dict(input_data).items()}
    if hasattr(func, "graph") and hasattr(func, "source"):
        outs = evaluate_imported(func, inputs)
    else:
        outs = evaluate_relay(func, inputs, params)
    names = list((getattr(func, "attrs", None) or {}).get("output_tensor_names") or [])
    if len(names) != len(outs):
        names = ["output"] if len(outs) == 1 else [f"output{k}" for k in range(len(outs))]
    return dict(zip(names, outs))


def _executor(interface_api, use_unpacked_api, workspace_byte_alignment, constant_byte_alignment):
    from ..relay.backend import Executor
    if interface_api not in ("c", "packed"):
        raise AotError(f"interface_api '{interface_api}' is not one of c, packed")
    if interface_api == "c" and not use_unpacked_api:
        raise AotError("interface_api 'c' takes use_unpacked_api=True (the C interface calls the operators "
                       "directly, as TVM requires)")
    return Executor("aot", {"workspace-byte-alignment": workspace_byte_alignment,
                            "constant-byte-alignment": constant_byte_alignment,
                            "interface-api": interface_api, "unpacked-api": use_unpacked_api})


def compile_models(models, interface_api, use_unpacked_api, workspace_byte_alignment=8, constant_byte_alignment=8,
                   enable_op_fusion=True, pass_config=None, use_runtime_executor=True, target="c",
                   workspace_memory_pools=None, constant_memory_pools=None, schedule_name=None, runtime=None):
    """[AOTCompiledTestModel]: each model built by relay.build with the AOT executor and the crt
    runtime, under a PassContext with the runner's config."""
    from .. import relay
    from ..relay.backend import Runtime
    from ..target import Target
    from ..transform import PassContext
    if not isinstance(models, list):
        models = [models]
    runtime = runtime or Runtime("crt")
    if runtime.name != "crt":
        raise AotError(f"compile_models: runtime '{runtime.name}': the test programs use the 'crt' runtime")
    if schedule_name is not None:
        raise AotError(f"compile_models: schedule_name '{schedule_name}' names an autotvm schedule; this compiler "
                       "has no autotvm, its schedules are its target's rules")
    if workspace_memory_pools is not None or constant_memory_pools is not None:
        raise AotError("compile_models: memory pools are given to aot.compile as workspace_pools, not here")
    if not use_runtime_executor:
        raise AotError("compile_models: use_runtime_executor=False (the graph executor) is not a test program "
                       "this runner builds; the AOT executor is")
    executor = _executor(interface_api, use_unpacked_api, workspace_byte_alignment, constant_byte_alignment)
    config = {"tir.disable_vectorize": True, **(pass_config or {})}
    if not enable_op_fusion:
        config["relay.FuseOps.max_depth"] = 1
    target = target if isinstance(target, Target) else Target(target)
    out = []
    for model in models:
        with PassContext(opt_level=3, config=config):
            # TVM's test programs name the I/O as TVM does: sanitised, a clash refused (not renamed)
            factory = relay.build(model.module, target=target, params=model.params, mod_name=model.name,
                                  executor=executor, runtime=runtime, io_names="tvm")
        out.append(AOTCompiledTestModel(model=model, executor_factory=factory))
    return out


def _sanitize(name):
    return re.sub(r"\W", "_", name)


_MODEL_TEST = """\
/* AOT test of model "{{ mod }}", generated by aot.testing.aot: its inputs, expected outputs
 * and the comparison; main.c calls aot_test_{{ mod }}(). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tvmgen_{{ mod }}.h"
{% include "_packed_run.c.j2" %}
{% include "_static_buffers.c.j2" %}
{%- for t in inputs %}
static const {{ t.ctype }} input_data_{{ loop.index0 }}[{{ t.n }}] = {
{{ t.data }}
};
{%- endfor %}
{%- for t in outputs %}
static const {{ t.ctype }} expected_output_data_{{ loop.index0 }}[{{ t.n }}] = {
{{ t.data }}
};
{%- endfor %}

int aot_test_{{ mod }}(void);

int aot_test_{{ mod }}(void) {
  struct tvmgen_{{ mod }}_inputs inputs;
  struct tvmgen_{{ mod }}_outputs outputs;
{%- if pools %}
  struct tvmgen_{{ mod }}_workspace_pools pools;
{%- endif %}
{%- if devices %}
  struct tvmgen_{{ mod }}_devices devices;
{%- endif %}
  int32_t rc;
  long mismatches = 0;
  size_t i;
{% include "_bind_buffers.c.j2" %}
{%- for t in inputs %}
  memcpy(inputs.{{ t.c }}, input_data_{{ loop.index0 }}, TVMGEN_{{ MOD }}_{{ t.c | upper }}_SIZE);
{%- endfor %}
{%- for d in devices %}
  devices.{{ d }} = 0;
{%- endfor %}
  rc = {{ 'run_packed' if packed else 'tvmgen_' ~ mod ~ '_run' }}({{ run_args }});
  if (rc != 0) {
    (void)printf("model {{ mod }}: tvmgen_{{ mod }}_run returned %d\\n", (int)rc);
    return -1;
  }
  (void)i;
{%- for t in outputs %}
  for (i = 0; i < {{ t.n }}u; ++i) {
    const {{ t.ctype }} got = ((const {{ t.ctype }}*)outputs.{{ t.c }})[i];
    const {{ t.ctype }} want = expected_output_data_{{ loop.index0 }}[i];
{%- if t.is_float %}
    if (!(fabs((double)got - (double)want) <= {{ t.tolerance }})) {
{%- else %}
    if (llabs((long long)got - (long long)want) > {{ t.tolerance }}) {
{%- endif %}
      if (mismatches < 10) {
        (void)printf("model {{ mod }}: output {{ t.name_c }}[%lu] = {{ t.fmt }}, expected {{ t.fmt }}\\n",
                     (unsigned long)i, {{ t.cast }}got, {{ t.cast }}want);
      }
      ++mismatches;
    }
  }
{%- endfor %}
  if (mismatches != 0) {
    (void)printf("model {{ mod }}: %ld mismatched element(s)\\n", mismatches);
    return -1;
  }
  return 0;
}
"""

_MAIN = """\
/* AOT test runner generated by aot.testing.aot: runs each model once and checks its outputs. */
#include <stdio.h>
{%- for h in includes %}
#include "{{ h }}"
{%- endfor %}
{%- for m in models %}
int aot_test_{{ m }}(void);
{%- endfor %}

int main(void) {
{{ prologue }}
{%- for m in models %}
  if (aot_test_{{ m }}() != 0) {
    (void)printf("{{ failure }}\\n");
    return 1;
  }
{%- endfor %}
  (void)printf("{{ success }}\\n");
{{ epilogue }}
  return 0;
}
"""


def _model_test_c(m, model):
    from codegen_c.emit import ENV, format_values
    from ..host import harness_params
    params = harness_params(m)
    info = m.aot
    in_names = [t["name"] for t in info["inputs"]]
    missing = [n for n in in_names if n not in model.inputs]
    if missing:
        raise AotError(f"model '{model.name}': no test value for input(s) {', '.join(missing)} "
                       f"(AOTTestModel.inputs has {', '.join(model.inputs) or 'none'})")
    for t, p in zip(info["inputs"], params["inputs"]):
        a = np.require(np.asarray(model.inputs[t["name"]]), requirements="C")
        if list(a.shape) != list(t["shape"]):
            raise AotError(f"model '{model.name}': input '{t['name']}' is {list(a.shape)}, the module takes "
                           f"{t['shape']}")
        a = a.astype(t["dtype"])
        p.update(ctype=NP_TYPE_TO_C[t["dtype"]], n=max(a.size, 1), data=format_values(a) if a.size else "  0")
    expected = dict(model.outputs)
    out_names = [t["name"] for t in info["outputs"]]
    if set(out_names) <= set(expected):
        wants = [expected[n] for n in out_names]
    elif len(expected) == len(out_names):        # TVM's "output"/"outputN" names against the model's own
        wants = list(expected.values())
    else:
        raise AotError(f"model '{model.name}': the module has outputs {', '.join(out_names)}; AOTTestModel.outputs "
                       f"names {', '.join(expected)}")
    for t, p, want in zip(info["outputs"], params["outputs"], wants):
        a = np.require(np.asarray(want), requirements="C")
        if list(a.shape) != list(t["shape"]):
            raise AotError(f"model '{model.name}': expected output '{t['name']}' is {list(a.shape)}, the module "
                           f"gives {t['shape']}")
        a = a.astype(t["dtype"])
        is_float = np.dtype(t["dtype"]).kind == "f"
        tol = model.output_tolerance if model.output_tolerance is not None else (0.001 if is_float else 0)
        p.update(ctype=NP_TYPE_TO_C[t["dtype"]], n=max(a.size, 1), data=format_values(a) if a.size else "  0",
                 is_float=is_float, tolerance=repr(float(tol)) if is_float else str(int(tol)),
                 fmt="%g" if is_float else "%lld", cast="(double)" if is_float else "(long long)",
                 name_c=_sanitize(t["name"]))
    return ENV.from_string(_MODEL_TEST).render(**params)


def _check_runner(runner):
    if runner.makefile not in MAKEFILES:
        raise AotError(f"AOTTestRunner makefile '{runner.makefile}': the test programs run on this machine "
                       f"({', '.join(MAKEFILES)}); its reference platforms (Corstone-300 FVP, AEM) are not here")


def run_and_check(models, runner, interface_api, debug_calculated_workspaces=False, workspace_byte_alignment=8,
                  constant_byte_alignment=8, data_linkage=None, test_dir=None, verbose=False,
                  use_workspace_io=False, debug_last_error=False, checker=None, print_output_on_mismatch=False):
    """Build the test program of the compiled models in test_dir (a new temporary directory by
    default) and run it; AssertionError when an output differs from its expected value."""
    del debug_calculated_workspaces, workspace_byte_alignment, constant_byte_alignment, debug_last_error
    del interface_api, print_output_on_mismatch
    _check_runner(runner)
    if data_linkage is not None:
        raise AotError("run_and_check: data_linkage (a section for the test data) is not supported: the test "
                       "data are static const arrays")
    if use_workspace_io:
        raise AotError("run_and_check: use_workspace_io is an option of the build (aot.compile "
                       "use_workspace_io=True), which the test program then follows")
    if not models:
        raise AotError("run_and_check: no compiled model to run")
    if test_dir is None:
        base = os.path.join(tempfile.mkdtemp(prefix="aot_test_"), "test")
    else:
        base = os.path.abspath(str(test_dir))
    os.makedirs(base, exist_ok=True)
    build = os.path.join(base, "build")
    os.makedirs(build, exist_ok=True)
    sources, includes, flags = [], [], []
    names = []
    from ..host import host_cflags, read_valid_mlf
    from ..micro.model_library_format import mlf_bytes
    for cm in models:
        data = mlf_bytes(cm.executor_factory, "run_and_check")
        m = read_valid_mlf(data)
        mod = m.module_name
        if mod in names:
            raise AotError(f"run_and_check: two models are named '{mod}': give each AOTTestModel its own name")
        names.append(mod)
        if m.aot.get("device"):
            raise AotError(f"model '{mod}' runs on the {m.aot['device']['api']} device: the test program is C")
        tar_path = os.path.join(base, f"{cm.model.name}.tar")
        with open(tar_path, "wb") as f:
            f.write(data)
        root = os.path.join(base, mod)
        if os.path.isdir(root):
            shutil.rmtree(root)
        with tarfile.open(tar_path) as t:
            t.extractall(root, filter="data")
        sources += [os.path.join(root, s) for s in m.aot["sources"]]
        includes += ["-I", os.path.join(root, "codegen", "host", "include")]
        test_c = os.path.join(build, f"test_{mod}.c")
        with open(test_c, "w") as f:
            f.write(_model_test_c(m, cm.model))
        sources.append(test_c)
        flags += [x for x in host_cflags(data) if x not in flags]
        runtime_inc = os.path.join(root, "runtime", "include")
    from codegen_c.emit import ENV
    main_c = os.path.join(build, "test.c")
    with open(main_c, "w") as f:
        f.write(ENV.from_string(_MAIN).render(models=names, includes=list(runner.includes), prologue=runner.prologue,
                                              epilogue=runner.epilogue, success=AOT_SUCCESS_TOKEN,
                                              failure=AOT_FAILURE_TOKEN))
    sources.append(main_c)
    if checker is not None and not checker(base):
        return False
    from boards import load_board
    cc = os.environ.get("CC") or load_board("host")["cc"]
    exe = os.path.join(build, "aot_test_runner")
    cmd = [cc, *flags, *includes, "-I", runtime_inc, "-I", build, *sources, "-o", exe, "-lm"]
    cmd += [f"-D{k}={v}" for k, v in runner.parameters.items()]
    if verbose:
        print("Compile command:\n", " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(build, "test_compile.log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
    if r.returncode != 0:
        raise BuildError(f"building the AOT test runner failed ({cc}):\n{r.stderr[-4000:]}")
    if verbose:
        print("Run command:\n", exe)
    r = subprocess.run([exe], capture_output=True, text=True, cwd=build, timeout=600)
    log = r.stdout + r.stderr
    with open(os.path.join(build, "test_run.log"), "w") as f:
        f.write(log)
    if r.returncode != 0 or AOT_SUCCESS_TOKEN not in log:
        raise AssertionError(f"the AOT test runner failed (exit {r.returncode}) in {base}:\n{log[-3000:]}")
    return True


def compile_and_run(models, runner, interface_api, use_unpacked_api, debug_calculated_workspaces=False,
                    workspace_byte_alignment=8, constant_byte_alignment=8, enable_op_fusion=True, data_linkage=None,
                    use_runtime_executor=True, target="c", target_opts=None, test_dir=None, verbose=False,
                    schedule_name=None, debug_last_error=False, checker=None, print_output_on_mismatch=False,
                    runtime=None):
    """compile_models, then run_and_check: True when every output matches."""
    from ..target import Target
    _check_runner(runner)
    if target_opts:
        if not isinstance(target, str):
            raise AotError("compile_and_run: target_opts go with a target string")
        target += "".join(f" {k}={v}" for k, v in target_opts.items())
    if isinstance(target, str):
        target = Target(target)
    compiled = compile_models(models, interface_api, use_unpacked_api, workspace_byte_alignment,
                              constant_byte_alignment, enable_op_fusion, runner.pass_config, use_runtime_executor,
                              target, schedule_name=schedule_name, runtime=runtime)
    return run_and_check(compiled, runner, interface_api, debug_calculated_workspaces, workspace_byte_alignment,
                         constant_byte_alignment, data_linkage, test_dir, verbose, checker=checker,
                         print_output_on_mismatch=print_output_on_mismatch)


def get_dtype_range(dtype):
    """(min, max) of a numeric dtype."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        info = np.finfo(dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
    else:
        raise AotError(f"get_dtype_range: dtype {dtype} is neither floating-point nor integral")
    return info.min, info.max


def create_relay_module_and_inputs_from_tflite_file(tflite_model_file, bind_params_by_name=True):
    """TVM's helper: (relay module, {input name: random data in the input's range}, params) of a
    .tflite file. The data is seeded, so that a test sees the same inputs each run."""
    from ..relay import frontend
    with open(tflite_model_file, "rb") as f:
        mod, params = frontend.from_tflite(f.read())
    rng = np.random.default_rng(0)
    inputs = {}
    for p in mod["main"].params:
        t = p.type_annotation
        dtype = str(t.dtype)
        shape = tuple(int(d) for d in t.shape)
        if np.dtype(dtype).kind == "f":
            inputs[p.name_hint] = rng.uniform(-1, 1, shape).astype(dtype)
        else:
            lo, hi = get_dtype_range(dtype)
            inputs[p.name_hint] = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return mod, inputs, params
