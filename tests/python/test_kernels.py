"""attain.gemm on fp8 and bf16 by address, attain.grouped_gemm (DeepGEMM's masked layout) and
attain.mla_decode (FlashMLA's order), on numpy, against fp64 references."""
import numpy as np
import pytest

import attain
from refs import E4M3, fp8_bytes, gemm_ref, mla_ref, rel_err


def fp8_operand(rng, rows, k):
    ints = rng.integers(-8, 9, size=(rows, k))
    return fp8_bytes(ints), ints.astype(np.float64)


@pytest.mark.parametrize("m, n, k", [(1, 130, 256), (5, 64, 200), (33, 257, 384)])
def test_gemm_fp8_with_block_scales(m, n, k):
    rng = np.random.default_rng(m + n + k)
    a8, a = fp8_operand(rng, m, k)
    w8, w = fp8_operand(rng, n, k)
    kb = -(-k // 128)
    a_s = rng.uniform(0.5, 2, size=(m, kb)).astype(np.float32)
    w_s = rng.uniform(0.5, 2, size=(-(-n // 128), kb)).astype(np.float32)
    # Block scales multiply their 1 x 128 (activations) and 128 x 128 (weights) blocks.
    a_full = a * np.repeat(a_s, 128, axis=1)[:, :k]
    w_full = w * np.repeat(np.repeat(w_s, 128, axis=0), 128, axis=1)[:n, :k]
    c = attain.gemm(attain.Pointer.of(a8, "fp8"), (attain.Pointer.of(w8, "fp8"), w_s),
                    a_scale=a_s)
    assert c.dtype == np.float32 and c.shape == (m, n)  # numpy has no bf16: fp32 by default
    assert rel_err(c, a_full @ w_full.T) <= 1e-5


def test_e4m3_table_is_the_format():
    assert E4M3[0x38] == 1.0 and E4M3[0x7e] == 448.0 and np.isnan(E4M3[0x7f])


def test_gemm_bf16_by_address():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 96)).astype(np.float32)
    w = rng.standard_normal((40, 96)).astype(np.float32)
    # bf16 = the high half of fp32 (truncation, exact for the reference on the truncated values).
    to_bf16 = lambda x: (x.view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731
    back = lambda u: (u.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    ab, wb = to_bf16(a), to_bf16(w)
    c = attain.gemm(attain.Pointer.of(ab, "bf16"), attain.Pointer.of(wb, "bf16"))
    assert c.dtype == np.float32
    assert rel_err(c, gemm_ref(back(ab), back(wb))) <= 1e-5


def test_fp8_needs_its_scales():
    a8 = fp8_bytes(np.ones((2, 128)))
    with pytest.raises(ValueError, match="a_scale: an fp8 operand needs"):
        attain.gemm(attain.Pointer.of(a8, "fp8"), np.ones((4, 128), np.float32))
    with pytest.raises(ValueError, match="a_scale: shape"):
        attain.gemm(attain.Pointer.of(a8, "fp8"), np.ones((4, 128), np.float32),
                    a_scale=np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="w_scale: scales apply to fp8"):
        attain.gemm(np.ones((2, 128), np.float32), np.ones((4, 128), np.float32),
                    w_scale=np.ones((1, 1), np.float32))


def test_pointer_errors():
    with pytest.raises(ValueError, match="a: attain.Pointer dtype"):
        attain.gemm(attain.Pointer(1, (2, 2), "fp64"), np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="address 0"):
        attain.gemm(attain.Pointer(0, (2, 2), "fp32"), np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match="w: a numpy array, a DLPack tensor"):
        attain.gemm(np.ones((2, 2), np.float32), [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_grouped_gemm_masked(dt):
    rng = np.random.default_rng(11)
    g, max_m, n, k = 4, 9, 48, 72
    a = rng.standard_normal((g, max_m, k)).astype(dt)
    w = rng.standard_normal((g, n, k)).astype(dt)
    masked = np.array([0, 9, 3, 1], np.int32)
    a[2, 3:] = np.nan  # padding rows may hold anything
    out = np.full((g, max_m, n), 7.0, np.float32)
    got = attain.grouped_gemm(a, w, masked, expected_m=4, out=out)
    assert got is out
    for i in range(g):
        r = masked[i]
        assert rel_err(out[i, :r], gemm_ref(a[i, :r], w[i])) <= (1e-5 if dt == np.float32 else 2e-3)
        assert (out[i, r:] == 7.0).all()  # rows past masked_m untouched


def test_grouped_gemm_fp8():
    rng = np.random.default_rng(12)
    g, max_m, n, k = 2, 4, 130, 256
    a8, a = fp8_operand(rng, g * max_m, k)
    w8, w = fp8_operand(rng, g * n, k)
    a_s = np.ones((g, max_m, 2), np.float32)
    w_s = np.full((g, 2, 2), 0.5, np.float32)
    masked = np.array([4, 2], np.int32)
    c = attain.grouped_gemm((attain.Pointer(a8.ctypes.data, (g, max_m, k), "fp8", owner=a8), a_s),
                            (attain.Pointer(w8.ctypes.data, (g, n, k), "fp8", owner=w8), w_s),
                            masked, out=np.zeros((g, max_m, n), np.float32))
    a, w = a.reshape(g, max_m, k), w.reshape(g, n, k)
    for i in range(g):
        assert rel_err(c[i, :masked[i]], 0.5 * a[i, :masked[i]] @ w[i].T) <= 1e-5


@pytest.mark.parametrize("call, exc, word", [
    (lambda: attain.grouped_gemm(np.ones((2, 3, 4), np.float32), np.ones((3, 5, 4), np.float32),
                                 np.ones(2, np.int32)), ValueError, "w: shape"),
    (lambda: attain.grouped_gemm(np.ones((2, 3, 4), np.float32), np.ones((2, 5, 4), np.float32),
                                 np.ones(3, np.int32)), ValueError, "masked_m: 3 counts"),
    (lambda: attain.grouped_gemm(np.ones((2, 3, 4), np.float32), np.ones((2, 5, 4), np.float32),
                                 np.array([1, 4], np.int32)), ValueError, "masked_m: group 1"),
    (lambda: attain.grouped_gemm(np.ones((2, 3, 4), np.float32), np.ones((2, 5, 4), np.float32),
                                 np.ones(2, np.int64)), ValueError, "masked_m: dtype"),
])
def test_grouped_gemm_errors(call, exc, word):
    with pytest.raises(exc, match=word):
        call()


def mla_case(rng, b, s_q, h, seqlens, blocks=None):
    max_blocks = max(1, -(-max(seqlens) // 64))
    blocks = blocks or b * max_blocks + 3
    cache = (rng.standard_normal((blocks, 64, 1, 576)) * 0.5).astype(np.float32)
    table = rng.permutation(blocks)[: b * max_blocks].reshape(b, max_blocks).astype(np.int32)
    q = rng.standard_normal((b, s_q, h, 576)).astype(np.float32)
    return q, cache, table, np.array(seqlens, np.int32)


@pytest.mark.parametrize("b, s_q, h, seqlens", [(1, 1, 16, [1]), (3, 1, 16, [65, 200, 0]),
                                                (2, 2, 8, [130, 64])])
def test_mla_decode_fp32(b, s_q, h, seqlens):
    rng = np.random.default_rng(b * 100 + s_q * 10 + h)
    q, cache, table, lens = mla_case(rng, b, s_q, h, seqlens)
    scale = 576 ** -0.5
    o, lse = attain.mla_decode(q, cache, table, lens, 512, softmax_scale=scale, threads=2)
    assert o.shape == (b, s_q, h, 512) and o.dtype == np.float32
    assert lse.shape == (b, h, s_q) and lse.dtype == np.float32
    ro, rl = mla_ref(q.astype(np.float64), cache[:, :, 0].astype(np.float64), table, lens, scale)
    assert rel_err(o, ro) <= 1e-4
    seen = np.isfinite(rl)
    assert (np.isneginf(lse) == ~seen).all()
    assert np.abs(lse[seen] - rl[seen]).max(initial=0) <= 1e-4


def test_mla_decode_errors():
    rng = np.random.default_rng(5)
    q, cache, table, lens = mla_case(rng, 1, 1, 4, [10])
    with pytest.raises(ValueError, match="head_dim_v"):
        attain.mla_decode(q, cache, table, lens, 128)
    with pytest.raises(ValueError, match="q: last dimension"):
        attain.mla_decode(q[..., :512].copy(), cache, table, lens)
    with pytest.raises(ValueError, match="k_cache: 2 KV heads"):
        attain.mla_decode(q, np.concatenate([cache, cache], axis=2), table, lens)
    with pytest.raises(ValueError, match="block_table: dtype"):
        attain.mla_decode(q, cache, table.astype(np.int64), lens)
    with pytest.raises(ValueError, match="cache_seqlens"):
        attain.mla_decode(q, cache, table, np.array([10, 3], np.int32))
    with pytest.raises(ValueError):  # a block index past the cache
        attain.mla_decode(q, cache, np.full_like(table, 10 ** 6), lens)
