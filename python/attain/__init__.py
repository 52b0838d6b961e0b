"""attain from Python: the LLM op catalog and the CPU GEMM engine.

    import attain
    ops = attain.catalog("llama-3.1-8b", phase="decode", tokens=[1, 32])
    c = attain.gemm(a, w)          # C = a . w^T, numpy float32 / float16, no copy of a or w

Built by `make build` into build/python (PYTHONPATH=build/python). The C++ core is
attain._core; every call into it releases the GIL.
"""
import json as _json
import os as _os
from dataclasses import dataclass as _dataclass, asdict as _asdict

from . import _core

__version__ = _core.__version__
__all__ = ["Op", "catalog", "suite", "suites", "models", "gemm", "__version__"]


@_dataclass(frozen=True)
class Op:
    """One matrix op of the catalog: its spec (what `attain bench --op` takes), shape, dtype,
    FLOPs and bytes (the roofline's), and where it comes from (model, layer, phase, tokens,
    context, and how often it occurs per forward pass)."""
    spec: str
    kind: str
    dtype: str
    m: int
    n: int
    k: int
    batch: int
    groups: int
    flops: float
    bytes: float
    model: str
    layer: str
    phase: str
    tokens: int
    context: int
    count: int

    def to_dict(self):
        return _asdict(self)


def _ops(dicts):
    return [Op(**d) for d in dicts]


def suite(name="quick"):
    """The ops of a named suite: "quick" (about 60) or "llm-1055" (1,055)."""
    return _ops(_core.suite(str(name)))


def suites():
    """The names suite() takes."""
    return list(_core.suite_names())


def models():
    """The bundled model configs catalog() takes by name."""
    return list(_core.bundled_models())


def catalog(model, phase="prefill", tokens=None, context=4096, dtype="bf16"):
    """The matrix ops of one forward pass of `model`: a bundled name (models()), the path of a
    Hugging Face config.json, or a dict holding a parsed one. `tokens`: prefill tokens or decode
    batch sizes, an int or a list (default 512 for prefill, [1, 32] for decode); `context`: the
    decode context length; `dtype`: "fp32", "bf16", "fp16" or "fp8"."""
    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase: 'prefill' or 'decode', not {phase!r}")
    if tokens is None:
        tokens = [512] if phase == "prefill" else [1, 32]
    elif isinstance(tokens, int):
        tokens = [tokens]
    else:
        tokens = [int(t) for t in tokens]
    if isinstance(model, dict):
        text, is_json = _json.dumps(model), True
    elif isinstance(model, (str, _os.PathLike)):
        text, is_json = _os.fspath(model), False
    else:
        raise TypeError(f"model: a bundled name, a config.json path or a dict, not {type(model).__name__}")
    return _ops(_core.catalog(text, is_json, phase, tokens, int(context), str(dtype)))


def gemm(a, w, *, out=None, out_dtype=None, threads=None, schedule="default"):
    """C = a . w^T on the CPU: a (M, K) and w (N, K) C-contiguous numpy arrays of float32 or
    float16, read in place. Returns C (M, N): `out` when given (written in place), else a new
    array of `out_dtype` (default float16 for two float16 inputs, float32 otherwise). `threads`:
    default all cores. `schedule`: "default" (the engine's heuristic) or a schedule's text form
    ("path=decode threads=2 ...", as `attain tune --explain` prints)."""
    if out_dtype is not None:
        try:
            import numpy
            out_dtype = numpy.dtype(out_dtype).name
        except TypeError:  # not a numpy dtype: attain's own name ("fp32", "fp16")
            out_dtype = str(out_dtype)
        out_dtype = {"float32": "fp32", "float16": "fp16"}.get(out_dtype, out_dtype)
    return _core.gemm(a, w, out, out_dtype, threads, str(schedule))
