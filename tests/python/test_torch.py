"""attain's calls on torch tensors (DLPack; fp8 by address) against torch's own products in
fp64. Skipped where torch is not installed (Debian: python3-torch)."""
import numpy as np
import pytest

import attain
from refs import fp8_bytes, mla_ref, rel_err

torch = pytest.importorskip("torch")

TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def ref(a, w):
    return (a.double() @ w.double().T).numpy()


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("m, n, k", [(1, 4096, 64), (7, 33, 129), (64, 96, 256), (0, 8, 8)])
def test_gemm_against_torch_matmul(dt, m, n, k):
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn(m, k, generator=g).to(dt)
    w = torch.randn(n, k, generator=g).to(dt)
    c = attain.gemm(a, w)
    assert isinstance(c, torch.Tensor) and c.dtype == dt and tuple(c.shape) == (m, n)
    # the 16-bit result is rounded once from fp32: its tolerance is that rounding
    assert rel_err(c.double().numpy(), ref(a, w)) <= TOL[dt]
    assert rel_err(c.double().numpy(), (a.double() @ w.double().T).to(dt).double().numpy()) <= TOL[dt]


def test_gemm_torch_out_and_zero_copy():
    a = torch.randn(4, 64, dtype=torch.bfloat16)
    w = torch.randn(32, 64, dtype=torch.bfloat16)
    out = torch.full((4, 32), float("nan"))
    got = attain.gemm(a, w, out=out)
    assert got is out and torch.isfinite(out).all()
    first = out.clone()
    a.mul_(2)  # read in place: the next call sees the change
    attain.gemm(a, w, out=out)
    assert torch.allclose(out, 2 * first, rtol=1e-2, atol=1e-2)


def test_gemm_torch_requires_grad_and_mixed_with_numpy():
    a = torch.randn(3, 16, requires_grad=True)
    w = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    c = attain.gemm(a, w)
    assert isinstance(c, torch.Tensor)
    assert rel_err(c.numpy(), a.detach().double().numpy() @ w.astype(np.float64).T) <= 1e-5


def test_gemm_torch_errors():
    a = torch.randn(4, 8)
    with pytest.raises(TypeError, match="a: not C-contiguous"):
        attain.gemm(torch.randn(8, 4).T, torch.randn(5, 8))
    with pytest.raises(ValueError, match="w: dtype float64"):
        attain.gemm(a, torch.randn(5, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="out: dtype int32"):
        attain.gemm(a, torch.randn(5, 8), out=torch.zeros(4, 5, dtype=torch.int32))


class OnAnotherDevice:
    """A DLPack producer on a CUDA device, as a GPU tensor presents itself."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("attain must check the device before exporting")


def test_wrong_device_is_a_type_error():
    with pytest.raises(TypeError, match="w: a tensor on DLPack device type 2"):
        attain.gemm(torch.randn(2, 4), OnAnotherDevice())
    with pytest.raises(TypeError, match="a: a tensor on meta, not the CPU"):
        attain.gemm(torch.empty(2, 4, device="meta"), torch.randn(3, 4))


class DLPackOnly:
    """A producer known to attain only by the DLPack protocol (as a jax or cupy array is)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16, torch.float16])
def test_gemm_through_the_dlpack_protocol(dt):
    a = torch.randn(5, 72).to(dt)
    w = torch.randn(33, 72).to(dt)
    c = attain.gemm(DLPackOnly(a), DLPackOnly(w))
    # not torch's own tensors: the result is numpy, fp32 where numpy has no such dtype
    assert isinstance(c, np.ndarray) and c.shape == (5, 33)
    assert rel_err(c, ref(a, w)) <= TOL[dt]


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"),
                    reason=f"torch {torch.__version__} has no float8_e4m3fn (torch 2.1 and later)")
def test_gemm_torch_fp8():
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 9, size=(4, 256)).astype(np.float32)
    w = rng.integers(-8, 9, size=(130, 256)).astype(np.float32)
    a8 = torch.from_numpy(a).to(torch.float8_e4m3fn)
    w8 = torch.from_numpy(w).to(torch.float8_e4m3fn)
    assert (a8.view(torch.uint8).numpy() == fp8_bytes(a)).all()
    c = attain.gemm((a8, torch.ones(4, 2)), (w8, torch.full((2, 2), 2.0)))
    assert c.dtype == torch.bfloat16
    assert rel_err(c.double().numpy(), 2 * a.astype(np.float64) @ w.T) <= 1e-2


def test_grouped_gemm_torch_bf16():
    g, max_m, n, k = 3, 5, 40, 64
    a = torch.randn(g, max_m, k).bfloat16()
    w = torch.randn(g, n, k).bfloat16()
    masked = torch.tensor([5, 0, 2], dtype=torch.int32)
    c = attain.grouped_gemm(a, w, masked)
    assert c.dtype == torch.bfloat16 and tuple(c.shape) == (g, max_m, n)
    for i, r in enumerate(masked.tolist()):
        assert rel_err(c[i, :r].double().numpy(), ref(a[i, :r], w[i])) <= 1e-2


def test_mla_decode_torch_bf16():
    b, s_q, h, lens = 2, 1, 16, [100, 300]
    blocks = 12
    g = torch.Generator().manual_seed(9)
    cache = (torch.randn(blocks, 64, 1, 576, generator=g) * 0.5).bfloat16()
    q = torch.randn(b, s_q, h, 576, generator=g).bfloat16()
    table = torch.randperm(blocks, generator=g)[: b * 5].reshape(b, 5).int()
    seqlens = torch.tensor(lens, dtype=torch.int32)
    o, lse = attain.mla_decode(q, cache, table, seqlens, 512, None, None, softmax_scale=0.05)
    assert o.dtype == torch.bfloat16 and tuple(o.shape) == (b, s_q, h, 512)
    assert lse.dtype == torch.float32 and tuple(lse.shape) == (b, h, s_q)
    ro, rl = mla_ref(q.double().numpy(), cache[:, :, 0].double().numpy(), table.numpy(),
                     seqlens.numpy(), 0.05)
    assert rel_err(o.double().numpy(), ro) <= 2e-2
    assert np.abs(lse.numpy() - rl).max() <= 1e-2
