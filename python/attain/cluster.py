"""attain.cluster: the training-cluster simulator (`attain cluster`) from Python."""
import json as _json

from . import _core

__all__ = ["simulate", "DEFAULT_SWEEP"]

DEFAULT_SWEEP = [1000, 2000, 5000, 10000, 20000, 50000, 100000]


def simulate(**options):
    """One training job simulated, or a sweep against scale: the keyword arguments are
    `attain cluster`'s options with underscores (chips=16384, model="llama-3.1-405b",
    device="h100-sxm", tp=8, pp=16, cp=1, batch=2048, seq=8192, days=54, efficiency_from=
    "results.json", target_ettr=0.95, sweep=[1000, 10000] or True for the default list, ...;
    `attain cluster --help` documents each). Returns the run's file as a dict (schema
    attain.cluster/1, or attain.cluster-sweep/1 for a sweep) with the text `attain cluster`
    prints under "text"."""
    if options.get("sweep") is True:
        options["sweep"] = DEFAULT_SWEEP
    elif options.get("sweep") is False:
        del options["sweep"]
    data, text = _core.cluster_simulate(options)
    out = _json.loads(data)
    out["text"] = text
    return out
