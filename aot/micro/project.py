"""microTVM's Project API, with TVM's names: a template project, a project generated from it
with a compiled model, and that project's build, flash and transport.

A template is a board folder (boards/<name>/board.json): "crt" is boards/host, the machine
running aot (gcc), and every emulated Cortex-M board is a template of its own
(get_microtvm_template_projects("qemu-cortex-m4")). A generated project is a plain directory
that builds without Python:

    microtvm_project.json   the template, its board and the options it was made with
    model.tar, model/       the Model Library Format the model was exported as, and unpacked
    src/main.c              the runner: reads in<k>.bin, runs tvmgen_<mod>_run once, writes out<k>.bin
    board/                  the board's startup, semihosting and linker files (emulated boards)
    Makefile                `make` builds build/model (host) or build/firmware.elf (board)

The runner is the harness of aot's own host and board runners (aot/host.py, aot/firmware.py),
compiled with their flags, and the transport runs it through them: a Session's AOT executor
hands its inputs to the built runner and reads back its outputs."""
from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile

from ..errors import AotError, BuildError

PROJECT_FILE = "microtvm_project.json"
CRT = "crt"                      # TVM's host template: here the host board
HOST_BOARD = "host"
ZEPHYR_LIKE = ("zephyr", "arduino", "mbed", "stm32")   # TVM's other platforms: no template of theirs here


class ProjectOptionError(AotError, ValueError):
    """An option the template does not take (TVM raises ValueError there)."""


class TemplateProjectError(AotError):
    """A generated project was given where a template is wanted, or the other way round."""


NotATemplateProjectError = TemplateProjectError


# -- templates ------------------------------------------------------------------------------------
def _boards():
    from boards import BOARDS_DIR
    return sorted(d for d in os.listdir(BOARDS_DIR) if os.path.isfile(os.path.join(BOARDS_DIR, d, "board.json")))


def template_names():
    """The names get_microtvm_template_projects takes: "crt" and the emulated boards."""
    return [CRT] + [b for b in _boards() if b != HOST_BOARD]


def get_microtvm_template_projects(platform):
    """The template directory of `platform`: "crt" (runs on this machine with the host C
    compiler) or an emulated board's name ("qemu-cortex-m4", ...)."""
    from boards import BOARDS_DIR
    name = HOST_BOARD if platform in (CRT, HOST_BOARD) else str(platform)
    if name in _boards():
        return os.path.join(BOARDS_DIR, name)
    why = (f"platform '{platform}' needs its vendor SDK and a physical board, which aot does not drive"
           if platform in ZEPHYR_LIKE else f"there is no template project '{platform}'")
    raise AotError(f"get_microtvm_template_projects: {why}; the templates are: {', '.join(template_names())}")


def load_template(template_dir):
    path = os.path.join(str(template_dir), "board.json")
    if not os.path.isfile(path):
        if os.path.isfile(os.path.join(str(template_dir), PROJECT_FILE)):
            raise TemplateProjectError(f"'{template_dir}' is a generated project, not a template project")
        raise AotError(f"'{template_dir}' is not a template project (it has no board.json; use "
                       "get_microtvm_template_projects(...))")
    with open(path) as f:
        board = json.load(f)
    if board.get("name") != HOST_BOARD and board.get("kind") != "qemu":
        raise AotError(f"'{template_dir}': board '{board.get('name')}' is neither the host nor an emulated board")
    return board


# Options each template takes: name -> (default, help). TVM's host-driven project type is the only one:
# the runner is driven by the transport, one inference per run().
OPTIONS = {
    "verbose": (False, "print the build's commands and output"),
    "project_type": ("host_driven", "how the project runs the model: host_driven (the transport drives it)"),
    "opt": ("-O2", "the optimisation level the model and runner are compiled with"),
}
HOST_OPTIONS = {**OPTIONS, "opt": (None, "the optimisation level (default: the host board's flags, -O3)")}


def _option_table(board):
    return HOST_OPTIONS if board["name"] == HOST_BOARD else OPTIONS


def _check_options(board, options):
    table = _option_table(board)
    options = dict(options or {})
    unknown = sorted(set(options) - set(table))
    if unknown:
        raise ProjectOptionError(f"project option(s) {', '.join(unknown)} are not options of the "
                                 f"'{_template_name(board)}' template (its options: {', '.join(table)})")
    if options.get("project_type", "host_driven") != "host_driven":
        raise ProjectOptionError(f"project_type '{options['project_type']}': only 'host_driven' projects are "
                                 "made (the transport drives each inference)")
    opt = options.get("opt")
    if opt is not None and opt not in ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz"):
        raise ProjectOptionError(f"opt '{opt}' is not one of -O0 -O1 -O2 -O3 -Os -Oz")
    return {k: options.get(k, d) for k, (d, _) in table.items()}


def _template_name(board):
    return CRT if board["name"] == HOST_BOARD else board["name"]


class TemplateProject:
    """A template (a board folder); generate_project makes a project of it."""

    @classmethod
    def from_directory(cls, template_project_dir):
        return cls(str(template_project_dir))

    def __init__(self, template_dir):
        self.template_dir = str(template_dir)
        self.board = load_template(self.template_dir)

    def info(self):
        return {"is_template": True, "platform_name": _template_name(self.board),
                "model_library_format_path": None,
                "project_options": [{"name": k, "default": d, "help": h}
                                    for k, (d, h) in _option_table(self.board).items()]}

    def generate_project(self, module, project_dir, options=None):
        from .model_library_format import mlf_bytes
        return self._generate(mlf_bytes(module, "generate_project"), project_dir, options)

    def generate_project_from_mlf(self, model_library_format_path, project_dir, options=None):
        from ..host import tar_bytes
        try:
            data = tar_bytes(str(model_library_format_path))
        except OSError as e:
            raise AotError(f"cannot read '{model_library_format_path}': {e.strerror or e}") from None
        return self._generate(data, project_dir, options)

    def _generate(self, data, project_dir, options):
        from ..host import read_valid_mlf, refuse_device, refuse_instrumented
        options = _check_options(self.board, options)
        m = read_valid_mlf(data)
        refuse_instrumented(m, ())
        refuse_device(m, self.board["name"])
        project_dir = str(project_dir)
        if os.path.exists(project_dir) and (not os.path.isdir(project_dir) or os.listdir(project_dir)):
            raise AotError(f"'{project_dir}' exists and is not an empty directory")
        parent = os.path.dirname(os.path.abspath(project_dir))
        try:
            os.makedirs(parent, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=".aot-project-", dir=parent)   # no half-written project on failure
        except OSError as e:
            raise AotError(f"cannot create project directory '{project_dir}': {e.strerror or e}") from None
        try:
            try:
                _write_project(tmp, self.board, data, m, options)
                if os.path.isdir(project_dir):
                    os.rmdir(project_dir)
                os.replace(tmp, project_dir)
            except OSError as e:
                raise AotError(f"cannot write project directory '{project_dir}': {e.strerror or e}") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        os.chmod(project_dir, 0o755)
        return GeneratedProject.from_directory(project_dir, options)


def _write_project(root, board, data, m, options):
    from codegen_c.emit import render_template
    from ..host import harness_params

    def put(rel, content):
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())

    put("model.tar", data)
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        t.extractall(os.path.join(root, "model"), filter="data")
    params = harness_params(m)
    host = board["name"] == HOST_BOARD
    put("src/main.c", render_template("host_main.c.j2" if host else "firmware_main.c.j2", **params))
    if host:
        put("Makefile", _host_makefile(board, data, m, options))
    else:
        from ..firmware import board_dir
        for f in board["files"]:
            with open(os.path.join(board_dir(board["name"]), f), "rb") as fh:
                put("board/" + os.path.basename(f), fh.read())
        put("Makefile", _board_makefile(board, m, options))
    put(PROJECT_FILE, json.dumps({"template": _template_name(board), "board": board["name"],
                                  "module": m.module_name, "options": options}, indent=2) + "\n")


def _sources(m):
    return " ".join("model/" + s for s in m.aot["sources"])


def _host_makefile(board, data, m, options):
    from ..host import host_cflags
    flags = host_cflags(data, opt=options.get("opt"))
    return f"""# microTVM-style project generated by aot for module "{m.module_name}" on this machine ("crt").
# `make` builds build/model; `build/model in0.bin ... out0.bin ...` runs it on raw tensors.
CC := {board["cc"]}
CFLAGS := {" ".join(shlex.quote(f) for f in flags)}
INCLUDES := -Imodel/codegen/host/include -Imodel/runtime/include
SRCS := {_sources(m)} src/main.c

.PHONY: all clean
all: build/model

build/model: $(SRCS)
\tmkdir -p build
\t$(CC) $(CFLAGS) $(INCLUDES) $(SRCS) -o $@ -lm

clean:
\trm -rf build
"""


def _board_makefile(board, m, options):
    from ..firmware import BOARD_CFLAGS, COMMON, LIBS, LINK, STRICT
    srcs = [("model/" + s, "model") for s in m.aot["sources"]]
    srcs += [("board/startup.c", "app"), ("board/semihost.c", "app"), ("src/main.c", "app")]
    rules, objs = [], []
    for src, kind in srcs:
        obj = f"build/{kind}/{os.path.basename(src)[:-2]}.o"
        objs.append(obj)
        std = "$(MODEL_CFLAGS)" if kind == "model" else "$(APP_CFLAGS)"
        rules.append(f"{obj}: {src}\n\tmkdir -p build/{kind}\n\t$(CC) {std} $(CFLAGS) $(INCLUDES) -c $< -o $@\n")
    q = board["qemu"]
    return f"""# microTVM-style project generated by aot for module "{m.module_name}" on {board["name"]}.
# {board.get("description", "")}
# `make` builds build/firmware.elf (arm-none-eabi-gcc with newlib); the transport runs it under
# {q["binary"]} with in<k>.bin / out<k>.bin exchanged through semihosting in the run's directory.
CC := {board["cc"]}
CFLAGS := {" ".join(board["cflags"])} {options["opt"]} {" ".join(COMMON)}
MODEL_CFLAGS := {" ".join(STRICT)}
APP_CFLAGS := {" ".join(BOARD_CFLAGS)}
INCLUDES := -Imodel/codegen/host/include -Imodel/runtime/include -Iboard
LDFLAGS := {" ".join(board["cflags"])} {options["opt"]} {" ".join(LINK)} -Wl,-Map=build/firmware.map -Lboard -Tlink.ld
OBJS := {" ".join(objs)}

.PHONY: all clean
all: build/firmware.elf

build/firmware.elf: $(OBJS) board/link.ld
\t$(CC) $(LDFLAGS) $(OBJS) {" ".join(LIBS)} -o $@

{chr(10).join(rules)}
clean:
\trm -rf build
"""


# -- generated projects -----------------------------------------------------------------------------
class GeneratedProject:
    """A project made by generate_project: build() compiles it, flash() puts it on its board
    (nothing to do for the host and the emulators), transport() is how a Session reaches it."""

    @classmethod
    def from_directory(cls, project_dir, options=None):
        return cls(str(project_dir), options)

    def __init__(self, project_dir, options=None):
        from boards import load_board
        from ..host import read_valid_mlf
        path = os.path.join(project_dir, PROJECT_FILE)
        if not os.path.isfile(path):
            if os.path.isfile(os.path.join(project_dir, "board.json")):
                raise TemplateProjectError(f"'{project_dir}' is a template project: generate_project makes a "
                                           "project of it")
            raise AotError(f"'{project_dir}' is not a generated project (no {PROJECT_FILE})")
        with open(path) as f:
            self._record = json.load(f)
        self.project_dir = project_dir
        self.board = load_board(self._record["board"])
        given = {k: v for k, v in (options or {}).items() if v != self._record["options"].get(k)}
        self._options = dict(self._record["options"], **_check_options(self.board, given)) if given else \
            dict(self._record["options"])
        with open(os.path.join(project_dir, "model.tar"), "rb") as f:
            self.mlf = read_valid_mlf(f.read())
        self._built = False

    @property
    def options(self):
        return self._options

    def info(self):
        return {"is_template": False, "platform_name": self._record["template"],
                "model_library_format_path": os.path.join(self.project_dir, "model.tar"),
                "project_options": [{"name": k, "default": d, "help": h}
                                    for k, (d, h) in _option_table(self.board).items()]}

    @property
    def is_host(self):
        return self.board["name"] == HOST_BOARD

    @property
    def product(self):
        """What build() makes: the runner executable, or the board's firmware ELF."""
        return os.path.join(self.project_dir, "build", "model" if self.is_host else "firmware.elf")

    def build(self):
        cc = (os.environ.get("CC") if self.is_host else None) or self.board["cc"]
        if shutil.which(cc) is None:
            raise AotError(f"{cc} not found: it builds {self.board['name']} projects"
                           + ("" if self.is_host else " (Debian: apt-get install --no-install-recommends "
                              "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)"))
        if shutil.which("make") is None:
            raise AotError("make not found: a generated project builds with make")
        cmd = ["make", "-C", self.project_dir]
        if self.is_host and os.environ.get("CC"):      # the host runner's compiler, as aot.host builds with
            cmd.append(f"CC={os.environ['CC']}")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if self._options.get("verbose"):
            print(r.stdout + r.stderr, end="")
        if r.returncode != 0:
            raise BuildError(f"building project '{self.project_dir}' failed (make):\n{(r.stdout + r.stderr)[-4000:]}")
        self._built = True

    def flash(self):
        """Nothing is written anywhere: the host runs the runner itself, and the emulator loads
        the firmware each time the transport runs it. Refused before build()."""
        self._require_built("flash")

    def transport(self):
        return ProjectTransport(self)

    def _require_built(self, what):
        if not os.path.isfile(self.product):
            raise AotError(f"{what}: project '{self.project_dir}' is not built (call build() first)")

    def run(self, inputs, timeout=600):
        """One inference on `inputs` {name: array} by the built runner -> {name: array}."""
        self._require_built("run")
        if self.is_host:
            from ..host import run_executable
            return run_executable(self.product, self.mlf.aot, inputs, timeout=timeout)
        from ..firmware import Firmware, run_firmware
        fw = Firmware(self.product, os.path.join(self.project_dir, "build", "firmware.map"), self.board,
                      self._options["opt"], self.mlf)
        return run_firmware(None, inputs, self.board["name"], fw=fw, timeout=timeout)[0]


class ProjectTransport:
    """How a Session reaches a generated project: open() checks the project is built, read and
    write are not offered (the executor exchanges whole tensors with the runner instead)."""

    def __init__(self, project):
        self.project = project
        self.is_open = False

    def open(self):
        self.project._require_built("open the transport")
        self.is_open = True

    def close(self):
        self.is_open = False

    def timeouts(self):
        return None

    def write(self, data, timeout_sec):
        raise AotError("transport.write: aot's transport exchanges whole tensors through the AOT executor "
                       "(session.create_aot_executor()), not bytes")

    def read(self, n, timeout_sec):
        raise AotError("transport.read: aot's transport exchanges whole tensors through the AOT executor "
                       "(session.create_aot_executor()), not bytes")

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()


def generate_project(template_project_dir, module, generated_project_dir, options=None):
    """A project made from the template with the compiled module (what relay.build returned,
    or anything export_model_library_format takes); returns a GeneratedProject."""
    return TemplateProject.from_directory(template_project_dir).generate_project(module, generated_project_dir,
                                                                                 options)


def generate_project_from_mlf(template_project_dir, project_dir, mlf_path, options=None):
    return TemplateProject.from_directory(template_project_dir).generate_project_from_mlf(mlf_path, project_dir,
                                                                                          options)
