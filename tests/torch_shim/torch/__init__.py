"""A small stand-in for PyTorch, for testing scripts/torch_runner.py where torch is not installed.

Pure Python and slow: tensors are flat lists with a shape, every op copies. It implements only
what the runner calls, on the "cpu" device, with float32, float64, bfloat16 and float16 (values
rounded as those types store them) and no float8 type, so an fp8 op is recorded as unsupported,
as on a real stack without one. tests/cli/torch_runner.sh uses it only when `import torch` fails.
"""
import builtins
import os
import math
import random
import struct

__version__ = "0.0-shim"


class dtype:  # noqa: N801 (torch's name)
    def __init__(self, name, is_float=True):
        self.name, self.is_float = name, is_float

    def __repr__(self):
        return f"torch.{self.name}"


float32, float64, bfloat16, float16 = (dtype(n) for n in ("float32", "float64", "bfloat16",
                                                          "float16"))
bool_ = dtype("bool", False)
int32 = dtype("int32", False)
globals()["bool"] = bool_


def _round(x, dt):
    if dt is float64 or not dt.is_float:
        return x
    if not math.isfinite(x):
        return x
    if dt is float32:
        return struct.unpack("f", struct.pack("f", x))[0]
    if dt is float16:
        try:
            return struct.unpack("e", struct.pack("e", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    bits = struct.unpack("I", struct.pack("f", x))[0]  # bfloat16: round to nearest even
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("f", struct.pack("I", bits))[0]


class device:  # noqa: N801
    def __init__(self, name):
        self.type = str(name).split(":")[0]
        if self.type != "cpu":
            raise RuntimeError(f"the torch shim has no device '{name}'")


class Generator:
    def __init__(self, device="cpu"):
        self.rng = random.Random(0)

    def manual_seed(self, seed):
        self.rng.seed(seed)
        return self


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _strides(shape):
    s, acc = [], 1
    for d in reversed(shape):
        s.append(acc)
        acc *= d
    return list(reversed(s))


def _index(flat, shape):
    out = []
    for d in reversed(shape):
        out.append(flat % d)
        flat //= d
    return list(reversed(out))


class Tensor:
    def __init__(self, data, shape, dt):
        self.data, self.shape, self.dtype = data, tuple(shape), dt

    # -- conversions
    def to(self, x):
        if isinstance(x, dtype):
            return Tensor([_round(v, x) if x.is_float else v for v in self.data], self.shape, x)
        return self  # a device: there is only the cpu

    def float(self):
        return self.to(float32)

    def __float__(self):
        return builtins.float(self.data[0])

    def __bool__(self):
        return builtins.bool(self.data[0])

    def all(self):
        return Tensor([builtins.all(self.data)], (), bool_)

    def dim(self):
        return len(self.shape)

    # -- arithmetic
    def _binary(self, other, f):
        if isinstance(other, Tensor):
            return Tensor([f(a, b) for a, b in zip(self.data, other.data)], self.shape, self.dtype)
        return Tensor([_round(f(a, other), self.dtype) for a in self.data], self.shape, self.dtype)

    def __mul__(self, o):
        return self._binary(o, lambda a, b: a * b)

    def __sub__(self, o):
        return self._binary(o, lambda a, b: a - b)

    def __invert__(self):
        return Tensor([not v for v in self.data], self.shape, bool_)

    def add_(self, v):
        self.data = [x + v for x in self.data]
        return self

    def norm(self):
        return Tensor([math.sqrt(builtins.sum(v * v for v in self.data))], (), self.dtype)

    # -- shape
    def permute(self, *dims):
        shape = [self.shape[d] for d in dims]
        st = _strides(self.shape)
        out = []
        for flat in range(_size(shape)):
            idx = _index(flat, shape)
            out.append(self.data[builtins.sum(idx[i] * st[d] for i, d in enumerate(dims))])
        return Tensor(out, shape, self.dtype)

    def transpose(self, a, b):
        dims = list(range(len(self.shape)))
        a, b = a % len(dims), b % len(dims)
        dims[a], dims[b] = dims[b], dims[a]
        return self.permute(*dims)

    def t(self):
        return self.transpose(0, 1)

    def unsqueeze(self, d):
        shape = list(self.shape)
        shape.insert(d % (len(shape) + 1), 1)
        return Tensor(list(self.data), shape, self.dtype)

    def contiguous(self):
        return self

    def tril(self, diagonal=0):
        r, c = self.shape
        return Tensor([v if (i % c) <= (i // c) + diagonal else 0 for i, v in enumerate(self.data)],
                      self.shape, self.dtype)

    def masked_fill(self, mask, value):
        n = len(mask.data)
        return Tensor([value if mask.data[i % n] else v for i, v in enumerate(self.data)],
                      self.shape, self.dtype)

    # -- indexing: ints and slices on the leading dims, or [..., slice] on the last
    def _keys(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        if key and key[0] is Ellipsis:
            key = (slice(None),) * (len(self.shape) - len(key) + 1) + key[1:]
        key = key + (slice(None),) * (len(self.shape) - len(key))
        ranges, shape = [], []
        for k, d in zip(key, self.shape):
            if isinstance(k, slice):
                r = range(*k.indices(d))
                ranges.append(r)
                shape.append(len(r))
            else:
                ranges.append(range(k % d, k % d + 1))
        return ranges, shape

    def _positions(self, ranges):
        st = _strides(self.shape)
        pos = [0]
        for r, s in zip(ranges, st):
            pos = [p + i * s for p in pos for i in r]
        return pos

    def __getitem__(self, key):
        ranges, shape = self._keys(key)
        return Tensor([self.data[p] for p in self._positions(ranges)], shape, self.dtype)

    def __setitem__(self, key, value):
        ranges, _ = self._keys(key)
        for p, v in zip(self._positions(ranges), value.data):
            self.data[p] = _round(v, self.dtype)


def _new(shape, value, dt):
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return Tensor([value] * _size(shape), shape, dt)


def zeros(*shape, dtype=float32, device=None):
    return _new(shape, 0.0 if dtype.is_float else 0, dtype)


def ones(*shape, dtype=float32, device=None):
    return _new(shape, True if dtype is bool_ else 1.0, dtype)


def randn(*shape, generator=None, dtype=float32):
    rng = generator.rng if generator else random
    return Tensor([_round(rng.gauss(0, 1), dtype) for _ in range(_size(shape))], shape, dtype)


def isfinite(x):
    return Tensor([math.isfinite(v) for v in x.data], x.shape, bool_)


def _promote(a, b):
    return float64 if float64 in (a.dtype, b.dtype) else a.dtype


def matmul(a, b):
    """[..., m, k] @ [..., k, n], the leading dims broadcast; sums in fp64, stored as a's dtype.
    With ATTAIN_SHIM_NO_FP16 set, float16 raises as torch 1.13's CPU build does."""
    if os.environ.get("ATTAIN_SHIM_NO_FP16") and float16 in (a.dtype, b.dtype):
        raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")
    lead_a, lead_b = a.shape[:-2], b.shape[:-2]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if b.shape[-2] != k:
        raise RuntimeError(f"matmul: {a.shape} @ {b.shape}")
    lead = tuple(builtins.max(x, y) for x, y in zip(lead_a, lead_b)) if lead_a else lead_b
    out_dt = _promote(a, b)
    out = []
    for flat in range(_size(lead)):
        idx = _index(flat, lead)
        ia = builtins.sum((i % d) * s for i, d, s in zip(idx, lead_a, _strides(lead_a))) * m * k
        ib = builtins.sum((i % d) * s for i, d, s in zip(idx, lead_b, _strides(lead_b))) * k * n
        for i in range(m):
            row = a.data[ia + i * k: ia + (i + 1) * k]
            for j in range(n):
                acc = 0.0
                for t in range(k):
                    acc += row[t] * b.data[ib + t * n + j]
                out.append(_round(acc, out_dt))
    return Tensor(out, lead + (m, n), out_dt)


def bmm(a, b):
    return matmul(a, b)


def cat(ts, dim=0):
    return Tensor([v for t in ts for v in t.data], (builtins.sum(t.shape[0] for t in ts),) + ts[0].shape[1:],
                  ts[0].dtype)


def stack(ts, dim=0):
    return Tensor([v for t in ts for v in t.data], (len(ts),) + ts[0].shape, ts[0].dtype)


def softmax(x, dim=-1):
    n = x.shape[-1]
    out = []
    for r in range(0, len(x.data), n):
        row = x.data[r:r + n]
        mx = builtins.max(row)
        e = [0.0 if v == -math.inf else math.exp(v - mx) for v in row]
        s = builtins.sum(e)
        out += [_round(v / s, x.dtype) for v in e]
    return Tensor(out, x.shape, x.dtype)


def get_num_threads():
    return 1


class _Cpu:
    @staticmethod
    def synchronize():
        pass


cpu = _Cpu()


class _Flag:
    allow_tf32 = False


class backends:  # noqa: N801
    class cuda:  # noqa: N801
        matmul = _Flag()

    class cudnn:  # noqa: N801
        allow_tf32 = False
