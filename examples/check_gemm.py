"""attain.gemm checked against numpy.matmul and torch.matmul (where torch is installed) on the
shapes of one model's layers, each dtype with its tolerance, and timed beside them.

    PYTHONPATH=build/python python3 examples/check_gemm.py [MODEL]
"""
import sys
import time

import numpy as np

import attain

model = sys.argv[1] if len(sys.argv) > 1 else "llama-3.1-8b"
try:
    import torch
except ImportError:
    torch = None


def best_of(fn, reps=5):
    fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def rel_err(c, ref):
    return float(np.abs(np.asarray(c, np.float64) - ref).max()) / max(1.0, float(np.abs(ref).max()))


rng = np.random.default_rng(0)
ops = [o for o in attain.catalog(model, phase="decode", tokens=[1, 32], dtype="fp32")
       if o.kind == "gemm" and o.layer != "lm_head"]
print(f"{'op':<42} {'lib':<6} {'dtype':<9} {'rel err':>9} {'attain ms':>10} {'lib ms':>8}")
for op in ops:
    a = rng.standard_normal((op.m, op.k)).astype(np.float32)
    w = rng.standard_normal((op.n, op.k)).astype(np.float32)
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    for dt, tol in ((np.float32, 1e-5), (np.float16, 2e-3)):
        x, y = a.astype(dt), w.astype(dt)
        c = attain.gemm(x, y, out_dtype=np.float32)
        err = rel_err(c, x.astype(np.float64) @ y.astype(np.float64).T)
        assert err <= tol, (op.spec, dt, err)
        t_a = best_of(lambda: attain.gemm(x, y, out=c))
        # numpy multiplies float16 without BLAS (seconds a call): timed in float32 only
        t_n = f"{best_of(lambda: np.matmul(x, y.T)) * 1e3:8.3f}" if dt == np.float32 else "       -"
        print(f"{op.spec:<42} {'numpy':<6} {np.dtype(dt).name:<9} {err:9.1e} {t_a * 1e3:10.3f} "
              f"{t_n}")
    if torch is None:
        continue
    for dt, tol in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2)):
        x, y = torch.from_numpy(a).to(dt), torch.from_numpy(w).to(dt)
        c = attain.gemm(x, y)
        err = rel_err(c.double().numpy(), (x.double() @ y.double().T).numpy())
        assert err <= tol, (op.spec, dt, err)
        t_a = best_of(lambda: attain.gemm(x, y, out=c))
        t_t = best_of(lambda: torch.matmul(x, y.T))
        print(f"{op.spec:<42} {'torch':<6} {str(dt)[6:]:<9} {err:9.1e} {t_a * 1e3:10.3f} "
              f"{t_t * 1e3:8.3f}")
if torch is None:
    print("(torch is not installed: numpy only)")
print("every result within its tolerance")
