"""attain's Python module against numpy: the catalog, and attain.gemm on every numpy dtype."""
import threading
import time

import numpy as np
import pytest

import attain


def test_version_and_names():
    assert attain.__version__
    assert "quick" in attain.suites() and "llm-1055" in attain.suites()
    assert "llama-3.1-8b" in attain.models()


def test_suite_matches_the_catalog():
    ops = attain.suite("llm-1055")
    assert len(ops) == 1055
    assert len({o.spec for o in ops}) == 1055
    quick = attain.suite("quick")
    assert {o.kind for o in quick} >= {"gemm", "batched_gemm", "grouped_gemm", "mla_decode"}
    g = next(o for o in quick if o.kind == "gemm")
    assert g.flops == pytest.approx(2 * g.m * g.n * g.k)
    assert set(g.to_dict()) >= {"spec", "kind", "m", "n", "k", "dtype", "flops", "bytes", "model", "layer", "count"}


def test_catalog_by_name_path_and_dict(tmp_path):
    ops = attain.catalog("llama-3.1-8b", phase="decode", tokens=[1, 32], dtype="bf16")
    assert {o.tokens for o in ops} == {1, 32} and all(o.phase == "decode" for o in ops)
    qkv = next(o for o in ops if o.layer == "qkv" and o.tokens == 1)
    assert (qkv.m, qkv.n, qkv.k) == (1, 4096 + 2 * 1024, 4096)
    cfg = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
           "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
           "vocab_size": 32000}
    by_dict = attain.catalog(cfg, tokens=64)
    path = tmp_path / "config.json"
    import json
    path.write_text(json.dumps(cfg))
    by_path = attain.catalog(str(path), tokens=64)
    assert [o.spec for o in by_dict] == [o.spec for o in by_path]
    assert any(o.spec == "gemm:m=64,n=4096,k=1024,dtype=bf16" or o.n == 8192 for o in by_dict)


@pytest.mark.parametrize("bad, exc, word", [
    (dict(model="nosuch"), ValueError, "nosuch"),
    (dict(model="llama-3.1-8b", phase="train"), ValueError, "phase"),
    (dict(model="llama-3.1-8b", tokens=0), ValueError, "tokens"),
    (dict(model="llama-3.1-8b", dtype="int3"), ValueError, "dtype"),
    (dict(model=42), TypeError, "model"),
])
def test_catalog_errors(bad, exc, word):
    with pytest.raises(exc, match=word):
        attain.catalog(**bad)


def reference(a, w):
    return a.astype(np.float64) @ w.astype(np.float64).T


# Per-dtype tolerances relative to the largest |C| (fp32 accumulation in every case).
TOL = {np.float32: 1e-5, np.float16: 2e-3}


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (1, 4096, 64), (7, 33, 129), (64, 96, 256),
                                     (200, 130, 70), (0, 16, 16), (16, 0, 16), (5, 9, 0)])
def test_gemm_against_numpy(dt, m, n, k):
    rng = np.random.default_rng(m * 1000 + n + k)
    a = rng.standard_normal((m, k)).astype(dt)
    w = rng.standard_normal((n, k)).astype(dt)
    c = attain.gemm(a, w)
    assert c.shape == (m, n)
    assert c.dtype == (np.float16 if dt == np.float16 else np.float32)
    ref = reference(a, w)
    scale = max(1.0, float(np.abs(ref).max(initial=0)))
    err = float(np.abs(c.astype(np.float64) - ref).max(initial=0)) / scale
    assert err <= (TOL[dt] if c.dtype == np.float32 else 2e-3), err
    assert np.isfinite(c).all()


def test_gemm_mixed_and_out_dtype():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 40)).astype(np.float32)
    w = rng.standard_normal((24, 40)).astype(np.float16)
    c = attain.gemm(a, w)
    assert c.dtype == np.float32
    np.testing.assert_allclose(c, reference(a, w), rtol=1e-4, atol=1e-4)
    c16 = attain.gemm(a, w, out_dtype=np.float16)
    assert c16.dtype == np.float16
    np.testing.assert_allclose(c16, reference(a, w), rtol=2e-3, atol=2e-2)


def test_gemm_nan_and_inf_propagate():
    a = np.ones((2, 8), np.float32)
    w = np.ones((3, 8), np.float32)
    a[0, 3] = np.nan
    w[2, 1] = np.inf
    c = attain.gemm(a, w)
    assert np.isnan(c[0]).all()
    assert np.isinf(c[1, 2]) and np.isfinite(c[1, :2]).all()


def test_gemm_out_is_written_in_place_and_inputs_are_not_copied():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 64)).astype(np.float32)
    w = rng.standard_normal((32, 64)).astype(np.float32)
    out = np.full((4, 32), np.nan, np.float32)
    got = attain.gemm(a, w, out=out)
    assert got is out or np.shares_memory(got, out)
    np.testing.assert_allclose(out, reference(a, w), rtol=1e-5, atol=1e-4)
    # Zero-copy: the call reads a and w where they are. Changing them afterwards changes the next
    # result and not the last one.
    first = out.copy()
    a *= 2
    attain.gemm(a, w, out=out)
    np.testing.assert_allclose(out, 2 * first, rtol=1e-5, atol=1e-4)


def test_gemm_schedule_text():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 256)).astype(np.float32)
    w = rng.standard_normal((512, 256)).astype(np.float32)
    for sched in ("default", "path=decode threads=1", "path=packed threads=2"):
        np.testing.assert_allclose(attain.gemm(a, w, schedule=sched, threads=2), reference(a, w),
                                   rtol=1e-4, atol=1e-3)
    with pytest.raises(ValueError, match="schedule"):
        attain.gemm(a, w, schedule="path=sideways")


@pytest.mark.parametrize("call, exc, word", [
    (lambda: attain.gemm(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)), ValueError, "w: shape"),
    (lambda: attain.gemm(np.ones((2, 3, 1), np.float32), np.ones((4, 3), np.float32)), ValueError, "a: a 2-D"),
    (lambda: attain.gemm(np.ones((2, 3), np.float64), np.ones((4, 3), np.float32)), ValueError, "a: dtype float64"),
    (lambda: attain.gemm(np.ones((2, 3), np.float32), np.ones((4, 3), np.int32)), ValueError, "w: dtype int32"),
    (lambda: attain.gemm(np.ones((3, 2), np.float32).T, np.ones((4, 3), np.float32)), TypeError, "a: not C-contiguous"),
    (lambda: attain.gemm(np.ones((2, 3), np.float32), np.ones((4, 3), np.float32),
                         out=np.ones((2, 5), np.float32)), ValueError, "out: shape"),
    (lambda: attain.gemm(np.ones((2, 3), np.float32), np.ones((4, 3), np.float32), threads=0), ValueError, "threads"),
    (lambda: attain.gemm(np.ones((2, 3), np.float32), np.ones((4, 3), np.float32), out_dtype="int8"), ValueError, "out_dtype"),
])
def test_gemm_errors_name_the_argument(call, exc, word):
    with pytest.raises(exc, match=word):
        call()


def test_gemm_read_only_out_refused():
    out = np.zeros((2, 4), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out: read-only"):
        attain.gemm(np.ones((2, 3), np.float32), np.ones((4, 3), np.float32), out=out)


def test_gemm_releases_the_gil():
    # A Python thread counts while the main thread is inside one attain.gemm call of about 0.1 s
    # (one core): with the GIL released it counts all along; a GIL held through the call would
    # stop it for the whole call.
    rng = np.random.default_rng(4)
    a = rng.standard_normal((512, 2048)).astype(np.float32)
    w = rng.standard_normal((2048, 2048)).astype(np.float32)
    attain.gemm(a, w, threads=1)  # warm: the engine's scratch and pool exist before timing
    count = [0]
    stop = threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=counter)
    t.start()
    time.sleep(0.02)
    before = count[0]
    t0 = time.perf_counter()
    attain.gemm(a, w, threads=1)
    took = time.perf_counter() - t0
    during = count[0] - before
    stop.set()
    t.join()
    assert took > 0.005, took
    assert during > 1000, f"the counting thread advanced {during} times in a {took:.3f} s call"


def test_catalog_default_dtype_assume_llama_and_notes():
    # deepseek-v3 ships fp8 block-scaled weights: its ops default to fp8, as `attain catalog`'s.
    assert "fp8" in {o.dtype for o in attain.catalog("deepseek-v3", phase="decode", tokens=1)}
    assert "fp8" not in {o.dtype for o in attain.catalog("deepseek-v3", tokens=64, dtype="bf16")}
    cfg = {"model_type": "my_llama", "hidden_size": 512, "intermediate_size": 1536,
           "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
           "vocab_size": 1000}
    with pytest.raises(ValueError, match="model_type"):
        attain.catalog(cfg)
    with pytest.warns(UserWarning, match="Llama"):
        ops = attain.catalog(cfg, tokens=16, assume_llama=True)
    qkv = next(o for o in ops if o.layer == "qkv")
    assert (qkv.m, qkv.n, qkv.k) == (16, 512 + 2 * 2 * 64, 512)
