"""Target: what the code is generated for, parsed from TVM-style strings.

    Target("c")                                   plain C99 for any CPU
    Target("c -mcpu=cortex-m4")                   keys arm_cpu,cpu (what schedule rules key on)
    Target("c -mcpu=cortex-m55", host="c")        a target with its host (heterogeneous builds)
    Target.list("c -mcpu=cortex-m4; c")           a target list
    Target.list("vanilla_accelerator, c")         tvmc's form: plug-in backends first, C for the rest

The same call shapes as tvm.target.Target. The canonical string (str(t)) is what metadata.json
and the generated files record: attributes in a fixed order, defaults left out, so equal targets
print alike. Kinds: "c", "cuda" (-libs=cudnn,cublas), "opencl", and the kinds plug-in backends register.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import AotError

# kind -> the attributes it takes (name -> "str" | "list"), and its default keys
KINDS = {
    "c": {"attrs": {"keys": "list", "mcpu": "str", "march": "str", "mattr": "list", "model": "str",
                    "libs": "list"},
          "keys": ("cpu",)},
    # GPUs: generated kernels with block/thread binding, a host-side executor in C (issue 12)
    "cuda": {"attrs": {"keys": "list", "arch": "str", "model": "str", "libs": "list"}, "keys": ("cuda", "gpu")},
    "opencl": {"attrs": {"keys": "list", "device": "str", "model": "str"}, "keys": ("opencl", "gpu")},
}
DEVICE_KINDS = ("cuda", "opencl")    # kinds whose kernels run on a device the host C drives
HINTS = {"llvm": " (aot emits C: use 'c' with -mcpu)"}
LIBS = {"c": (), "cuda": ("cudnn", "cublas"), "opencl": ()}   # external libraries a kind can call
EXTERNAL = set()            # kinds registered by plug-in backends (aot.uma): they take only what they claim


def register_kind(name, attrs=()):
    """A plug-in backend's target kind (UMABackend.register): its options are strings."""
    KINDS[name] = {"attrs": {a: "str" for a in attrs}, "keys": (name,)}
    LIBS[name] = ()
    EXTERNAL.add(name)
_VALUE_RE = re.compile(r"^[A-Za-z0-9_.+\-]+$")


def _cortex_m(mcpu):
    return mcpu is not None and mcpu.startswith("cortex-m")


@dataclass(frozen=True)
class Target:
    kind: str
    attrs: tuple = ()                   # ((name, value), ...) in KINDS order; lists as tuples
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
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "host", own_host)

    @classmethod
    def list(cls, text: str):
        """'t1; t2' (TVM's target list for heterogeneous builds), or tvmc's 't1, t2', where a
        comma starts a new target when a target kind follows it ('c -libs=a,b' stays one)
        -> [Target, ...]"""
        items = []
        for part in str(text).split(";"):
            pieces = part.split(",")
            cur = pieces[0]
            for p in pieces[1:]:
                word = p.split()[0] if p.split() else ""
                if p[:1].isspace() or word in KINDS:
                    items.append(cur)
                    cur = p
                else:
                    cur += "," + p
            items.append(cur)
        items = [s.strip() for s in items]
        if not all(items):
            raise AotError(f"target list '{text}' has an empty entry")
        return [cls(s) for s in items]

    @property
    def is_device(self):
        """Kernels run on a device (a GPU) that generated host C drives."""
        return self.kind in DEVICE_KINDS

    @property
    def is_external(self):
        """A plug-in backend's target (it compiles only what it claims)."""
        return self.kind in EXTERNAL

    def get(self, name, default=None):
        return dict(self.attrs).get(name, default)

    @property
    def keys(self):
        return self.get("keys") or _default_keys(self.kind, self.get("mcpu"))

    @property
    def mcpu(self):
        return self.get("mcpu")

    @property
    def libs(self):
        return self.get("libs") or ()

    def __str__(self):
        out = [self.kind]
        for name, value in self.attrs:
            if name == "keys" and tuple(value) == _default_keys(self.kind, self.get("mcpu")):
                continue
            out.append(f"-{name}={','.join(value) if isinstance(value, tuple) else value}")
        return " ".join(out)

    def __repr__(self):
        return f"Target({str(self)!r}" + (f", host={str(self.host)!r})" if self.host else ")")

    def export(self) -> dict:
        """The JSON form recorded in metadata.json."""
        d = {"kind": self.kind, "str": str(self), "keys": list(self.keys)}
        d.update({k: list(v) if isinstance(v, tuple) else v for k, v in self.attrs if k != "keys"})
        if self.host is not None:
            d["host"] = self.host.export()
        return d


def _default_keys(kind, mcpu):
    return ("arm_cpu", "cpu") if kind == "c" and _cortex_m(mcpu) else KINDS[kind]["keys"]


def _parse(text):
    if not isinstance(text, str):
        raise AotError(f"target must be a string such as 'c -mcpu=cortex-m4', not {type(text).__name__}")
    parts = text.split()
    if not parts:
        raise AotError("empty target: give a target such as 'c' or 'c -mcpu=cortex-m4'")
    kind, opts = parts[0], parts[1:]
    if kind not in KINDS:
        plugins = sorted(EXTERNAL)
        raise AotError(f"target kind '{kind}' is not supported{HINTS.get(kind, '')}; "
                       f"supported: {', '.join(sorted(set(KINDS) - EXTERNAL))}"
                       + (f"; registered backends: {', '.join(plugins)}" if plugins else "")
                       + ("" if kind in HINTS else
                          " (a plug-in backend must be registered first: aot compile --backend FILE.py)"))
    spec = KINDS[kind]["attrs"]
    found = {}
    for o in opts:
        name, eq, value = o.lstrip("-").partition("=")
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
        found[name] = tuple(items) if spec[name] == "list" else value
    libs = [lib for lib in found.get("libs", ()) if lib not in LIBS[kind]]
    if libs:
        raise AotError(f"target '{text}': library '{libs[0]}' is not supported for kind '{kind}'"
                       + (f" (supported: {', '.join(LIBS[kind])})" if LIBS[kind] else " (none is, yet)"))
    return kind, tuple((name, found[name]) for name in spec if name in found)
