"""attain.bench against `attain bench --json` (the same structure, timings within noise),
results files, Ctrl-C, the probe, the device table, the report and the cluster simulator."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import attain

CLI = pathlib.Path(attain.__file__).resolve().parents[2] / "attain"  # build/attain
OPS = ["gemm:m=64,n=256,k=256,dtype=fp32", "gemm:m=1,n=512,k=512,dtype=bf16"]


# Keys present or not by what was measured (an op faster than its ceiling is flagged).
MEASURED = {"ceiling_error", "ceiling_errors", "local_efficiency"}


def shape_of(x):
    """The structure of a JSON value: dict keys (recursively, but those in MEASURED), list
    element structures, value types."""
    if isinstance(x, dict):
        return {k: shape_of(v) for k, v in x.items() if k not in MEASURED}
    if isinstance(x, list):
        return [shape_of(v) for v in x]
    return type(x).__name__ if not isinstance(x, (int, float)) or isinstance(x, bool) else "number"


@pytest.fixture(scope="module")
def py_results():
    return attain.bench(OPS, backends=["attain"], threads=1, max_seconds=0.2, hot=True,
                        progress=False, seed=7)


@pytest.mark.skipif(not CLI.exists(), reason="the attain program is not beside the module")
def test_bench_matches_the_cli(py_results):
    cli = subprocess.run([str(CLI), "bench", "--backend", "attain", "--threads", "1",
                          "--max-seconds", "0.2", "--hot", "--seed", "7", "--json",
                          *[a for op in OPS for a in ("--op", op)]],
                         capture_output=True, text=True, check=True)
    cli = json.loads(cli.stdout)
    body = lambda d: {k: v for k, v in d.items() if k != "summary"}  # noqa: E731
    assert shape_of(body(py_results.data)) == shape_of(body(cli))
    # the summary's groups are the ops that ran within their ceilings: its keys, then
    assert py_results.data["summary"].keys() == cli["summary"].keys()
    for p, c in zip(py_results.data["results"], cli["results"]):
        assert p["op"]["spec"] == c["op"]["spec"] and p["status"] == c["status"] == "ok"
        assert 1 / 3 <= p["min_s"] / c["min_s"] <= 3, (p["op"]["spec"], p["min_s"], c["min_s"])


def test_results_object(py_results, tmp_path):
    r = py_results
    assert r.complete and len(r) == 2 and r.backends == ["attain"]
    rows = r.to_dicts()
    assert {"spec", "kind", "backend", "status", "median_s", "efficiency"} <= set(rows[0])
    assert "attain" in r.summary() and "gemm:m=64" in r.table()
    path = tmp_path / "r.json"
    r.save(path)
    back = attain.load_results(path)
    assert back.data["schema"] == "attain.results/1"
    assert [x["op"]["spec"] for x in back.data["results"]] == OPS
    html = tmp_path / "r.html"
    page = attain.report([path], out=html)
    assert html.read_text().startswith("<!DOCTYPE html>") and page["series"]


def test_to_pandas(py_results):
    pandas = pytest.importorskip("pandas")
    df = py_results.to_pandas()
    assert isinstance(df, pandas.DataFrame) and len(df) == 2 and "efficiency" in df


def test_bench_accepts_catalog_ops_and_rejects_bad_input():
    ops = [o for o in attain.catalog("llama-3.1-8b", phase="decode", tokens=1, dtype="fp32")
           if o.layer == "o"]
    r = attain.bench(ops, threads=1, max_seconds=0.05, hot=True, progress=False)
    assert r.data["results"][0]["op"]["layer"] == "o"
    with pytest.raises(ValueError, match="nosuch"):
        attain.bench(OPS, backends=["nosuch"], progress=False)
    with pytest.raises(ValueError):
        attain.bench(["gemm:m=0,n=-1"], progress=False)
    with pytest.raises(ValueError, match="recheck"):
        attain.bench(OPS, recheck="sometimes", progress=False)
    with pytest.raises(TypeError, match="ops"):
        attain.bench([3.5], progress=False)


def test_ctrl_c_stops_between_ops_and_gives_the_handler_back(tmp_path):
    # A SIGINT during the run stops it between ops with the finished ones kept (in the returned
    # Results and in the file), and Python's own Ctrl-C works again afterwards.
    script = textwrap.dedent(f"""
        import os, signal, threading, attain
        ops = ["gemm:m=256,n=256,k={{}},dtype=fp32".format(256 + 8 * i) for i in range(60)]
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        r = attain.bench(ops, threads=1, max_seconds=0.1, hot=True, progress=False,
                         recheck="never", out={str(tmp_path / 'run.json')!r})
        print("complete", r.complete, "results", len(r), "status", r.exit_status)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            signal.pause()
        except KeyboardInterrupt:
            print("python handler back")
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert p.returncode == 0, p.stderr
    words = p.stdout.split()
    assert words[:2] == ["complete", "False"] and 0 < int(words[3]) < 60 and words[5] == "130"
    assert "python handler back" in p.stdout
    saved = attain.load_results(tmp_path / "run.json")
    assert not saved.complete and len(saved) == int(words[3])


def test_probe_and_devices():
    p = attain.probe()
    assert p["host"]["fma_gflops_1t"] > 0 if "host" in p else p["fma_gflops_1t"] > 0
    d = attain.devices()
    ids = [x["id"] for x in (d["devices"] if isinstance(d, dict) else d)]
    assert "h100-sxm" in ids and "h200" in ids


def test_cluster_simulate():
    run = attain.cluster.simulate(chips=1024, model="llama-3.1-8b", days=1, runs=2, threads=1)
    assert run["schema"] == "attain.cluster/1" and "MFU" in run["text"]
    sweep = attain.cluster.simulate(model="llama-3.1-8b", days=1, runs=1, sweep=[512, 1024],
                                    threads=1)
    assert sweep["schema"] == "attain.cluster-sweep/1"
    with pytest.raises(TypeError, match="unexpected keyword argument 'chipz'"):
        attain.cluster.simulate(chipz=10)
    with pytest.raises(ValueError, match="peak_tflops"):
        attain.cluster.simulate(peak_tflops=-1)
    with pytest.raises(TypeError, match="chips"):
        attain.cluster.simulate(chips="many")
    with pytest.raises(ValueError):
        attain.cluster.simulate(chips=0)
