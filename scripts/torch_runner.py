#!/usr/bin/env python3
"""Runs attain's op suite on any PyTorch device and writes an attain results file.

Usage:
  attain catalog --suite llm-1055 --json --out suite.json     # on any machine
  torch_runner.py suite.json --device cuda --out h100.json --device-id h100-sxm
  attain compare cpu.json h100.json                           # back where attain is

SUITE is what `attain catalog --json` writes (a JSON array of ops, each with its "spec") or a CSV
with a `spec` column. The device is any torch device: cuda (NVIDIA, or AMD under ROCm), npu
(Ascend, after `import torch_npu`), xpu (Intel), mps (Apple) or cpu. Each op runs as that
device's own stack runs it: GEMM by torch.matmul, batched by torch.bmm, grouped and masked
grouped GEMMs by one matmul per group (torch._grouped_mm where the device has it, bf16),
fp8 GEMMs by torch._scaled_mm with per-tensor scales (unsupported, with the reason, where the
device has none), MLA decode as the absorbed attention in plain torch ops (softmax(q k^T) v over
the 576-wide latent rows, causal for s_q > 1; an fp8 cache is dequantized to bf16 first).

Every op's inputs are seeded; its output is checked against a float64 reference computed by
torch from the same (quantized) inputs (float32 where the device has no float64) before it is
timed. Timing: a warm-up run, then runs until --max-seconds or --min-reps, each after a write of
--flush-bytes (default twice the GPU's L2, or twice the CPU's last-level cache) outside the
timed region, timed with device events where the device has them, else with synchronize and
the wall clock; the median, minimum and interquartile range are recorded.

The results file (schema attain.results/1, backend "torch:<device>") is rewritten atomically
after every op, marked incomplete until the run ends; --resume finishes a file made by the same
settings, skipping the ops it records; a lock (FILE.lock) refuses a second writer. With
--device-id (a file of data/devices/) or --device-file, efficiencies are computed against that
chip's roofline: min(peak of the op's dtype, FLOPs/bytes x memory bandwidth), with FLOPs and
bytes counted as attain counts them (include/attain/op.hpp).

Only PyTorch is needed (and the standard library).
"""
import argparse
import csv
import datetime
import fcntl
import json
import math
import os
import pathlib
import platform
import signal
import sys
import time

SCHEMA = "attain.results/1"
MLA_DK, MLA_DV, MLA_BLOCK, MLA_FP8_ROW = 576, 512, 64, 656
MLA_SOFTMAX_SCALE = 1.0 / math.sqrt(192.0)  # DeepSeek's qk head dim (128 nope + 64 rope)
FP8_BLOCK = 128
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "i32": 4, "u8": 1}
# Normwise relative error allowed per dtype (the output is stored in bf16 for bf16 and fp8).
TOLERANCE = {"fp32": 1e-4, "fp16": 5e-3, "bf16": 2e-2, "fp8": 2e-2}
REPO = pathlib.Path(__file__).resolve().parent.parent


class Unsupported(Exception):
    """The device's stack cannot run this op; the message says why."""


# ---------------------------------------------------------------- op specs (as attain writes them)

def parse_spec(spec):
    kind, _, rest = spec.partition(":")
    fields = dict(kv.split("=", 1) for kv in rest.split(",") if kv)
    op = {"spec": spec, "kind": kind, "dtype": fields.get("dtype", "fp32")}
    ints = {"gemm": ["m", "n", "k"], "batched_gemm": ["batch", "m", "n", "k"],
            "grouped_gemm": ["groups", "m", "n", "k"], "mla_decode": ["b", "s", "h"]}
    if kind not in ints:
        raise ValueError(f"{spec}: unknown op kind '{kind}'")
    for key in ints[kind]:
        op[key] = int(fields[key])
    op["skew"] = float(fields.get("skew", 0))
    op["layout"] = fields.get("layout", "contiguous")
    op["s_q"] = int(fields.get("s_q", 1))
    return op


def ceil_div(a, b):
    return (a + b - 1) // b


def group_rows(op):
    """Rows of each group, as attain's Op::group_rows() deals them (Zipf skew, largest remainders)."""
    g, m, skew = op["groups"], op["m"], op["skew"]
    if skew <= 0 or g == 1:
        return [m] * g
    total = g * m
    w = [(i + 1) ** -skew for i in range(g)]
    s = sum(w)
    rows, rem = [], []
    for i in range(g):
        exact = total * w[i] / s
        rows.append(math.floor(exact))
        rem.append((exact - rows[i], i))
    rem.sort(key=lambda x: -x[0])  # stable, like std::stable_sort
    i = 0
    while sum(rows) < total:
        rows[rem[i % g][1]] += 1
        i += 1
    return rows


def out_dtype(dt):
    return dt if dt in ("fp32", "fp16") else "bf16"


def tensor_bytes(op):
    """op_tensors() of attain: (name, dtype, elements) of every tensor the op reads or writes."""
    dt, od, kind = op["dtype"], out_dtype(op["dtype"]), op["kind"]
    fp8 = dt == "fp8"
    t = []
    if kind in ("gemm", "batched_gemm", "grouped_gemm"):
        m, n, k = op["m"], op["n"], op["k"]
        kb, nb = ceil_div(k, FP8_BLOCK), ceil_div(n, FP8_BLOCK)
        if kind == "gemm":
            lead, rows, wl = 1, m, 1
        elif kind == "batched_gemm":
            lead, rows, wl = op["batch"], m, op["batch"]
        elif op["layout"] == "contiguous":
            lead, rows, wl = 1, op["groups"] * m, op["groups"]
            t.append(("offsets", "i32", op["groups"] + 1))
        else:
            lead, rows, wl = op["groups"], max(group_rows(op)), op["groups"]
            t.append(("counts", "i32", op["groups"]))
        t += [("a", dt, lead * rows * k), ("w", dt, wl * n * k), ("c", od, lead * rows * n)]
        if fp8:
            t += [("a_scale", "fp32", lead * rows * kb), ("w_scale", "fp32", wl * nb * kb)]
    else:
        b, s, h, sq = op["b"], op["s"], op["h"], op["s_q"]
        blocks = b * ceil_div(s, MLA_BLOCK)
        t.append(("q", "fp32" if dt == "fp32" else "bf16", b * sq * h * MLA_DK))
        if fp8:
            t.append(("kcache", "u8", blocks * MLA_BLOCK * MLA_FP8_ROW))
        else:
            t.append(("kcache", dt, blocks * MLA_BLOCK * MLA_DK))
        t += [("o", od, b * sq * h * MLA_DV), ("lse", "fp32", b * h * sq)]
    return t


def op_flops(op):
    kind = op["kind"]
    if kind == "gemm":
        return 2.0 * op["m"] * op["n"] * op["k"]
    if kind == "batched_gemm":
        return 2.0 * op["batch"] * op["m"] * op["n"] * op["k"]
    if kind == "grouped_gemm":
        return 2.0 * op["groups"] * op["m"] * op["n"] * op["k"]
    s, q = op["s"], op["s_q"]
    n = min(s, q)
    pairs = n * s - n * (n - 1) / 2
    return 2.0 * op["b"] * op["h"] * pairs * (MLA_DK + MLA_DV)


def op_bytes(op):
    """Inputs read once + outputs written once, as attain's Op::bytes() counts them."""
    total = sum(n * DTYPE_BYTES[d] for _, d, n in tensor_bytes(op))
    if op["kind"] == "mla_decode":
        row = MLA_FP8_ROW if op["dtype"] == "fp8" else MLA_DK * DTYPE_BYTES[op["dtype"]]
        alloc = op["b"] * ceil_div(op["s"], MLA_BLOCK) * MLA_BLOCK
        total -= (alloc - op["b"] * op["s"]) * row
    if op["kind"] == "grouped_gemm" and op["layout"] == "masked" and op["skew"] > 0:
        pad = op["groups"] * max(group_rows(op)) - op["groups"] * op["m"]
        scale_row = ceil_div(op["k"], FP8_BLOCK) * 4 if op["dtype"] == "fp8" else 0
        total -= pad * (op["k"] * DTYPE_BYTES[op["dtype"]] +
                        op["n"] * DTYPE_BYTES[out_dtype(op["dtype"])] + scale_row)
    return float(total)


# ---------------------------------------------------------------- the suite

def read_suite(path):
    """Catalog ops from `attain catalog --json` or a CSV with a spec column."""
    text = pathlib.Path(path).read_text()
    if text.lstrip().startswith("["):
        rows = json.loads(text)
    else:
        rows = list(csv.DictReader(text.splitlines()))
        if rows and "spec" not in rows[0]:
            raise SystemExit(f"{path}: a CSV suite needs a 'spec' column")
    ops = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not r.get("spec"):
            raise SystemExit(f"{path}: entry {i} has no spec")
        op = parse_spec(r["spec"])
        op["prov"] = {k: r.get(k, "") for k in ("model", "layer", "phase")}
        for k in ("tokens", "context", "count"):
            op["prov"][k] = int(r.get(k) or (1 if k == "count" else 0))
        ops.append(op)
    return ops


# ---------------------------------------------------------------- the device

class Device:
    def __init__(self, torch, name):
        self.torch, self.name = torch, name
        self.dev = torch.device(name)
        self.kind = self.dev.type
        if self.kind == "npu":
            import torch_npu  # noqa: F401  (registers the Ascend device)
        self.module = getattr(torch, self.kind, None)
        if self.kind == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False  # fp32 ops are fp32
            torch.backends.cudnn.allow_tf32 = False
        self.has_f64 = self.kind not in ("mps",)

    def sync(self):
        if self.module is not None and hasattr(self.module, "synchronize"):
            self.module.synchronize()

    def events(self):
        return self.module is not None and hasattr(self.module, "Event") and self.kind != "cpu"

    def description(self):
        t = self.torch
        parts = [f"torch {t.__version__}"]
        if self.kind == "cuda" and t.cuda.is_available():
            parts.append(t.cuda.get_device_name(self.dev))
            if getattr(t.version, "hip", None):
                parts.append(f"ROCm {t.version.hip}")
            elif getattr(t.version, "cuda", None):
                parts.append(f"CUDA {t.version.cuda}")
            try:
                drv = t.cuda.driver_version() if hasattr(t.cuda, "driver_version") else None
                if drv:
                    parts.append(f"driver {drv}")
            except Exception:  # noqa: BLE001 (the driver's version is a nicety)
                pass
        elif self.kind == "cpu":
            parts.append(platform.processor() or platform.machine())
        elif self.module is not None and hasattr(self.module, "get_device_name"):
            parts.append(self.module.get_device_name())
        return ", ".join(parts)

    def model_name(self):
        t = self.torch
        if self.kind == "cuda" and t.cuda.is_available():
            return t.cuda.get_device_name(self.dev)
        if self.kind == "cpu":
            for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines() \
                    if pathlib.Path("/proc/cpuinfo").exists() else []:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
            return platform.processor() or platform.machine()
        return self.name

    def flush_bytes_default(self):
        t = self.torch
        if self.kind == "cuda" and t.cuda.is_available():
            l2 = getattr(t.cuda.get_device_properties(self.dev), "L2_cache_size", 0)
            if l2:
                return 2 * l2
        if self.kind == "cpu":
            for idx in ("index3", "index2"):
                p = pathlib.Path(f"/sys/devices/system/cpu/cpu0/cache/{idx}/size")
                if p.exists():
                    s = p.read_text().strip()
                    mult = {"K": 1 << 10, "M": 1 << 20}.get(s[-1], 1)
                    return 2 * int(s.rstrip("KM")) * mult
        return 256 << 20


def torch_dtype(torch, dt):
    name = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "float8_e4m3fn"}[dt]
    if not hasattr(torch, name):
        raise Unsupported(f"this torch ({torch.__version__}) has no {name}")
    return getattr(torch, name)


# ---------------------------------------------------------------- one op

class Case:
    """One op's inputs on the device, the callable that computes it, and its reference."""

    def __init__(self, torch, device, op, seed):
        self.torch, self.device, self.op = torch, device, op
        gen = torch.Generator(device="cpu").manual_seed(seed)
        self.ref_dtype = torch.float64 if device.has_f64 else torch.float32
        dt = op["dtype"]
        self.out_dtype = torch_dtype(torch, out_dtype(dt))
        self.in_dtype = torch_dtype(torch, dt)

        def rand(*shape, scale=1.0, dtype=None):
            x = torch.randn(*shape, generator=gen, dtype=torch.float32) * scale
            return x.to(dtype or self.in_dtype).to(device.dev)

        kind = op["kind"]
        if kind == "mla_decode":
            self._mla(rand)
            return
        m, n, k = op["m"], op["n"], op["k"]
        scale = 1.0 / math.sqrt(k)
        if kind == "gemm":
            self.a, self.w = rand(m, k), rand(n, k, scale=scale)
            self.run = self._gemm
        elif kind == "batched_gemm":
            self.a, self.w = rand(op["batch"], m, k), rand(op["batch"], n, k, scale=scale)
            self.run = self._bmm
        else:
            self.rows = group_rows(op)
            self.w = rand(op["groups"], n, k, scale=scale)
            if op["layout"] == "contiguous":
                self.a = rand(sum(self.rows), k)
                offs = [0]
                for r in self.rows:
                    offs.append(offs[-1] + r)
                self.offsets = offs
                self.run = self._grouped
            else:
                self.a = rand(op["groups"], max(self.rows), k)
                self.run = self._masked
        if dt == "fp8":
            self._fp8_check()

    # -- GEMMs: C = A . W^T
    def _mm(self, a, w):
        if self.op["dtype"] != "fp8":
            return self.torch.matmul(a, w.t())
        one = self.torch.ones((), device=self.device.dev, dtype=self.torch.float32)
        return self.torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one,
                                     out_dtype=self.out_dtype)

    def _fp8_check(self):
        if not hasattr(self.torch, "_scaled_mm"):
            raise Unsupported(f"torch {self.torch.__version__} has no torch._scaled_mm")
        try:
            probe = self.torch.zeros(16, 16, device=self.device.dev).to(self.in_dtype)
            self._mm(probe, probe)
        except Exception as e:  # noqa: BLE001 (the device says why it cannot)
            raise Unsupported(f"torch._scaled_mm on {self.device.name}: {str(e).splitlines()[0]}")

    def _gemm(self):
        return self._mm(self.a, self.w)

    def _bmm(self):
        if self.op["dtype"] == "fp8":
            return self.torch.stack([self._mm(self.a[i], self.w[i]) for i in range(self.op["batch"])])
        return self.torch.bmm(self.a, self.w.transpose(1, 2))

    def _grouped(self):
        t = self.torch
        if (hasattr(t, "_grouped_mm") and self.device.kind == "cuda" and
                self.op["dtype"] == "bf16" and getattr(self, "grouped_mm_ok", True)):
            try:
                offs = t.tensor(self.offsets[1:], device=self.device.dev, dtype=t.int32)
                return t._grouped_mm(self.a, self.w.transpose(1, 2), offs=offs)
            except Exception:  # noqa: BLE001 (not on this GPU: one matmul per group)
                self.grouped_mm_ok = False
        return t.cat([self._mm(self.a[self.offsets[g]:self.offsets[g + 1]], self.w[g])
                      for g in range(self.op["groups"])])

    def _masked(self):
        t = self.torch
        out = t.zeros(self.op["groups"], max(self.rows), self.op["n"], dtype=self.out_dtype,
                      device=self.device.dev)
        for g, r in enumerate(self.rows):
            if r:
                out[g, :r] = self._mm(self.a[g, :r], self.w[g]).to(self.out_dtype)
        return out

    def reference(self):
        t, f = self.torch, self.ref_dtype
        op = self.op
        if op["kind"] == "mla_decode":
            return self._mla_math(self.q.to(f), self.cache.to(f))
        if op["kind"] == "gemm":
            return t.matmul(self.a.to(f), self.w.to(f).t())
        if op["kind"] == "batched_gemm":
            return t.bmm(self.a.to(f), self.w.to(f).transpose(1, 2))
        if op["layout"] == "contiguous":
            return t.cat([t.matmul(self.a[self.offsets[g]:self.offsets[g + 1]].to(f),
                                   self.w[g].to(f).t()) for g in range(op["groups"])])
        out = t.zeros(op["groups"], max(self.rows), op["n"], dtype=f, device=self.device.dev)
        for g, r in enumerate(self.rows):
            if r:
                out[g, :r] = t.matmul(self.a[g, :r].to(f), self.w[g].to(f).t())
        return out

    # -- MLA decode: absorbed attention over one 576-wide latent row per cached token
    def _mla(self, rand):
        op, t = self.op, self.torch
        b, s, h, sq = op["b"], op["s"], op["h"], op["s_q"]
        q_dtype = t.float32 if op["dtype"] == "fp32" else t.bfloat16
        self.q = rand(b, sq, h, MLA_DK, dtype=q_dtype)
        self.cache = rand(b, s, MLA_DK)  # the cache's dtype (fp8: e4m3)
        mask = t.ones(sq, s, dtype=t.bool, device=self.device.dev).tril(diagonal=s - sq)
        self.mask = mask  # query i sees the first s - s_q + i + 1 keys
        self.run = self._mla_run

    def _mla_math(self, q, cache):
        t = self.torch
        qh = q.permute(0, 2, 1, 3)                    # [b, h, s_q, 576]
        k = cache.unsqueeze(1)                        # [b, 1, s, 576]
        scores = t.matmul(qh, k.transpose(-1, -2)) * MLA_SOFTMAX_SCALE
        scores = scores.masked_fill(~self.mask, float("-inf"))
        low = scores.dtype in (t.bfloat16, t.float16)  # softmax in fp32 at least
        p = t.softmax(scores.float() if low else scores, dim=-1).to(q.dtype)
        o = t.matmul(p, k[..., :MLA_DV])              # [b, h, s_q, 512]
        return o.permute(0, 2, 1, 3)

    def _mla_run(self):
        cache = self.cache
        if self.op["dtype"] == "fp8":
            cache = cache.to(self.torch.bfloat16)     # dequantized (unit scales) to bf16
        return self._mla_math(self.q, cache.to(self.q.dtype))

    def verify(self):
        out = self.run()
        self.device.sync()
        ref = self.reference()
        out_f = out.to(self.ref_dtype)
        if not bool(self.torch.isfinite(out_f).all()):
            return False, float("inf")
        num = float((out_f - ref).norm())
        den = float(ref.norm()) or 1.0
        err = num / den
        return err <= TOLERANCE[self.op["dtype"]], err


def time_op(torch, device, case, flush, max_seconds, min_reps, max_reps=2000):
    """Median, minimum and IQR of timed runs, each after a flush of the cache."""
    times = []
    case.run()  # warm-up
    device.sync()
    start = time.perf_counter()
    use_events = device.events()
    while len(times) < max_reps:
        flush.add_(1)
        device.sync()
        if use_events:
            e0, e1 = device.module.Event(enable_timing=True), device.module.Event(enable_timing=True)
            e0.record()
            case.run()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1) / 1e3)
        else:
            t0 = time.perf_counter()
            case.run()
            device.sync()
            times.append(time.perf_counter() - t0)
        spent = time.perf_counter() - start
        if len(times) >= min_reps and spent >= max_seconds:
            break
        if len(times) >= 3 and times[0] > max_seconds and spent > max_seconds:
            break
    times.sort()
    n = len(times)

    def q(f):
        x = f * (n - 1)
        lo = int(math.floor(x))
        return times[lo] + (times[min(lo + 1, n - 1)] - times[lo]) * (x - lo)

    return q(0.5), times[0], q(0.75) - q(0.25), n


# ---------------------------------------------------------------- the results file

def load_device_spec(args):
    path = args.device_file
    if args.device_id:
        path = REPO / "data" / "devices" / f"{args.device_id}.json"
    if not path:
        return None
    d = json.loads(pathlib.Path(path).read_text())
    if not isinstance(d.get("peak_tflops"), dict) or not d.get("mem_bandwidth_gbps"):
        raise SystemExit(f"{path}: a device file needs peak_tflops and mem_bandwidth_gbps")
    return d


def attainable(spec, op, flops, nbytes):
    if spec is None:
        return None
    peak = spec["peak_tflops"].get(op["dtype"])
    if not isinstance(peak, (int, float)) or peak <= 0:  # absent, "not published", "not supported"
        return None
    return min(peak, flops / nbytes * spec["mem_bandwidth_gbps"] / 1e3)


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_atomic(path, doc):
    path = pathlib.Path(path)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def result_entry(op, backend):
    return {"op": {"spec": op["spec"], "kind": op["kind"], "dtype": op["dtype"], **op["prov"]},
            "backend": backend}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("suite", help="attain catalog --json output, or a CSV with a spec column")
    ap.add_argument("--device", default="cpu", help="torch device: cuda, npu, xpu, mps, cpu")
    ap.add_argument("--out", required=True, help="the results file (attain.results/1)")
    ap.add_argument("--resume", action="store_true", help="finish --out, skipping its ops")
    ap.add_argument("--device-id", help="judge against data/devices/ID.json (e.g. h100-sxm)")
    ap.add_argument("--device-file", help="judge against this device JSON")
    ap.add_argument("--max-seconds", type=float, default=0.25, help="timing budget per op")
    ap.add_argument("--min-reps", type=int, default=5, help="timed runs at least")
    ap.add_argument("--flush-bytes", type=int, default=0,
                    help="bytes written between runs (default: 2 x L2 of a GPU, 2 x LLC of a CPU)")
    ap.add_argument("--seed", type=int, default=42, help="input seed")
    ap.add_argument("--deadline", type=float, default=0, help="start no op after this many seconds")
    ap.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)
    if args.max_seconds <= 0 or args.min_reps < 1:
        ap.error("--max-seconds must be positive and --min-reps at least 1")

    import torch  # only now: --help works without it

    ops = read_suite(args.suite)
    try:
        device = Device(torch, args.device)
    except (RuntimeError, ImportError, AttributeError) as e:
        raise SystemExit(f"--device {args.device}: this torch cannot use it ({e})")
    spec = load_device_spec(args)
    backend = f"torch:{device.kind}"
    flush_bytes = args.flush_bytes or device.flush_bytes_default()
    config = {"runner": "scripts/torch_runner.py", "device": args.device,
              "torch": torch.__version__, "max_seconds": args.max_seconds,
              "min_reps": args.min_reps, "seed": args.seed, "flush_bytes": flush_bytes,
              "judged_against": (spec or {}).get("id"),
              "timing": "median of runs after a warm-up, each after a flush of flush_bytes",
              "flops_model": "2*M*N*K per GEMM (grouped: summed; mla: QK^T + PV)",
              "bytes_model": "inputs read once + outputs written once, stored dtypes"}
    doc = {"schema": SCHEMA, "created": now_iso(),
           "command": " ".join([os.path.basename(sys.argv[0])] + (argv or sys.argv[1:])),
           "machine": {"cpu_model": device.model_name(), "cores": os.cpu_count() or 0,
                       "threads": torch.get_num_threads() if device.kind == "cpu" else 0,
                       "device": (spec or {}).get("id", "host" if device.kind == "cpu" else device.name),
                       "ceilings_used": {"source": f"device {spec['id']} (datasheet)" if spec else
                                         "none: speeds only"},
                       "probe": {}, "libraries": {backend: device.description()}},
           "config": config, "results": []}

    out = pathlib.Path(args.out)
    lock = open(f"{out}.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise SystemExit(f"{out}: another process is writing it ({out}.lock)")
    done = set()
    if args.resume and out.exists():
        old = json.loads(out.read_text())
        if old.get("schema") != SCHEMA:
            raise SystemExit(f"{out}: schema {old.get('schema')!r}, not {SCHEMA}")
        for key in ("device", "torch", "max_seconds", "min_reps", "seed", "flush_bytes",
                    "judged_against"):
            if old.get("config", {}).get(key) != config[key]:
                raise SystemExit(f"{out}: made with {key} {old['config'].get(key)!r}, this run "
                                 f"{config[key]!r}: resume with the same settings")
        specs = {o["spec"] for o in ops}
        for r in old["results"]:
            if r["op"]["spec"] not in specs:
                raise SystemExit(f"{out}: holds {r['op']['spec']}, not an op of {args.suite}")
        doc["results"], doc["created"] = old["results"], old.get("created", doc["created"])
        done = {r["op"]["spec"] for r in old["results"]}

    stop = {"signal": 0}

    def on_signal(sig, _frame):
        stop["signal"] = sig
        signal.signal(sig, signal.SIG_DFL)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    flush = torch.zeros(max(flush_bytes // 4, 1), dtype=torch.float32, device=device.dev)
    t0 = time.perf_counter()
    todo = [o for o in ops if o["spec"] not in done]
    complete = True
    for i, op in enumerate(todo):
        if stop["signal"] or (args.deadline and time.perf_counter() - t0 >= args.deadline):
            complete = False
            break
        if not args.no_progress:
            eta = ""
            if i:
                left = (time.perf_counter() - t0) / i * (len(todo) - i)
                eta = f", ETA {int(left // 60)}m{int(left % 60):02d}s"
            print(f"torch_runner: {len(done) + i}/{len(ops)} ops{eta} (next: {op['spec']})",
                  file=sys.stderr, flush=True)
        r = result_entry(op, backend)
        flops, nbytes = op_flops(op), op_bytes(op)
        r.update({"flops": flops, "bytes": nbytes, "verified": False, "error": None})
        try:
            case = Case(torch, device, op, args.seed)
            ok, err = case.verify()
            r["error"] = err if math.isfinite(err) else None
            if not ok:
                r["status"], r["reason"] = "wrong", f"normwise relative error {err:.3g} against " \
                    f"the float64 reference (tolerance {TOLERANCE[op['dtype']]:g})"
            else:
                med, mn, iqr, reps = time_op(torch, device, case, flush, args.max_seconds,
                                             args.min_reps)
                att = attainable(spec, op, flops, nbytes)
                r.update({"status": "ok", "verified": True, "median_s": med, "min_s": mn,
                          "iqr_s": iqr, "reps": reps, "tflops": flops / med / 1e12,
                          "gbps": nbytes / med / 1e9, "attainable_tflops": att,
                          "efficiency": flops / med / 1e12 / att if att else None})
            del case
        except Unsupported as e:
            r["status"], r["reason"] = "unsupported", str(e)
        except NotImplementedError as e:
            r["status"], r["reason"] = "unsupported", str(e).splitlines()[0][:300]
        except (RuntimeError, MemoryError) as e:  # out of memory and the like: this op only
            line = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
            # A kernel the device's torch lacks ("addmm_impl_cpu_" not implemented for 'Half')
            # is the stack's gap, not a failure of the run.
            r["status"] = "unsupported" if "not implemented for" in line else "error"
            r["reason"] = line
        r["t"] = time.time()
        doc["results"].append(r)
        doc["complete"] = False
        doc["progress"] = {"ops_done": len(done) + i + 1, "ops_total": len(ops)}
        write_atomic(out, doc)
    if complete:
        doc.pop("complete", None)
        doc.pop("progress", None)
        order = {o["spec"]: n for n, o in enumerate(ops)}
        doc["results"].sort(key=lambda x: order[x["op"]["spec"]])
    write_atomic(out, doc)
    lock.close()
    os.unlink(f"{out}.lock")
    counts = {}
    for r in doc["results"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"torch_runner: {len(doc['results'])} of {len(ops)} ops on {device.description()}: "
          + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f"; wrote {out}",
          file=sys.stderr)
    if not complete:
        print(f"torch_runner: stopped; the same command with --resume finishes {out}",
              file=sys.stderr)
        return 128 + stop["signal"] if stop["signal"] else 3
    return 1 if counts.get("wrong") or counts.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
