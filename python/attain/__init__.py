"""attain from Python: the LLM op catalog, the CPU kernels, benchmark runs of record, the
probe, reports and the cluster simulator.

    import attain
    ops = attain.catalog("llama-3.1-8b", phase="decode", tokens=[1, 32])
    r = attain.bench(ops, backends=["attain", "onednn"])    # attain.Results
    c = attain.gemm(a, w)        # C = a . w^T on numpy arrays or torch tensors, nothing copied

Built by `make build` into build/python (PYTHONPATH=build/python). The C++ core is
attain._core; every call into it releases the GIL.
"""
import json as _json
import os as _os
from dataclasses import dataclass as _dataclass, asdict as _asdict

# An installed package carries the bundled data (model configs, devices, failure tables) beside
# the module; a build tree reads the source tree's (ATTAIN_DATA_DIR overrides both).
_data = _os.path.join(_os.path.dirname(__file__), "data")
if _os.path.isdir(_data) and not _os.environ.get("ATTAIN_DATA_DIR"):
    _os.environ["ATTAIN_DATA_DIR"] = _data

from . import _core  # noqa: E402

__version__ = _core.__version__
__all__ = ["Op", "Pointer", "Results", "catalog", "suite", "suites", "models", "gemm",
           "grouped_gemm", "mla_decode", "bench", "load_results", "probe", "devices", "report",
           "cluster", "__version__"]


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


def catalog(model, phase="prefill", tokens=None, context=4096, dtype=None, assume_llama=False):
    """The matrix ops of one forward pass of `model`: a bundled name (models()), the path of a
    Hugging Face config.json, or a dict holding a parsed one. `tokens`: prefill tokens or decode
    batch sizes, an int or a list (default 512 for prefill, [1, 32] for decode); `context`: the
    decode context length; `dtype`: "fp32", "bf16", "fp16" or "fp8" (default: the config's
    own, fp8 for fp8 weights). `assume_llama`: read a config of an unknown model_type that has
    the Llama fields as a Llama-like model. What the reading assumed or left out (a multimodal
    config's vision tower, a Llama-like reading) comes as a UserWarning."""
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
    ops, notes = _core.catalog(text, is_json, bool(assume_llama), phase, tokens, int(context),
                               "" if dtype is None else str(dtype))
    if notes:
        import warnings
        for note in notes:
            warnings.warn(f"attain.catalog: {note}", stacklevel=2)
    return _ops(ops)


@_dataclass(frozen=True)
class Pointer:
    """A tensor by address, for what neither numpy nor DLPack can describe (fp8 bytes in a
    numpy uint8 array, memory from another library): `ptr` its first element, `shape`,
    `dtype` ("fp32", "bf16", "fp16", "fp8", "i32", "u8"), `strides` in elements (None: C
    order). `owner` is kept referenced while the Pointer lives; attain never frees it."""
    ptr: int
    shape: tuple
    dtype: str
    strides: tuple = None
    readonly: bool = False
    owner: object = None
    __attain_pointer__ = True

    @classmethod
    def of(cls, array, dtype):
        """A Pointer over a C-contiguous numpy array's memory, read as `dtype` (e.g. a uint8
        array holding fp8 e4m3 bytes as "fp8", a uint16 array holding bf16 as "bf16")."""
        if not array.flags.c_contiguous:
            raise TypeError("array: not C-contiguous")
        return cls(array.ctypes.data, tuple(array.shape), dtype,
                   readonly=not array.flags.writeable, owner=array)


def _out_dtype_name(out_dtype):
    if out_dtype is None:
        return None
    name = getattr(out_dtype, "name", None) or str(out_dtype)  # numpy dtypes and types
    if isinstance(out_dtype, type):
        name = out_dtype.__name__
    name = name.replace("torch.", "")
    return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(name, name)


def _split_scaled(x, scale, name):
    # DeepGEMM passes an fp8 operand with its scales as a pair.
    if isinstance(x, tuple):
        if len(x) != 2:
            raise ValueError(f"{name}: a tensor, or a (tensor, scales) pair")
        if scale is not None:
            raise ValueError(f"{name}: scales given twice (in the pair and as {name}_scale)")
        return x
    return x, scale


def gemm(a, w, *, out=None, out_dtype=None, a_scale=None, w_scale=None, threads=None,
         schedule="default"):
    """C = a . w^T on the CPU. a (M, K) and w (N, K): C-contiguous numpy arrays (float32,
    float16), CPU torch tensors (float32, bfloat16, float16, float8_e4m3fn), other DLPack
    producers, or attain.Pointer; mixed dtypes allowed. fp8 operands take DeepSeek block scales:
    a_scale (M, ceil(K/128)), w_scale (ceil(N/128), ceil(K/128)) float32, or (tensor, scales)
    pairs as DeepGEMM takes them. Returns C (M, N): `out` when given (written in place), else a
    new tensor of the inputs' kind (torch for torch), of `out_dtype` (default: the inputs'
    16-bit dtype when both share it, bf16 for fp8, else float32). `threads`: default every
    core. `schedule`: "default" (the engine's heuristic) or a schedule's text form
    ("path=decode threads=2 ...", as `attain tune --explain` prints)."""
    a, a_scale = _split_scaled(a, a_scale, "a")
    w, w_scale = _split_scaled(w, w_scale, "w")
    return _core.gemm(a, w, out, _out_dtype_name(out_dtype), a_scale, w_scale, threads,
                      str(schedule))


def grouped_gemm(a, w, masked_m, *, expected_m=None, out=None, out_dtype=None, a_scale=None,
                 w_scale=None, threads=None):
    """MoE experts in DeepGEMM's masked layout (m_grouped_gemm_..._nt_masked): a (G, max_m, K),
    w (G, N, K), masked_m (G,) int32 rows of each group; out (G, max_m, N) gets
    out[g, :masked_m[g]] = a[g, :masked_m[g]] . w[g]^T, its other rows untouched. fp8 scales:
    a_scale (G, max_m, ceil(K/128)), w_scale (G, ceil(N/128), ceil(K/128)), or (tensor,
    scales) pairs. `expected_m` is DeepGEMM's tuning hint, accepted for the same call;
    attain schedules from masked_m itself."""
    del expected_m
    a, a_scale = _split_scaled(a, a_scale, "a")
    w, w_scale = _split_scaled(w, w_scale, "w")
    return _core.grouped_gemm(a, w, masked_m, out, _out_dtype_name(out_dtype), a_scale, w_scale,
                              threads)


def mla_decode(q, k_cache, block_table, cache_seqlens, head_dim_v=512,
               tile_scheduler_metadata=None, num_splits=None, softmax_scale=None, causal=True,
               *, threads=None):
    """MLA decode attention in FlashMLA's order (flash_mla_with_kvcache): q (b, s_q, h, 576),
    k_cache (blocks, 64, 1, 576) bf16 or float32 (fp8: uint8 rows of 656 bytes), block_table
    (b, max_blocks) int32, cache_seqlens (b,) int32. Returns (out (b, s_q, h, 512), lse (b, h,
    s_q) float32), torch tensors for torch inputs. FlashMLA's scheduler metadata and split
    counts are accepted and not needed: attain splits the work itself. Causal for s_q > 1."""
    del tile_scheduler_metadata, num_splits
    return _core.mla_decode(q, k_cache, block_table, cache_seqlens, int(head_dim_v),
                            softmax_scale, bool(causal), threads)


class Results:
    """A benchmark run's results (schema attain.results/1, as `attain bench --out` writes):
    `.data` the file as a dict (its "summary" beside it), `.to_dicts()` one flat dict per
    (op, backend), `.to_pandas()`, `.save(path)`, `.summary()` / `.table()` / `.headline()` the
    text `attain bench` prints. `.complete` is False for a run stopped early (Ctrl-C, a
    deadline): the ops finished are kept."""

    def __init__(self, data, exit_status=0, note=""):
        self.data = data
        self.exit_status = exit_status
        self.note = note

    @property
    def complete(self):
        return bool(self.data.get("complete", True))

    @property
    def machine(self):
        return self.data["machine"]

    @property
    def backends(self):
        seen = []
        for r in self.data["results"]:
            if r["backend"] not in seen:
                seen.append(r["backend"])
        return seen

    def __len__(self):
        return len(self.data["results"])

    def __repr__(self):
        state = "" if self.complete else ", incomplete"
        return f"<attain.Results: {len(self)} results, backends {self.backends}{state}>"

    def to_dicts(self):
        """One dict per result: the op's fields (spec, kind, dtype, model, layer, ...) and the
        result's (backend, status, median_s, tflops, efficiency, ...)."""
        rows = []
        for r in self.data["results"]:
            row = dict(r["op"])
            row.update({k: v for k, v in r.items() if k != "op"})
            rows.append(row)
        return rows

    def to_pandas(self):
        """The results as a pandas DataFrame, one row per (op, backend)."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("to_pandas needs pandas (Debian: python3-pandas)") from e
        return pandas.DataFrame(self.to_dicts())

    def save(self, path):
        """Writes the results file (schema attain.results/1), whole or not at all."""
        _core.save_results(self._file_json(), _os.fspath(path))

    def summary(self):
        return _core.results_text(self._file_json(), "summary")

    def table(self):
        return _core.results_text(self._file_json(), "table")

    def headline(self):
        return _core.results_text(self._file_json(), "headline")

    def _file_json(self):
        return _json.dumps({k: v for k, v in self.data.items() if k != "summary"})


def load_results(path):
    """A results file (attain bench --out, attain import, attain project) as Results."""
    return Results(_json.loads(_core.load_results(_os.fspath(path))))


def _op_dicts(ops):
    if isinstance(ops, (str, Op)):
        ops = [ops]
    out = []
    for o in ops:
        if isinstance(o, Op):
            out.append(o.to_dict())
        elif isinstance(o, str):
            out.append({"spec": o})
        elif isinstance(o, dict) and "spec" in o:
            out.append(o)
        else:
            raise TypeError(f"ops: attain.Op objects or spec strings, not {type(o).__name__}")
    return out


def bench(ops, backends=("attain",), threads=None, max_seconds=None, rounds=1, progress=True,
          *, hot=False, seed=42, out=None, resume=False, deadline=None, recheck="auto",
          sample_every=60, tune=True, schedule="default"):
    """Times `ops` (attain.Op objects, spec strings, or a suite's list) on `backends`, each
    verified against the fp64 reference first: the run `attain bench` makes, with the same
    ceilings re-measured around it, and the same results. `threads`: default every core;
    `max_seconds`: timing budget per op and backend; `rounds`: whole runs, each op keeping its
    fastest; `hot`: warm caches (default cold). `out`: a results file written op by op (with
    `resume=True`, finished); `deadline`: seconds, or "90m" / "6h". Ctrl-C stops the run
    between ops and returns what finished (Results.complete is then False)."""
    if isinstance(backends, str):
        backends = backends.split(",")
    if isinstance(deadline, str):
        deadline = _core.parse_duration(deadline)
    data, status, note = _core.bench(
        _op_dicts(ops), [str(b) for b in backends], int(threads or 0), int(rounds),
        float(max_seconds or 0), float(deadline or 0), float(sample_every), bool(hot),
        bool(progress), bool(resume), bool(tune), int(seed),
        "" if out is None else _os.fspath(out), str(recheck), str(schedule))
    if note:
        import sys
        print(note, end="", file=sys.stderr)
    return Results(_json.loads(data), status, note)


def probe(refresh=False, progress=False):
    """This machine's measured ceilings (FMA and bf16-dot GFLOP/s, read and copy GB/s, at 1
    thread and all), as `attain probe --json` prints them: the cached probe, or a new one with
    `refresh`."""
    return _json.loads(_core.probe(bool(refresh), bool(progress)))


def devices():
    """The device table (data/devices): each chip's peaks and memory, as `attain devices
    --json` prints it."""
    return _json.loads(_core.devices())


def report(files, out=None, title="attain report", furthest=10):
    """One self-contained HTML page from results and cluster files, as `attain report`: written
    to `out` when given. Returns what the page shows (series aggregates and pairs) as a dict."""
    if isinstance(files, (str, _os.PathLike)):
        files = [files]
    return _json.loads(_core.report([_os.fspath(f) for f in files],
                                    "" if out is None else _os.fspath(out), str(title),
                                    int(furthest)))


from . import cluster  # noqa: E402  (attain.cluster.simulate)
