"""Instructions per kernel on an emulated board: the model's firmware measured with only its first
k kernel calls kept in tvmgen_<mod>___tvm_main__, for k = 0..N; each kernel's count is the
difference (QEMU -icount, as `aot run --profile`, whose total is the last row). Each row also
names the schedule the kernel got.

  python bench/bench_kernel_profile.py MODEL [--board qemu-cortex-m55] [--target "c -mcpu=cortex-m55"]
"""
import argparse
import contextlib
import io
import os
import re
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def rewrite_main(tar_bytes, mod, edit):
    """The MLF with its lib1.c's text before the main function and the main function (from its
    parameter list on) replaced by edit(head, main) -> (head, main)."""
    out = io.BytesIO()
    sig = f"int32_t tvmgen_{mod}___tvm_main__("
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as src, tarfile.open(fileobj=out, mode="w") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None
            if m.name.endswith(f"{mod}_lib1.c"):
                head, main = edit(*data.decode().split(sig, 1))
                data = (head + sig + main).encode()
                m.size = len(data)
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
    from mlf.writer import reseal
    return reseal(out.getvalue())       # the edit is the bench's own: its digest is recorded


def _truncated(tar_bytes, mod, keep):
    """The MLF with only the first `keep` kernel calls of the main function."""
    def edit(head, main):
        calls = list(re.finditer(r"  if \(tvmgen_\w+\(.*?\n  }\n", main, re.S))
        for c in reversed(calls[keep:]):
            main = main[:c.start()] + main[c.end():]
        sig, body = main.split("{\n", 1)       # the parameters the dropped calls used
        names = re.findall(r"(\w+)(?:,|\)\s*$)", sig.strip())
        return head, sig + "{\n" + "".join(f"  (void){n};\n" for n in names) + body
    return rewrite_main(tar_bytes, mod, edit)


def main():
    import aot
    from aot.firmware import measure
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--board", default="qemu-cortex-m55")
    ap.add_argument("--target", default=None, help="default: c -mcpu=<the board's core>")
    a = ap.parse_args()
    target = a.target or f"c -mcpu={a.board.split('-', 1)[1]}"
    with contextlib.redirect_stderr(io.StringIO()):
        res = aot.compile(a.model, target=target)
    mod = res.plan.module_name if hasattr(res.plan, "module_name") else "default"
    kernels = [(c.symbol, getattr(c, "func", None)) for c in res.plan.calls]
    counts = []
    for k in range(len(kernels) + 1):
        rep, _ = measure(_truncated(res.tar, mod, k), a.board)
        counts.append(rep["instructions"])
    print(f"{os.path.basename(a.model)} on {a.board} (target {target})")
    print(f"{'kernel':40s} {'instructions':>12s} {'share':>6s}  schedule")
    total = counts[-1] - counts[0]
    for k, (sym, func) in enumerate(kernels):
        n = counts[k + 1] - counts[k]
        how = func.attrs.get("schedule", "loop nest") if func is not None else "external"
        print(f"{sym:40s} {n:12,d} {100 * n / total:5.1f}%  {how}")
    print(f"{'total (run, calls only)':40s} {total:12,d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
