"""The C "hardware" models of the accelerator examples, checked against numpy written here.

Each model is built with ASan/UBSan into a small harness that reads its operands from binary
files, so an out-of-bounds access or an overflow fails the run, not just a wrong number. The
harness allocates every buffer at its exact size for the same reason."""
import os
import shutil
import subprocess

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples", "accelerators")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SANITIZE = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
RTOL = ATOL = 1e-5
SENTINEL = np.float32(12345.0)   # what the harness leaves in outputs a failing call must not touch

SOURCES = {
    "vanilla": os.path.join(EXAMPLES, "vanilla", "src", "vanilla.c"),
    "npu": os.path.join(EXAMPLES, "npu", "src", "npu.c"),
    "conv_bias_relu": os.path.join(EXAMPLES, "conv_bias_relu", "src", "conv_bias_relu.c"),
}

COMMON = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not static: not every harness uses all of them. */
float* load(const char* path, long* count);
void save(const char* path, const float* buf, long n);
float* sentinel_buffer(long n);

/* The whole file, in a buffer of exactly its size (at least one float so malloc is never 0). */
float* load(const char* path, long* count) {
  FILE* f = fopen(path, "rb");
  long bytes;
  float* buf;
  if (f == NULL) exit(3);
  fseek(f, 0, SEEK_END);
  bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (float*)malloc(bytes > 0 ? (size_t)bytes : sizeof(float));
  if (buf == NULL || (bytes > 0 && fread(buf, 1, (size_t)bytes, f) != (size_t)bytes)) exit(3);
  fclose(f);
  *count = bytes / (long)sizeof(float);
  return buf;
}

void save(const char* path, const float* buf, long n) {
  FILE* f = fopen(path, "wb");
  if (f == NULL || (n > 0 && fwrite(buf, sizeof(float), (size_t)n, f) != (size_t)n)) exit(3);
  fclose(f);
}

float* sentinel_buffer(long n) {
  long i;
  float* buf = (float*)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  if (buf == NULL) exit(3);
  for (i = 0; i < (n > 0 ? n : 1); ++i) buf[i] = 12345.0f;
  return buf;
}
"""

VANILLA_HARNESS = COMMON + r"""
#include "vanilla.h"
/* argv: oc iw ih ic kh kw ifmap weights result nullmask  (nullmask bit i passes NULL for pointer i) */
int main(int argc, char** argv) {
  long ni, nw, nout;
  float *in, *w, *out;
  int oc, iw, ih, ic, kh, kw, mask, rc;
  if (argc != 11) return 2;
  oc = atoi(argv[1]); iw = atoi(argv[2]); ih = atoi(argv[3]);
  ic = atoi(argv[4]); kh = atoi(argv[5]); kw = atoi(argv[6]); mask = atoi(argv[10]);
  in = load(argv[7], &ni);
  w = load(argv[8], &nw);
  nout = (oc > 0 && ih > 0 && iw > 0) ? (long)oc * ih * iw : 1;
  out = sentinel_buffer(nout);
  rc = vanilla_conv2dnchw((mask & 1) ? NULL : in, (mask & 2) ? NULL : w, (mask & 4) ? NULL : out,
                          oc, iw, ih, ic, kh, kw);
  save(argv[9], out, nout);
  printf("%d\n", rc);
  free(in); free(w); free(out);
  return 0;
}
"""

CONV_HARNESS = COMMON + r"""
#include "conv_bias_relu.h"
/* argv: ic ih iw oc kh kw sh sw pt pl oh ow relu ifmap weights bias result nullmask */
int main(int argc, char** argv) {
  long a[13], ni, nw, nb, nout;
  float *in, *w, *b, *out;
  int i, mask;
  int32_t rc;
  if (argc != 19) return 2;
  for (i = 0; i < 13; ++i) a[i] = atol(argv[1 + i]);
  mask = atoi(argv[18]);
  in = load(argv[14], &ni);
  w = load(argv[15], &nw);
  b = load(argv[16], &nb);
  nout = (a[3] > 0 && a[10] > 0 && a[11] > 0) ? a[3] * a[10] * a[11] : 1;
  out = sentinel_buffer(nout);
  rc = fused_conv2d_bias_relu((mask & 1) ? NULL : in, (mask & 2) ? NULL : w, (mask & 4) ? NULL : b,
                              (mask & 8) ? NULL : out,
                              (int32_t)a[0], (int32_t)a[1], (int32_t)a[2], (int32_t)a[3], (int32_t)a[4],
                              (int32_t)a[5], (int32_t)a[6], (int32_t)a[7], (int32_t)a[8], (int32_t)a[9],
                              (int32_t)a[10], (int32_t)a[11], (int32_t)a[12]);
  save(argv[17], out, nout);
  printf("%d\n", (int)rc);
  free(in); free(w); free(b); free(out);
  return 0;
}
"""

# A line-oriented driver, so each test states its call sequence and expected return codes in
# Python. The device's sram and each host buffer are malloc'd at their exact sizes.
NPU_HARNESS = COMMON + r"""
#include "npu.h"
/* argv: script data_in data_out. Script lines:
 *   init WORDS | init_nosram       fresh zeroed device (sram of WORDS floats, or NULL)
 *   load N                         next N floats of data_in into the host buffer (exactly N)
 *   write ADDR N | read ADDR N     read appends its N floats to data_out when it succeeds
 *   write_null ADDR N | read_null ADDR N   host pointer NULL
 *   matmul A B BIAS C M K N MODE RELU
 *   open | activate | deactivate | close
 *   nulldev                        the next call gets a NULL device
 *   stat                           prints the device fields
 * Every call prints its return code on its own line. */
int main(int argc, char** argv) {
  npu_device dev;
  char line[256], op[32];
  unsigned long u[4];
  long s[5];
  long n_in, pos = 0;
  float *data_in, *host = NULL, *sram = NULL;
  FILE *script, *out;
  int null_next = 0;
  if (argc != 4) return 2;
  memset(&dev, 0, sizeof dev);
  data_in = load(argv[2], &n_in);
  script = fopen(argv[1], "r");
  out = fopen(argv[3], "wb");
  if (script == NULL || out == NULL) return 3;
  while (fgets(line, sizeof line, script) != NULL) {
    void* d;
    if (sscanf(line, "%31s", op) != 1) continue;
    d = null_next ? NULL : (void*)&dev;
    if (strcmp(op, "nulldev") == 0) { null_next = 1; continue; }
    null_next = 0;
    if (strcmp(op, "init") == 0 || strcmp(op, "init_nosram") == 0) {
      free(sram);
      sram = NULL;
      memset(&dev, 0, sizeof dev);
      if (strcmp(op, "init") == 0) {
        if (sscanf(line, "%*s %lu", &u[0]) != 1 || u[0] == 0) return 2;
        sram = (float*)malloc(u[0] * sizeof(float));
        if (sram == NULL) return 3;
        memset(sram, 0, u[0] * sizeof(float));
        dev.sram = sram;
        dev.sram_words = (uint32_t)u[0];
      }
    } else if (strcmp(op, "load") == 0) {
      if (sscanf(line, "%*s %lu", &u[0]) != 1 || u[0] == 0 || pos + (long)u[0] > n_in) return 2;
      free(host);
      host = (float*)malloc(u[0] * sizeof(float));
      if (host == NULL) return 3;
      memcpy(host, data_in + pos, u[0] * sizeof(float));
      pos += (long)u[0];
    } else if (strcmp(op, "write") == 0 || strcmp(op, "write_null") == 0) {
      if (sscanf(line, "%*s %lu %lu", &u[0], &u[1]) != 2) return 2;
      printf("%d\n", (int)npu_write(d, (uint32_t)u[0], op[5] ? NULL : host, (uint32_t)u[1]));
    } else if (strcmp(op, "read") == 0 || strcmp(op, "read_null") == 0) {
      float* dst;
      int32_t rc;
      if (sscanf(line, "%*s %lu %lu", &u[0], &u[1]) != 2) return 2;
      dst = (float*)malloc((u[1] > 0 && u[1] < 1000000 ? u[1] : 1) * sizeof(float));
      if (dst == NULL) return 3;
      rc = npu_read(d, op[4] ? NULL : dst, (uint32_t)u[0], (uint32_t)u[1]);
      if (rc == 0 && fwrite(dst, sizeof(float), u[1], out) != u[1]) return 3;
      printf("%d\n", (int)rc);
      free(dst);
    } else if (strcmp(op, "matmul") == 0) {
      if (sscanf(line, "%*s %lu %lu %lu %lu %ld %ld %ld %ld %ld", &u[0], &u[1], &u[2], &u[3],
                 &s[0], &s[1], &s[2], &s[3], &s[4]) != 9) return 2;
      printf("%d\n", (int)npu_matmul(d, (uint32_t)u[0], (uint32_t)u[1], (uint32_t)u[2], (uint32_t)u[3],
                                     (int32_t)s[0], (int32_t)s[1], (int32_t)s[2], (int32_t)s[3], (int32_t)s[4]));
    } else if (strcmp(op, "open") == 0) {
      printf("%d\n", (int)TVMDeviceNpuOpen(d));
    } else if (strcmp(op, "activate") == 0) {
      printf("%d\n", (int)TVMDeviceNpuActivate(d));
    } else if (strcmp(op, "deactivate") == 0) {
      printf("%d\n", (int)TVMDeviceNpuDeactivate(d));
    } else if (strcmp(op, "close") == 0) {
      printf("%d\n", (int)TVMDeviceNpuClose(d));
    } else if (strcmp(op, "stat") == 0) {
      printf("stat %d %d %lu %lu %lu\n", (int)dev.is_open, (int)dev.is_active, (unsigned long)dev.jobs,
             (unsigned long)dev.words_in, (unsigned long)dev.words_out);
    } else {
      return 2;
    }
  }
  fclose(script);
  fclose(out);
  free(data_in); free(host); free(sram);
  return 0;
}
"""

HARNESSES = {"vanilla": VANILLA_HARNESS, "npu": NPU_HARNESS, "conv_bias_relu": CONV_HARNESS}


def _need(cc):
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed")


@pytest.fixture(scope="module")
def exes(tmp_path_factory):
    """One sanitized harness per model, built on first use."""
    _need("gcc")
    d = tmp_path_factory.mktemp("accel")
    built = {}

    def get(name):
        if name not in built:
            src = d / f"{name}_harness.c"
            src.write_text(HARNESSES[name])
            exe = d / f"{name}_harness"
            r = subprocess.run(["gcc", *STRICT, *SANITIZE, "-I", os.path.dirname(SOURCES[name]),
                                str(src), SOURCES[name], "-o", str(exe)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            built[name] = str(exe)
        return built[name]
    return get


def _run(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"harness failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _f32(path):
    return np.fromfile(path, dtype=np.float32)


# ---------------------------------------------------------------- vanilla

def ref_same_conv(x, w):
    """'same' conv, stride 1, via sliding windows over an explicitly zero-padded input."""
    kh, kw = w.shape[2:]
    xp = np.pad(x.astype(np.float64), ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))   # [ic, ih, iw, kh, kw]
    return np.einsum("chwyx,ocyx->ohw", win, w.astype(np.float64))


def run_vanilla(exe, tmp_path, x, w, oc, iw, ih, ic, kh, kw, mask=0):
    x.astype(np.float32).tofile(tmp_path / "in.bin")
    w.astype(np.float32).tofile(tmp_path / "w.bin")
    rc = int(_run([exe, oc, iw, ih, ic, kh, kw, tmp_path / "in.bin", tmp_path / "w.bin", tmp_path / "out.bin", mask]))
    return rc, _f32(tmp_path / "out.bin")


@pytest.mark.parametrize("oc,ic,ih,iw,kh,kw", [
    (4, 3, 8, 6, 3, 3),
    (5, 7, 5, 9, 1, 1),
    (2, 4, 7, 11, 5, 5),
    (3, 2, 6, 4, 5, 1),      # kh != kw: catches swapped axes
    (2, 3, 2, 3, 5, 5),      # input smaller than the kernel: every window is clipped
])
def test_vanilla_matches_numpy(exes, tmp_path, oc, ic, ih, iw, kh, kw):
    r = np.random.default_rng(oc * 100 + ic * 10 + kh)
    x = r.standard_normal((ic, ih, iw)).astype(np.float32)
    w = (r.standard_normal((oc, ic, kh, kw)) * 0.3).astype(np.float32)
    rc, got = run_vanilla(exes("vanilla"), tmp_path, x, w, oc, iw, ih, ic, kh, kw)
    assert rc == 0
    np.testing.assert_allclose(got.reshape(oc, ih, iw), ref_same_conv(x, w), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("oc,iw,ih,ic,kh,kw,mask", [
    (0, 4, 4, 2, 3, 3, 0), (2, -1, 4, 2, 3, 3, 0), (2, 4, 0, 2, 3, 3, 0), (2, 4, 4, -3, 3, 3, 0),
    (2, 4, 4, 2, 0, 3, 0), (2, 4, 4, 2, 3, -1, 0),
    (2, 4, 4, 2, 2, 3, 0), (2, 4, 4, 2, 3, 4, 0),            # even kernels: "same" is not symmetric
    (2, 4, 4, 2, 3, 3, 1), (2, 4, 4, 2, 3, 3, 2), (2, 4, 4, 2, 3, 3, 4),   # NULL ifmap / weights / result
])
def test_vanilla_rejects_bad_arguments(exes, tmp_path, oc, iw, ih, ic, kh, kw, mask):
    x = np.ones(4 * 4 * 2, np.float32)
    w = np.ones(2 * 2 * 4 * 4, np.float32)
    rc, got = run_vanilla(exes("vanilla"), tmp_path, x, w, oc, iw, ih, ic, kh, kw, mask)
    assert rc == -1
    assert np.all(got == SENTINEL)      # nothing written on failure


# ---------------------------------------------------------------- conv_bias_relu

def ref_conv_bias_relu(x, w, b, stride, pad_top, pad_left, oh, ow, relu):
    """Explicit loops over kernel taps, on an input padded (or cropped) to exactly the rows
    and columns the output needs; bias added after the sum."""
    ic, ih, iw = x.shape
    oc, _, kh, kw = w.shape
    sh, sw = stride
    need_h, need_w = (oh - 1) * sh + kh, (ow - 1) * sw + kw
    xp = np.zeros((ic, need_h, need_w))
    src = x.astype(np.float64)[:, :max(0, need_h - pad_top), :max(0, need_w - pad_left)]
    xp[:, pad_top:pad_top + src.shape[1], pad_left:pad_left + src.shape[2]] = src
    out = np.zeros((oc, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, ky:ky + sh * (oh - 1) + 1:sh, kx:kx + sw * (ow - 1) + 1:sw]
            out += np.einsum("chw,oc->ohw", patch, w[:, :, ky, kx].astype(np.float64))
    out += b.astype(np.float64)[:, None, None]
    return np.maximum(out, 0) if relu else out


def run_conv(exe, tmp_path, x, w, b, args, mask=0):
    x.astype(np.float32).tofile(tmp_path / "in.bin")
    w.astype(np.float32).tofile(tmp_path / "w.bin")
    b.astype(np.float32).tofile(tmp_path / "b.bin")
    rc = int(_run([exe, *args, tmp_path / "in.bin", tmp_path / "w.bin", tmp_path / "b.bin",
                   tmp_path / "out.bin", mask]))
    return rc, _f32(tmp_path / "out.bin")


def out_size(i, k, s, p0, p1):
    return (i + p0 + p1 - k) // s + 1


@pytest.mark.parametrize("relu", [0, 1])
@pytest.mark.parametrize("ic,ih,iw,oc,kh,kw,stride,pads", [
    (3, 8, 8, 4, 3, 3, (1, 1), (1, 1, 1, 1)),
    (3, 9, 7, 5, 3, 3, (2, 2), (1, 1, 1, 1)),
    (2, 10, 9, 3, 3, 2, (2, 1), (0, 1, 2, 0)),       # asymmetric: top/left differ from bottom/right
    (4, 7, 8, 2, 5, 5, (2, 2), (2, 1, 1, 2)),
    (1, 5, 6, 3, 1, 1, (2, 2), (0, 0, 0, 0)),
    (2, 6, 5, 2, 3, 3, (1, 2), (0, 0, 0, 0)),        # no padding: bounds checks never clip
])
def test_conv_bias_relu_matches_numpy(exes, tmp_path, ic, ih, iw, oc, kh, kw, stride, pads, relu):
    pt, pl, pb, pr = pads
    oh, ow = out_size(ih, kh, stride[0], pt, pb), out_size(iw, kw, stride[1], pl, pr)
    r = np.random.default_rng(ic * 1000 + ih * 100 + kh * 10 + relu)
    x = r.standard_normal((ic, ih, iw)).astype(np.float32)
    w = (r.standard_normal((oc, ic, kh, kw)) * 0.3).astype(np.float32)
    b = r.standard_normal(oc).astype(np.float32)
    args = [ic, ih, iw, oc, kh, kw, stride[0], stride[1], pt, pl, oh, ow, relu]
    rc, got = run_conv(exes("conv_bias_relu"), tmp_path, x, w, b, args)
    assert rc == 0
    ref = ref_conv_bias_relu(x, w, b, stride, pt, pl, oh, ow, relu)
    np.testing.assert_allclose(got.reshape(oc, oh, ow), ref, rtol=RTOL, atol=ATOL)
    if relu:
        assert got.min() >= 0 and (ref == 0).any()     # the clamp was actually exercised
    else:
        assert got.min() < 0


def test_conv_bias_relu_rejects_bad_arguments(exes, tmp_path):
    x, w, b = np.ones(2 * 4 * 4, np.float32), np.ones(3 * 2 * 3 * 3, np.float32), np.ones(3, np.float32)
    good = [2, 4, 4, 3, 3, 3, 1, 1, 1, 1, 4, 4, 0]
    rc, got = run_conv(exes("conv_bias_relu"), tmp_path, x, w, b, good)
    assert rc == 0 and np.all(got != SENTINEL)
    names = ["ic", "ih", "iw", "oc", "kh", "kw", "stride_h", "stride_w", "pad_top", "pad_left", "oh", "ow"]
    for i, name in enumerate(names):
        for bad in ([0, -1] if "pad" not in name else [-1]):
            args = list(good)
            args[i] = bad
            rc, got = run_conv(exes("conv_bias_relu"), tmp_path, x, w, b, args)
            assert rc == -1, (name, bad)
            assert np.all(got == SENTINEL), name
    for mask in (1, 2, 4, 8):
        rc, got = run_conv(exes("conv_bias_relu"), tmp_path, x, w, b, good, mask)
        assert rc == -1 and np.all(got == SENTINEL), mask


# ---------------------------------------------------------------- npu

def run_npu(exe, tmp_path, script, data=()):
    """Runs a script; returns (return codes, stat tuples, floats read back)."""
    (tmp_path / "script.txt").write_text("\n".join(script) + "\n")
    np.concatenate([np.asarray(a, np.float32).ravel() for a in data] or [np.zeros(0, np.float32)]) \
        .tofile(tmp_path / "data_in.bin")
    out = _run([exe, tmp_path / "script.txt", tmp_path / "data_in.bin", tmp_path / "data_out.bin"])
    rcs, stats = [], []
    for line in out.split("\n"):
        if line.startswith("stat"):
            stats.append(tuple(int(v) for v in line.split()[1:]))
        elif line:
            rcs.append(int(line))
    return rcs, stats, _f32(tmp_path / "data_out.bin")


def ref_matmul(a, b, bias, mode, relu):
    c = a.astype(np.float64) @ b.astype(np.float64)
    if mode == 1:
        c = c + bias.astype(np.float64)[:, None]
    elif mode == 2:
        c = c + bias.astype(np.float64)[None, :]
    return np.maximum(c, 0) if relu else c


@pytest.mark.parametrize("relu", [0, 1])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("m,k,n", [(4, 6, 5), (17, 33, 9), (1, 1, 1)])
def test_npu_matmul_matches_numpy(exes, tmp_path, m, k, n, mode, relu):
    r = np.random.default_rng(m * 100 + mode * 10 + relu)
    a = r.standard_normal((m, k)).astype(np.float32)
    b = r.standard_normal((k, n)).astype(np.float32)
    blen = {0: 0, 1: m, 2: n}[mode]
    bias = r.standard_normal(blen).astype(np.float32)
    # operands packed in an odd order with gaps, ending exactly at the top of sram
    c_at = 3
    b_at = c_at + m * n + 1
    bias_at = b_at + k * n
    a_at = bias_at + blen + 2
    words = a_at + m * k
    script = [f"init {words}", "open", "activate",
              f"load {m * k}", f"write {a_at} {m * k}",
              f"load {k * n}", f"write {b_at} {k * n}"]
    data = [a, b]
    if mode:
        script += [f"load {blen}", f"write {bias_at} {blen}"]
        data.append(bias)
    # bias address is garbage when unused: mode 0 must not look at it
    script += [f"matmul {a_at} {b_at} {bias_at if mode else 0xFFFFFFFF} {c_at} {m} {k} {n} {mode} {relu}",
               f"read {c_at} {m * n}", "stat", "deactivate", "close", "stat"]
    rcs, stats, got = run_npu(exes("npu"), tmp_path, script, data)
    assert rcs == [0] * len(rcs)
    words_in = m * k + k * n + blen
    assert stats == [(1, 1, 1, words_in, m * n), (0, 0, 1, words_in, m * n)]
    np.testing.assert_allclose(got.reshape(m, n), ref_matmul(a, b, bias, mode, relu), rtol=RTOL, atol=ATOL)


def test_npu_lifecycle_errors(exes, tmp_path):
    ops = ["write 0 1", "read 0 1", "matmul 0 1 0 2 1 1 1 0 0"]
    script, expect = ["init 16", "load 1"], []

    def step(line, rc):
        script.append(line)
        expect.append(rc)
    for op in ops + ["activate", "deactivate", "close"]:   # never opened
        step(op, -1)
    for op in ops + ["open", "activate", "deactivate", "close"]:   # NULL device
        script.append("nulldev")
        step(op, -1)
    step("open", 0)
    step("open", -1)                    # double open
    for op in ops + ["deactivate"]:     # open but not active
        step(op, -1)
    step("activate", 0)
    step("activate", -1)
    step("close", -1)                   # still active
    for op in ops:
        step(op, 0)
    step("deactivate", 0)
    step("deactivate", -1)
    step("close", 0)
    step("close", -1)
    for op in ops + ["activate"]:       # closed again
        step(op, -1)
    script.append("stat")
    step("open", 0)                     # reopening starts the counters afresh
    script.append("stat")
    script.append("init_nosram")
    step("open", -1)                    # nothing to compute on
    rcs, stats, _ = run_npu(exes("npu"), tmp_path, script, [np.ones(1)])
    assert rcs == expect
    assert stats == [(0, 0, 1, 1, 1), (1, 0, 0, 0, 0)]


def test_npu_range_and_overlap_errors(exes, tmp_path):
    W = 64
    script = [f"init {W}", "open", "activate", f"load {W}", f"write 0 {W}"]   # whole sram: fits exactly
    expect = [0, 0, 0]

    def step(line, rc):
        script.append(line)
        expect.append(rc)
    # host <-> sram ranges
    for op in ("write", "read"):
        step(f"{op} {W - 1} 1", 0)
        step(f"{op} {W - 1} 2", -1)
        step(f"{op} {W} 1", -1)
        step(f"{op} 0 {W + 1}", -1)
        step(f"{op} 4294967295 2", -1)           # wraps to 1 in 32-bit arithmetic
        step(f"{op} 2 4294967295", -1)
        step(f"{op} 0 0", -1)
        step(f"{op}_null 0 1", -1)
    # matmul: 2x3 @ 3x4 (+bias): A at 0..6, B at 6..18, C at 22..30, bias at 40..42 (or ..44)
    A, B, C, BI = 0, 6, 22, 40
    ok = lambda a=A, b=B, bi=BI, c=C, m=2, k=3, n=4, mode=1, relu=0: f"matmul {a} {b} {bi} {c} {m} {k} {n} {mode} {relu}"
    step(ok(), 0)
    step(ok(mode=2), 0)
    step(ok(c=W - 8), 0)                   # C ends exactly at the top
    step(ok(c=W - 7), -1)                  # one past
    step(ok(a=W - 5), -1)
    step(ok(b=W - 11), -1)
    step(ok(bi=W - 1), -1)                 # bias[M] with M=2 runs off the end
    step(ok(bi=W - 1, mode=2), -1)         # bias[N] with N=4
    step(ok(bi=W - 4, mode=2), 0)
    step(ok(bi=4294967295, mode=0), 0)     # ignored when there is no bias
    step(ok(a=4294967295), -1)
    step(ok(m=0), -1)
    step(ok(k=-1), -1)
    step(ok(n=0), -1)
    step(ok(mode=3), -1)
    step(ok(mode=-1), -1)
    step(ok(m=65536, k=65537, n=1), -1)    # m*k wraps to 65536 in 32 bits
    step(ok(m=2147483647, k=2147483647, n=2147483647), -1)
    # overlap of C with an operand
    step(ok(c=A + 5), -1)                  # last word of A
    step(ok(a=C + 7), -1)                  # A starts at C's last word
    step(ok(c=B + 11), -1)                 # C's first word is B's last
    step(ok(c=BI - 7), -1)                 # C's last word is bias[0]
    step(ok(c=BI + 1), -1)
    step(ok(c=BI - 7, mode=2), -1)
    step(ok(c=BI - 7, mode=0), 0)          # no bias read, so no conflict
    step(ok(c=A + 6, b=A + 14), 0)         # C right after A: touching is not overlapping
    step(ok(b=A), 0)                       # A and B may share words: both are only read
    script.append("stat")
    # a failed matmul (or write) leaves sram alone
    step(f"read 0 {W}", 0)
    step(ok(mode=5), -1)
    step(ok(c=B), -1)
    step(f"write {W - 1} 2", -1)
    step(f"read 0 {W}", 0)
    script.append("stat")
    rcs, stats, got = run_npu(exes("npu"), tmp_path, script, [np.arange(W) + 1.0])
    assert rcs == expect
    # 8 successful matmuls; failed calls count nothing
    assert stats == [(1, 1, 8, W + 1, 1), (1, 1, 8, W + 1, 1 + 2 * W)]
    before, after = got[1:1 + W], got[1 + W:]
    np.testing.assert_array_equal(before, after)


def test_npu_result_against_staged_copy(exes, tmp_path):
    """A full job as the generated executor does it, with C placed before its operands and the
    sram larger than needed: the output read back is the numpy product, the rest untouched."""
    r = np.random.default_rng(7)
    m, k, n, W = 3, 5, 2, 100
    a = r.standard_normal((m, k)).astype(np.float32)
    b = r.standard_normal((k, n)).astype(np.float32)
    bias = r.standard_normal(n).astype(np.float32)
    fill = np.full(W, -7.0, np.float32)
    script = ["init 100", "open", "activate", f"load {W}", f"write 0 {W}",
              f"load {m * k}", f"write 50 {m * k}", f"load {k * n}", f"write 70 {k * n}",
              f"load {n}", f"write 90 {n}", f"matmul 50 70 90 10 {m} {k} {n} 2 1",
              f"read 0 {W}", "deactivate", "close"]
    rcs, _, got = run_npu(exes("npu"), tmp_path, script, [fill, a, b, bias])
    assert rcs == [0] * len(rcs)
    np.testing.assert_allclose(got[10:10 + m * n].reshape(m, n), ref_matmul(a, b, bias, 2, 1), rtol=RTOL, atol=ATOL)
    untouched = np.r_[0:10, 10 + m * n:50]
    assert np.all(got[untouched] == -7.0)


# ---------------------------------------------------------------- build hygiene

@pytest.mark.parametrize("cc,target", [
    ("gcc", []), ("clang", []), ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb"]),
])
def test_models_compile_strictly(tmp_path, cc, target):
    """Warning-free C99 for host and a Cortex-M4, and no heap, stdio or writable globals:
    the objects define only their functions and need nothing from libc beyond mem*."""
    _need(cc)
    nm = "arm-none-eabi-nm" if cc.startswith("arm") else "nm"
    for name, src in SOURCES.items():
        for opt in ("-O0", "-O2"):
            obj = tmp_path / f"{name}{opt}.o"
            r = subprocess.run([cc, *target, *STRICT, opt, "-c", src, "-o", str(obj)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            if shutil.which(nm) is None:
                continue
            syms = subprocess.run([nm, str(obj)], check=True, capture_output=True, text=True).stdout.split("\n")
            kinds = {line.split()[-1]: line.split()[-2] for line in syms if line.strip()}
            assert not [s for s, t in kinds.items() if t in "DdBbCG"], (name, kinds)
            assert not [s for s, t in kinds.items() if t == "U" and s not in ("memcpy", "memset", "memmove")
                        and not s.startswith("__aeabi_")], (name, kinds)   # soft-float helpers on -mthumb


def test_headers_are_cxx_clean(tmp_path):
    _need("g++")
    src = tmp_path / "all.cc"
    src.write_text('#include "vanilla.h"\n#include "npu.h"\n#include "conv_bias_relu.h"\n'
                   "int main() { npu_device d = npu_device(); return TVMDeviceNpuOpen(&d) == -1 ? 0 : 1; }\n")
    incs = [a for s in SOURCES.values() for a in ("-I", os.path.dirname(s))]
    r = subprocess.run(["g++", "-Wall", "-Wextra", "-Werror", "-pedantic", *incs, "-fsyntax-only", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
