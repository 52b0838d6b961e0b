"""fp64 references and fp8 e4m3 encoding for the Python tests."""
import numpy as np


def e4m3_values():
    """The value of each e4m3fn byte (NaN for 0x7f and 0xff)."""
    v = np.empty(256, np.float64)
    for b in range(256):
        s, e, m = b >> 7, (b >> 3) & 15, b & 7
        if e == 15 and m == 7:
            v[b] = np.nan
        elif e == 0:
            v[b] = (-1) ** s * 2.0 ** -6 * m / 8
        else:
            v[b] = (-1) ** s * 2.0 ** (e - 7) * (1 + m / 8)
    return v


E4M3 = e4m3_values()
_CODE = {float(x): b for b, x in enumerate(E4M3) if not np.isnan(x) and not (x == 0 and b)}


def fp8_bytes(x):
    """Small integers (|x| <= 16) as exact e4m3 bytes."""
    return np.vectorize(lambda t: _CODE[float(t)], otypes=[np.uint8])(x)


def gemm_ref(a, w):
    return a.astype(np.float64) @ w.astype(np.float64).T


def rel_err(c, ref):
    scale = max(1.0, float(np.abs(ref).max(initial=0)))
    return float(np.abs(np.asarray(c, np.float64) - ref).max(initial=0)) / scale


def mla_ref(q, cache, table, seqlens, scale):
    """Absorbed MLA decode in fp64: q (b, s_q, h, 576), cache (blocks, 64, 576) -> (o (b, s_q, h,
    512), lse (b, h, s_q)); causal: query i of s_q sees the first seqlen - s_q + i + 1 keys."""
    b, s_q, h, _ = q.shape
    o = np.zeros((b, s_q, h, 512))
    lse = np.full((b, h, s_q), -np.inf)
    for r in range(b):
        n = int(seqlens[r])
        keys = np.stack([cache[table[r, t // 64], t % 64] for t in range(n)]) if n else np.zeros((0, 576))
        for i in range(s_q):
            seen = keys[: n - s_q + i + 1] if n else keys
            if len(seen) == 0:
                continue
            s = scale * (q[r, i] @ seen.T)  # (h, keys)
            mx = s.max(axis=1, keepdims=True)
            p = np.exp(s - mx)
            tot = p.sum(axis=1, keepdims=True)
            o[r, i] = (p / tot) @ seen[:, :512]
            lse[r, :, i] = (mx + np.log(tot))[:, 0]
    return o, lse
