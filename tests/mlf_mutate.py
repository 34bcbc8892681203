"""Mutants of real MLFs, as a hostile or careless user makes them: header macros (numbers and
names), metadata fields (numbers, strings, lists, removals, type swaps), member lists (dropped,
added, renamed members, sources dropped from aot.sources), member contents and sizes, and
truncated tars. Each mutant must be refused by an AotError (one line) before any compiler starts,
or build and give the untampered MLF's outputs exactly (tests/host/test_mlf_mutants.py, and the
1,000-mutant run of the fuzz tier).

"resealed" mutants also get their digests (aot.digests) recomputed after the change, as a
tamperer who knows the format would: only the semantic cross-checks stand between them and a
build. Those mutants leave the C code alone (its digest is the only witness of what it says)."""
from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import re
import tarfile
import time

import numpy as np

SHARED_KWS = "models/mlperf_tiny/keyword_spotting/kws_ref_model.tflite"
KINDS = ("header_number", "header_name", "header_text", "metadata", "sources_list", "member_drop",
         "member_add", "member_rename", "member_content", "tar_truncate", "tar_size")
RESEALED_KINDS = ("header_number", "header_name", "header_text", "metadata", "sources_list", "member_drop",
                  "member_add", "member_rename", "member_content")
C_CODE = (".c", ".h", ".cu", ".cl")


def bases(shared):
    """(name, MLF bytes, inputs) of the untampered MLFs: the KWS int8 TFLite model, and the corpus's
    float ONNX chain with user pools and with the packed API (two inputs, two outputs)."""
    import aot
    from model_corpus import _chain
    rng = np.random.default_rng(0)
    chain = _chain().SerializeToString()
    feeds_chain = {"x": rng.standard_normal((1, 2, 8, 8)).astype(np.float32),
                   "bias": rng.standard_normal((1, 3)).astype(np.float32)}
    return [
        ("kws_int8", aot.compile(os.path.join(shared, SHARED_KWS)).tar,
         {"input_1": rng.integers(-128, 128, (1, 49, 10, 1)).astype(np.int8)}),
        ("chain_pools", aot.compile(chain, workspace_pools=[("sram", None), ("ext", None)]).tar, feeds_chain),
        ("chain_packed", aot.compile(chain, interface_api="packed", io_names="tvm").tar, feeds_chain),
        ("chain_workspace_io", aot.compile(chain, use_workspace_io=True).tar, feeds_chain),
    ]


def members(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name[2:]: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def pack(files):
    """A tar as `tar cf` of the extracted MLF makes it ('./' prefixes, directories first)."""
    from mlf.writer import write_tar
    return write_tar(files)


def _reseal(files):
    """Digests recomputed over the members as they now are, where the metadata still has a place
    for them."""
    try:
        meta = json.loads(files["metadata.json"])
        a = next(iter(meta["modules"].values()))["aot"]
        a["digests"] = {p: hashlib.sha256(d).hexdigest() for p, d in sorted(files.items()) if p != "metadata.json"}
    except Exception:       # noqa: BLE001 -- metadata the mutation broke: leave it as it is
        return files
    from mlf.writer import metadata_json
    return dict(files, **{"metadata.json": metadata_json(meta).encode()})


def _num(rng, v):
    return int(rng.choice([v + 1, v - 1, 0, 16, v * 2, -v, (1 << 40), v + 16, max(v // 2, 1), 1]))


def _leaves(obj, path=()):
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            yield from _leaves(v, path + (k,))


def _mutate_value(rng, v, strings):
    kind = rng.integers(0, 6)
    if kind == 0:               # type swap
        return "type swap", [None, "x", 0, [], {}, True, 1.5][rng.integers(0, 7)]
    if isinstance(v, bool):
        return "flip", not v
    if isinstance(v, int):
        return "number", _num(rng, v)
    if isinstance(v, float):
        return "number", float(rng.choice([v * 2, -v, 0.0, v + 1e-3, float("1e30")]))
    if isinstance(v, str):
        return "string", str(rng.choice([v + "x", "", v.upper(), v[:-1], strings[rng.integers(0, len(strings))]]))
    if isinstance(v, list):
        if not v:
            return "list add", [strings[rng.integers(0, len(strings))]]
        op = rng.integers(0, 4)
        w = list(v)
        if op == 0:
            w.pop(rng.integers(0, len(w)))
            return "list drop", w
        if op == 1:
            w.append(copy.deepcopy(w[rng.integers(0, len(w))]))
            return "list duplicate", w
        if op == 2:
            return "list reverse", w[::-1]
        return "list empty", []
    if isinstance(v, dict):
        w = dict(v)
        if w and rng.integers(0, 2):
            w.pop(list(w)[rng.integers(0, len(w))])
            return "dict drop key", w
        w["extra_" + str(rng.integers(0, 9))] = 1
        return "dict add key", w
    return "type swap", "x"


def _set(meta, path, value):
    obj = meta
    for k in path[:-1]:
        obj = obj[k]
    if value is KeyError:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


def mutate(rng, tar, kind, resealed):
    """(description, mutant tar bytes)."""
    files = members(tar)
    mod = next(iter(json.loads(files["metadata.json"])["modules"]))
    hdr = f"codegen/host/include/tvmgen_{mod}.h"
    desc = kind
    if kind in ("tar_truncate", "tar_size"):
        data = bytearray(tar)
        if kind == "tar_truncate":
            cut = int(rng.integers(1, len(data)))
            return f"truncated at byte {cut} of {len(data)}", bytes(data[:cut])
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            ms = [m for m in t.getmembers() if m.isfile()]
        m = ms[rng.integers(0, len(ms))]
        size = max(0, m.size + int(rng.choice([-1, 1, -512, 512, 4096, -m.size])))
        head = bytearray(data[m.offset:m.offset + 512])
        head[124:136] = (b"%011o\0" % size)
        head[148:156] = b"        "
        head[148:156] = b"%06o\0 " % sum(head)
        data[m.offset:m.offset + 512] = head
        return f"size field of ./{m.name[2:]} {m.size} -> {size}", bytes(data)
    if kind in ("header_number", "header_name", "header_text"):
        text = files[hdr].decode()
        if kind == "header_number":
            nums = list(re.finditer(r"^(#define \w+ \(?)(-?\d+)", text, re.M))
            m = nums[rng.integers(0, len(nums))]
            v = int(m.group(2))
            new = str(rng.choice([str(_num(rng, v)), f"0x{abs(v):x}", f"0{v}", f"{v}u", f"({v})", f"{v}.0f"]))
            text = text[:m.start(2)] + new + text[m.end(2):]
            desc = f"header {m.group(1).split()[1]} {v} -> {new}"
        elif kind == "header_name":
            names = list(re.finditer(r"^#define (\w+)", text, re.M))
            m = names[rng.integers(0, len(names))]
            op = rng.integers(0, 3)
            new = (m.group(1) + "_X" if op == 0 else m.group(1)[:-1] if op == 1
                   else names[rng.integers(0, len(names))].group(1))
            text = text[:m.start(1)] + new + text[m.end(1):]
            desc = f"header macro {m.group(1)} -> {new}"
        else:
            ids = list(re.finditer(r"(?<=void\* )(\w+);", text))
            op = rng.integers(0, 3)
            if op == 0 and ids:
                m = ids[rng.integers(0, len(ids))]
                text = text[:m.start(1)] + m.group(1) + "_" + text[m.end(1):]
                desc = f"header struct member {m.group(1)} renamed"
            elif op == 1:
                text = text.replace("#endif  /*", f"#define TVMGEN_{mod.upper()}_WORKSPACE_BYTES 16\n#endif  /*", 1)
                desc = "header gains a WORKSPACE_BYTES override"
            else:
                lines = text.split("\n")
                k = int(rng.integers(0, len(lines)))
                desc = f"header line {k + 1} dropped: {lines[k][:40]!r}"
                del lines[k]
                text = "\n".join(lines)
        files[hdr] = text.encode()
    elif kind in ("metadata", "sources_list"):
        meta = json.loads(files["metadata.json"])
        a = meta["modules"][mod]["aot"]
        if kind == "sources_list":
            srcs = a["sources"]
            op = rng.integers(0, 3)
            if op == 0:
                gone = srcs.pop(rng.integers(0, len(srcs)))
                desc = f"aot.sources without {gone}"
            elif op == 1:
                srcs.append(f"codegen/host/src/{mod}_lib9.c")
                desc = "aot.sources lists a missing lib9.c"
            else:
                srcs.append(srcs[0])
                desc = "aot.sources lists a file twice"
        else:
            leaves = [(p, v) for p, v in _leaves(meta) if p
                      and not (resealed and len(p) >= 4 and p[3] == "digests")]
            strings = sorted({v for _, v in leaves if isinstance(v, str)} | {k for p, _ in leaves for k in p
                                                                             if isinstance(k, str)})
            path, v = leaves[rng.integers(0, len(leaves))]
            if rng.integers(0, 8) == 0:
                what, new = "removed", KeyError
            else:
                what, new = _mutate_value(rng, v, strings)
            _set(meta, path, new)
            desc = f"metadata {'.'.join(map(str, path))[:80]}: {what}"
        files["metadata.json"] = json.dumps(meta, indent=2, sort_keys=True).encode() + b"\n"
    elif kind == "member_drop":
        p = sorted(files)[rng.integers(0, len(files))]
        del files[p]
        desc = f"member ./{p} dropped"
    elif kind == "member_add":
        choices = [f"codegen/host/src/{mod}_lib9.c", "codegen/host/include/stdint.h", "codegen/host/include/math.h",
                   f"codegen/host/src/tvmgen_{mod}.h", "runtime/include/string.h", "notes.txt",
                   "codegen/host/src/extra.c", "runtime/include/tvm/runtime/extra.h"]
        p = choices[rng.integers(0, len(choices))]
        files[p] = b"#error tampered\n" if p.endswith((".c", ".h")) else b"hello\n"
        desc = f"member ./{p} added"
    elif kind == "member_rename":
        p = sorted(p for p in files if p != "metadata.json")[rng.integers(0, len(files) - 1)]
        q = p.replace("lib", "LIB") if "lib" in p else p + ".bak"
        files[q] = files.pop(p)
        desc = f"member ./{p} renamed ./{q}"
    elif kind == "member_content":
        pool = [p for p in files if p != "metadata.json" and not (resealed and p.endswith(C_CODE))]
        p = pool[rng.integers(0, len(pool))]
        raw = bytearray(files[p])
        op = rng.integers(0, 3)
        if op == 0 and raw:
            k = int(rng.integers(0, len(raw)))
            raw[k] ^= 1 << int(rng.integers(0, 7))
            desc = f"member ./{p}: bit flipped at byte {k}"
        elif op == 1:
            raw = raw[:int(rng.integers(0, len(raw) + 1))]
            desc = f"member ./{p} cut to {len(raw)} bytes"
        else:
            raw += b"\n/* appended */\n"
            desc = f"member ./{p}: bytes appended"
        files[p] = bytes(raw)
    if resealed:
        files = _reseal(files)
    return desc, pack(files)


class Oracle:
    """Judges mutants of one untampered MLF: refused (AotError, one line, before any compiler
    starts), or built and run with outputs identical to the untampered MLF's."""

    def __init__(self, name, tar, inputs, tmp):
        from aot.host import run_host
        self.name, self.tar, self.inputs, self.tmp = name, tar, inputs, tmp
        self.expected = run_host(tar, inputs)
        self.exes = {}          # what a build reads (harness and members) -> executable

    def _build_key(self, m, data):
        from aot.host import harness_params
        from codegen_c.emit import render_template
        main_c = render_template("host_main.c.j2", **harness_params(m))
        h = hashlib.sha256(main_c.encode())
        for p in sorted(m.files):
            if p.startswith(("codegen/", "runtime/include/")):
                h.update(p.encode() + b"\0" + m.files[p] + b"\0")
        h.update(json.dumps(m.aot["sources"]).encode())
        return h.hexdigest()

    def judge(self, tar):
        """'refused' or 'matched'; raises AssertionError for anything else."""
        from aot.cli import main as cli
        from aot.errors import AotError
        from aot.host import build_host, check_device, read_valid_mlf, refuse_instrumented, run_executable
        path = os.path.join(self.tmp, "mutant.tar")
        with open(path, "wb") as f:
            f.write(tar)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rcs = [cli(["info", path]), cli(["info", path, "--memory"])]
        try:
            m = read_valid_mlf(tar)
            check_device(m.aot)
            refuse_instrumented(m, {})
        except AotError as e:
            assert "\n" not in str(e), f"refusal is not one line: {e}"
            assert rcs == [2, 2], f"refused by the build, but info gives rc {rcs}: {out.getvalue()[-500:]}"
            return "refused"
        assert rcs == [0, 0], f"info gives rc {rcs} on an MLF the build takes: {out.getvalue()[-500:]}"
        key = self._build_key(m, tar)
        if key not in self.exes:
            self.exes[key] = build_host(tar, mlf=m)
        got = run_executable(self.exes[key], m.aot, self.inputs)
        assert sorted(got) == sorted(self.expected), (sorted(got), sorted(self.expected))
        for k, v in self.expected.items():
            assert np.array_equal(got[k], v) and got[k].dtype == v.dtype, f"output '{k}' differs"
        return "matched"


def campaign(shared, tmp, n, seed=0):
    """Runs n mutants (half plain, half resealed) over the bases; returns the counts and failures."""
    rng = np.random.default_rng(seed)
    t0 = time.time()
    oracles = [Oracle(name, tar, inputs, tmp) for name, tar, inputs in bases(shared)]
    counts, failures = {}, []
    for i in range(n):
        o = oracles[i % len(oracles)]
        resealed = bool(i % 2)
        kinds = RESEALED_KINDS if resealed else KINDS
        kind = kinds[rng.integers(0, len(kinds))]
        desc, tar = mutate(rng, o.tar, kind, resealed)
        try:
            verdict = o.judge(tar)
            if tar == o.tar:        # a mutation that changed nothing (a cut in the end padding, 0 -> 0)
                verdict = "unchanged"
        except Exception as e:      # noqa: BLE001 -- every failure is collected and reported
            verdict = "FAILED"
            failures.append(f"{o.name} #{i} {'resealed ' if resealed else ''}{desc}: {type(e).__name__}: "
                            f"{str(e)[:300]}")
        key = (("resealed " if resealed else "") + kind, verdict)
        counts[key] = counts.get(key, 0) + 1
    builds = sum(len(o.exes) for o in oracles)
    return counts, failures, builds, time.time() - t0


def report(counts):
    kinds = sorted({k for k, _ in counts})
    cols = ("refused", "matched", "unchanged", "FAILED")
    lines = [f"{'mutation':28s} " + " ".join(f"{c:>9s}" for c in cols)]
    for k in kinds:
        lines.append(f"{k:28s} " + " ".join(f"{counts.get((k, v), 0):9d}" for v in cols))
    tot = {v: sum(c for (_, w), c in counts.items() if w == v) for v in cols}
    lines.append(f"{'total':28s} " + " ".join(f"{tot[v]:9d}" for v in cols))
    return "\n".join(lines)
