// Tuning catalog ops into the cache (include/attain/tune.hpp).
#include <fmt/format.h>

#include "attain/backend.hpp"
#include "attain/bench.hpp"
#include "attain/files.hpp"
#include "attain/tensor.hpp"
#include "attain/tune.hpp"
#include "attain/verify.hpp"

namespace attain::tune {

std::vector<TuneOutcome> tune_ops(const std::vector<CatalogOp>& ops, const TuneConfig& cfg,
                                  Scheduler& sched, const Machine& m) {
  std::vector<TuneOutcome> out;
  ProgressBar progress(cfg.progress, ops.size());
  RunOptions run;
  run.threads = cfg.threads;
  run.stages = cfg.stages;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const CatalogOp& cop = ops[i];
    progress.update(i, cop.op.spec());
    TuneOutcome o;
    o.op = cop;
    if (cop.op.kind == OpKind::mla_decode) {
      o.status = "skipped";
      o.reason = "not a GEMM (MLA decode has its own split-KV schedule)";
      out.push_back(std::move(o));
      continue;
    }
    try {
      // The key needs no data: a cached op is skipped before its inputs are made.
      o.key = key_of(backends::gemm_shape(cop.op, run));
      if (!cfg.force && sched.cache().find(o.key) != nullptr) {
        o.status = "cached";
        out.push_back(std::move(o));
        continue;
      }
      TensorSet set(cop.op);
      fill_inputs(set, cfg.seed);
      gemm::Call call = backends::gemm_call(set, run);
      SearchOptions so = cfg.search;
      so.bytes = set.total_bytes();
      o.result = search(call, m, so);
      // The winner must give the reference's answer before it is stored.
      poison_outputs(set);
      call.p.schedule = o.result.best;
      gemm::run(call);
      const Verification v = verify(set);
      if (!v.ok) {
        o.status = "wrong";
        o.reason = fmt::format("schedule {}: {}", o.result.best_text, v.detail);
        out.push_back(std::move(o));
        continue;
      }
      Entry e;
      e.key = o.key;
      e.best = o.result.best_text;
      e.trials = o.result.trials;
      e.tuned_at = now_iso();
      sched.cache().put(std::move(e));
      sched.cache().save();
      o.status = "tuned";
    } catch (const std::exception& ex) {
      o.status = "error";
      o.reason = ex.what();
    }
    out.push_back(std::move(o));
  }
  progress.update(ops.size(), "done");
  return out;
}

}  // namespace attain::tune
