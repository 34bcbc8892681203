"""Target: what the code is generated for, parsed from TVM-style strings.

    Target("c")                                   plain C99 for any CPU
    Target("c -mcpu=cortex-m4")                   keys arm_cpu,cpu (what schedule rules key on)
    Target("c -mcpu=cortex-m55", host="c")        a target with its host (heterogeneous builds)
    Target.list("c -mcpu=cortex-m4; c")           a target list
    Target.list("vanilla_accelerator, c")         tvmc's form: plug-in backends first, C for the rest

The same call shapes as tvm.target.Target. str(t) prints as TVM prints a Target (keys always,
options by name: metadata.json's target list, as TVM's MLF writes it); t.short_str() leaves the
default keys out (the generated files' comments, metadata's aot.target). Equal targets print alike. Kinds: "c", "cuda" (-libs=cudnn,cublas), "opencl", and the kinds plug-in backends register.

This is the one module that reads target strings: a target's facts (core features, layouts,
schedule pipeline, renderer dialect, ...) are its family's (`Target.family`, aot/targets/), and
`resolve` turns a target list into the target and the backends (plug-ins, -libs=) the driver
compiles with.
"""
from __future__ import annotations

import sys
import importlib
import re
from dataclasses import dataclass, field

from . import targets
from .errors import AotError

HINTS: dict = {}
PLUGINS: dict = {}          # kinds registered by plug-in backends (aot.uma): name -> (options, backend)


def register_kind(name, attrs=(), backend=None):
    """A plug-in backend's target kind (UMABackend.register): its options are strings; a target
    list naming the kind hands the backend what it claims."""
    PLUGINS[name] = ({a: "str" for a in attrs}, backend)


def _spec(kind):
    """The options target kind `kind` takes, or None for an unknown kind."""
    # a plug-in kind takes -keys= too, as TVM prints every target with its keys
    return {"keys": "list", **PLUGINS[kind][0]} if kind in PLUGINS else targets.kind_attrs(kind)


_VALUE_RE = re.compile(r"^[A-Za-z0-9_.+\-]+$")


class TargetKind(str):
    """A target's kind: the string itself ("c", "cuda", ...), with TVM's `.name`."""

    @property
    def name(self):
        return str(self)


class TargetAttrs(tuple):
    """A target's options, ((name, value), ...) in the kind's order, read as TVM's target.attrs map
    as well: attrs["mcpu"], "mcpu" in attrs, attrs.get, keys(), items()."""

    def __getitem__(self, key):
        if isinstance(key, str):
            for name, value in tuple.__iter__(self):
                if name == key:
                    return value
            raise KeyError(key)
        return tuple.__getitem__(self, key)

    def __contains__(self, key):
        if isinstance(key, str):
            return any(name == key for name, _ in tuple.__iter__(self))
        return tuple.__contains__(self, key)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def keys(self):
        return [name for name, _ in tuple.__iter__(self)]

    def items(self):
        return list(tuple.__iter__(self))


_CURRENT: list = []         # the targets of enclosing `with Target(...)` blocks, innermost last


@dataclass(frozen=True)
class Target:
    kind: str
    attrs: tuple = ()                   # ((name, value), ...) in the kind's option order; lists as tuples
    host: "Target | None" = field(default=None)

    def __init__(self, target="c", host=None):
        if isinstance(target, Target):
            kind, attrs, own_host = target.kind, target.attrs, target.host
        else:
            kind, attrs = _parse(target)
            own_host = None
        if host is not None:
            own_host = host if isinstance(host, Target) else Target(host)
            if own_host.host is not None:
                raise AotError(f"target host '{own_host}' has a host of its own")
        object.__setattr__(self, "kind", TargetKind(kind))
        object.__setattr__(self, "attrs", TargetAttrs(attrs))
        object.__setattr__(self, "host", own_host)
        if tuple(self.get("keys") or ()) == self._default_keys():
            # the kind's own keys given explicitly (TVM's printed form): the same target as without them
            object.__setattr__(self, "attrs", TargetAttrs(tuple((n, v) for n, v in attrs if n != "keys")))

    @classmethod
    def list(cls, text: str):
        """'t1; t2' (TVM's target list for heterogeneous builds), or tvmc's 't1, t2', where a
        comma starts a new target when a target kind follows it ('c -libs=a,b' stays one)
        -> [Target, ...]"""
        items = []
        # CMake's Makefile generator writes a quoted argument's spaces as '\ ' (TVM's
        # zephyr_cmsisnn passes --target="cmsis-nn -mcpu=cortex-m55, c" so), and tvmc reads
        # the target's words past the backslashes: a backslash before white space is that space
        text = re.sub(r"\\(\s)", r"\1", str(text))
        for part in text.split(";"):
            pieces = part.split(",")
            cur = pieces[0]
            for p in pieces[1:]:
                word = p.split()[0] if p.split() else ""
                if p[:1].isspace() or _spec(word) is not None:
                    items.append(cur)
                    cur = p
                else:
                    cur += "," + p
            items.append(cur)
        items = [s.strip() for s in items]
        if not all(items):
            raise AotError(f"target list '{text}' has an empty entry")
        return [cls(s) for s in items]

    @staticmethod
    def current(allow_none=True):
        """The target of the innermost enclosing `with target:` block (TVM's Target.current)."""
        if _CURRENT:
            return _CURRENT[-1]
        if not allow_none:
            raise AotError("no target is current: use `with aot.target.Target(...):`")
        return None

    def __enter__(self):
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc):
        _CURRENT.pop()

    def with_host(self, host=None):
        return Target(self, host=host)

    @property
    def family(self):
        """The target family (aot/targets/) whose facts the stages ask for; a plug-in backend's
        kind has the base family's (it generates no kernels of its own)."""
        return targets.family_for(self.kind, self.mcpu) or _PLUGIN

    @property
    def is_device(self):
        """Kernels run on a device (a GPU) that generated host C drives."""
        return self.family.is_device

    @property
    def is_external(self):
        """A plug-in backend's target, or a partition target (cmsis-nn): it compiles only what it claims."""
        return self.kind in PLUGINS or self.family.partition

    @property
    def core(self):
        """The features of the core a Cortex-M target names (aot/targets/cortex_m.py); None elsewhere."""
        return self.family.core(self)

    def get(self, name, default=None):
        return dict(self.attrs).get(name, default)

    @property
    def keys(self):
        return self.get("keys") or self._default_keys()

    @property
    def mcpu(self):
        return self.get("mcpu")

    # TVM's Target properties over its options
    @property
    def arch(self):
        return self.get("arch")

    @property
    def model(self):
        return self.get("model") or "unknown"

    @property
    def mattr(self):
        return self.get("mattr") or ()

    @property
    def libs(self):
        return self.get("libs") or ()

    def _default_keys(self):
        return (self.kind,) if self.kind in PLUGINS else self.family.keys


    def __str__(self):
        """The target as TVM prints a Target (and its MLF's metadata.json records it): the kind,
        -keys= always, then the other options in name order ("c -keys=arm_cpu,cpu -mcpu=cortex-m55")."""
        out = [self.kind]
        if self.keys:
            out.append(f"-keys={','.join(self.keys)}")
        for name, value in sorted(self.attrs):
            if name != "keys":
                out.append(f"-{name}={_attr_text(value)}")
        return " ".join(out)

    def short_str(self):
        """The target as written, less its kind's default keys, options in the kind's order
        ("c -mcpu=cortex-m55"): what the generated files' comments and metadata's aot.target record."""
        out = [self.kind]
        for name, value in self.attrs:
            out.append(f"-{name}={_attr_text(value)}")
        return " ".join(out)

    def __format__(self, spec):
        # messages and logs (f-strings) name a target as the user wrote it; str() is TVM's form
        return format(self.short_str(), spec)

    def __repr__(self):
        return f"Target({self.short_str()!r}" + (f", host={self.host.short_str()!r})" if self.host else ")")

    def export(self) -> dict:
        """The JSON form recorded in metadata.json."""
        d = {"kind": self.kind, "str": self.short_str(), "keys": list(self.keys)}
        d.update({k: list(v) if isinstance(v, tuple) else v for k, v in self.attrs if k != "keys"})
        if self.host is not None:
            d["host"] = self.host.export()
        return d


class _PluginFamily(targets.Family):
    name = "plug-in"


_PLUGIN = _PluginFamily()


def _attr_text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return ",".join(value) if isinstance(value, tuple) else str(value)


def _parse(text):
    if not isinstance(text, str):
        raise AotError(f"target must be a string such as 'c -mcpu=cortex-m4', not {type(text).__name__}")
    parts = text.split()
    if not parts:
        raise AotError("empty target: give a target such as 'c' or 'c -mcpu=cortex-m4'")
    kind, opts = parts[0], parts[1:]
    spec = _spec(kind)
    if spec is None:
        plugins = sorted(PLUGINS)
        raise AotError(f"target kind '{kind}' is not supported{HINTS.get(kind, '')}; "
                       f"supported: {', '.join(sorted(targets.kinds()))}"
                       + (f"; registered backends: {', '.join(plugins)}" if plugins else "")
                       + ("" if kind in HINTS else
                          " (a plug-in backend must be registered first: aot compile --backend FILE.py)"))
    found = {}
    for o in opts:
        name, eq, value = o.lstrip("-").partition("=")
        if o.startswith("-") and not eq and spec.get(name) == "bool":
            eq, value = "=", "1"          # a flag alone turns it on: cuda -libs=cudnn -tf32
        if not o.startswith("-") or not eq or not value:
            raise AotError(f"target '{text}': option '{o}' must look like -name=value")
        if name not in spec:
            raise AotError(f"target '{text}': option '-{name}' is not known for kind '{kind}' "
                           f"(known: {', '.join('-' + a for a in spec)})")
        if name in found:
            raise AotError(f"target '{text}': option '-{name}' is given twice")
        items = value.split(",") if spec[name] == "list" else [value]
        bad = [v for v in items if not _VALUE_RE.match(v)]
        if bad:
            raise AotError(f"target '{text}': option '-{name}' has an invalid value '{bad[0]}'")
        if spec[name] == "align":
            # C's aligned() takes a power of two; 1 << 28 is the most an ELF section may ask for
            if not value.isdigit() or int(value) & (int(value) - 1) or not 0 < int(value) <= 1 << 28:
                raise AotError(f"target '{text}': option '-{name}={value}' must be a power of two from 1 to 2^28")
            value = int(value)
        if spec[name] == "bool":
            if value not in ("0", "1", "true", "false"):
                raise AotError(f"target '{text}': option '-{name}={value}' must be 0, 1, true or false")
            value = value in ("1", "true")
        found[name] = tuple(items) if spec[name] == "list" else value
    _check_cpu(text, kind, found)
    known = _libraries(kind)
    libs = [lib for lib in found.get("libs", ()) if lib not in known]
    if libs:
        raise AotError(f"target '{text}': library '{libs[0]}' is not supported for kind '{kind}'"
                       + (f" (supported: {', '.join(known)})" if known else " (none is, yet)"))
    return kind, tuple((name, found[name]) for name in spec if name in found)


def _check_cpu(text, kind, found):
    """-mcpu and -mattr name what a family of the kind knows (aot/targets/): a CPU or a feature no
    family knows is refused by name, with the known ones, rather than compiled as plain C."""
    fams = [f for f in targets.FAMILIES if f.kind == kind]
    if not fams:                      # a plug-in backend's kind: its options are its own
        return
    mcpu = found.get("mcpu")
    if mcpu is not None and not any(f.knows_mcpu(mcpu) for f in fams):
        known = []
        for f in fams:
            known += [m for m in f.known_mcpus() if m not in known]
        raise AotError(f"target '{text}': -mcpu={mcpu} is not a CPU aot knows for kind '{kind}' (known: "
                       f"{', '.join(known)})")
    for feature in found.get("mattr", ()):
        if not feature[:1] in "+-" or not any(f.knows_mattr(feature) for f in fams):
            known = []
            for f in fams:
                known += [m for m in f.mattrs if m not in known]
            raise AotError(f"target '{text}': -mattr item '{feature}' is not a feature aot knows for kind '{kind}' "
                           f"(give +name or -name, name one of: {', '.join(known)})")


def _libraries(kind):
    """What -libs= may name for a kind: the libraries of its families."""
    out = []
    for f in targets.FAMILIES:
        out += [lib for lib in f.libraries if f.kind == kind and lib not in out]
    return tuple(out)


def split_targets(spec):
    """A target, a target string or list ('vanilla_accelerator, c'), or a list of targets ->
    (the target for what no backend claims, [the plug-in backends it names, in priority order])."""
    if isinstance(spec, Target):
        items = [spec]
    elif isinstance(spec, str):
        items = Target.list(spec)
    else:
        items = [t if isinstance(t, Target) else Target(t) for t in spec]
    main = [t for t in items if not t.is_external]
    hosts = {str(t.host): t.host for t in items if t.is_external and t.host is not None}
    if not main and len(hosts) == 1:     # TVM's Target("my_npu", host="c"): the host takes the rest
        main = list(hosts.values())
    if len(main) != 1:
        raise AotError(f"target list '{', '.join(str(t) for t in items)}' must name exactly one code-generation "
                       f"target for what the backends do not take (such as 'c'), not {len(main)}")
    backends = []
    for t in items:
        if t.is_external:
            b = PLUGINS[t.kind][1] if t.kind in PLUGINS else _PartitionBackend(t)
            if b in backends or any(getattr(x, "target_name", None) == t.kind for x in backends):
                raise AotError(f"target list names backend '{t.kind}' twice")
            b.target = t
            backends.append(b)
    return main[0], backends


class _PartitionBackend:
    """A partition target of a target list (its family's `partition`, e.g. cmsis-nn): what its
    family claims is compiled by the compiler's own kernels, scheduled for `kernel_target`, into a
    module file of its own (aot/passes/partition.py: partition_groups)."""
    renders_kernels = True

    def __init__(self, target):
        self.target = target
        self.target_name = str(target.kind)

    def claims(self, node):
        return self.target.family.claims_node(node)

    @property
    def kernel_target(self):
        return Target(self.target.family.kernel_target(self.target))


def resolve(spec):
    """What the driver compiles for: (the target, [its backends in priority order]): the plug-in
    backends the list names, then the libraries of the target's -libs= (cuda -libs=cudnn,cublas),
    each a built-in plug-in backend found by name: the module aot.targets.libs.<name>, whose
    BACKEND is its aot.uma.UMABackend class."""
    target, backends = split_targets(spec)
    for lib in target.libs:
        name = f"{targets.__name__}.libs.{lib}"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            raise AotError(f"target '{target}': library '{lib}' has no backend") from None
        b = module.BACKEND()
        b.target = target
        backends.append(b)
    return target, backends


# TVM's target constructors (tvm.target.cuda(), ...): the same targets as their strings
def cuda(model="unknown", arch=None, options=None):
    return Target("cuda" + (f" -model={model}" if model and model != "unknown" else "")
                  + (f" -arch={arch}" if arch else "") + _opts(options))


def opencl(model="unknown", options=None):
    return Target("opencl" + (f" -model={model}" if model and model != "unknown" else "") + _opts(options))


def arm_cpu(model="unknown", options=None):
    """TVM's arm_cpu(): a Cortex-M core when `model` names one of ours (e.g. "stm32f746xx" is not
    known; pass options="-mcpu=cortex-m7"), else the host C path keyed arm_cpu."""
    return Target("c -keys=arm_cpu,cpu" + (f" -model={model}" if model and model != "unknown" else "")
                  + _opts(options))


def micro(model="host", options=None):
    """TVM's micro(model): "host" is the host C path; a Cortex-M model with its -mcpu."""
    return Target("c" + (f" -model={model}" if model and model != "host" else "") + _opts(options))


def _opts(options):
    if not options:
        return ""
    return " " + (options if isinstance(options, str) else " ".join(options))


# TVM's tests reach micro() through tvm.target.target, the module this one stands for
target = sys.modules[__name__]
