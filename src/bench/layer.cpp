// One decoder layer end to end (include/attain/layer.hpp).
#include "attain/layer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include "attain/tensor.hpp"
#include "attain/threadpool.hpp"
#include "attain/tune.hpp"
#include "attain/verify.hpp"

namespace attain {

namespace {

// Where each role of the catalog runs in a layer; equal stages are independent.
const std::map<std::string, int>& stage_table() {
  static const std::map<std::string, int> t = {
      {"qkv", 0},        {"q_a+kv_a", 0},        {"q+kv_a", 0},         {"q_b", 1},
      {"kv_b", 1},       {"attn_qk", 2},         {"attn_qk_window", 2}, {"attn_qk_chunk", 2},
      {"mla_decode", 2}, {"attn_pv", 3},         {"attn_pv_window", 3}, {"attn_pv_chunk", 3},
      {"o", 4},          {"router", 5},          {"shared_gate_up", 5}, {"shared_gate", 5},
      {"gate_up", 5},    {"experts_gate_up", 6}, {"experts_down", 7},   {"shared_down", 7},
      {"down", 7}};
  return t;
}

// The catalog joins roles of one shape with '+'; "q_a+kv_a" and "q+kv_a" are roles of
// their own.
std::vector<std::string> roles_of(const std::string& layer) {
  std::vector<std::string> out;
  std::string rest = layer;
  for (const char* joined : {"q_a+kv_a", "q+kv_a"}) {
    const std::size_t at = rest.find(joined);
    if (at != std::string::npos) {
      out.emplace_back(joined);
      rest.erase(at, std::string(joined).size());
    }
  }
  std::size_t pos = 0;
  while (pos <= rest.size()) {
    const std::size_t plus = std::min(rest.find('+', pos), rest.size());
    if (plus > pos) out.push_back(rest.substr(pos, plus - pos));
    pos = plus + 1;
  }
  return out;
}

// The layer as the timing harness sees it: steps run in order, each one kernel or one
// group of GEMMs in one region.
class LayerKernel final : public Kernel {
 public:
  struct Step {
    Kernel* kernel = nullptr;       // one op
    std::vector<gemm::Call> calls;  // or a stage of GEMMs run together
  };
  std::vector<Step> steps;
  int threads = 1;
  void run() override {
    for (const Step& s : steps) {
      if (s.kernel != nullptr) {
        s.kernel->run();
      } else {
        gemm::run_together(s.calls.data(), s.calls.size(), threads);
      }
    }
  }
};

}  // namespace

LayerSpec parse_layer_spec(std::string_view text, std::int64_t context, DType dtype) {
  const std::string s(text);
  const std::size_t a = s.find(':'), b = a == std::string::npos ? a : s.find(':', a + 1);
  if (a == std::string::npos || b == std::string::npos)
    throw InputError(
        fmt::format("--layer '{}': expected MODEL:PHASE:TOKENS, e.g. "
                    "deepseek-v3:decode:32",
                    s));
  LayerSpec l;
  l.model = s.substr(0, a);
  l.pass.phase = s.substr(a + 1, b - a - 1);
  if (l.pass.phase != "prefill" && l.pass.phase != "decode")
    throw InputError(fmt::format("--layer '{}': phase must be prefill or decode", s));
  const std::string tok = s.substr(b + 1);
  try {
    std::size_t used = 0;
    l.pass.tokens = std::stoll(tok, &used);
    if (used != tok.size() || l.pass.tokens <= 0) throw std::invalid_argument(tok);
  } catch (const std::exception&) {
    throw InputError(fmt::format("--layer '{}': TOKENS must be a positive integer", s));
  }
  l.pass.context = l.pass.phase == "decode" ? context : l.pass.tokens;
  l.pass.dtype = dtype;
  return l;
}

std::vector<LayerOp> layer_ops(const ModelConfig& cfg, const PassSpec& pass) {
  const bool moe = cfg.is_moe();
  std::vector<LayerOp> out;
  for (const CatalogOp& op : model_ops(cfg, pass)) {
    for (const std::string& role : roles_of(op.prov.layer)) {
      if (role == kLmHeadRole) continue;
      // An MoE model's layer is an MoE layer: its few dense layers' MLP is left out.
      if (moe && (role == "gate_up" || role == "down")) continue;
      const auto it = stage_table().find(role);
      if (it == stage_table().end())
        throw std::logic_error("layer_ops: no stage for catalog role '" + role + "'");
      out.push_back({op, role, it->second});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LayerOp& x, const LayerOp& y) { return x.stage < y.stage; });
  return out;
}

std::vector<LayerResult> run_layer(const std::vector<LayerOp>& ops, const BenchConfig& cfg) {
  std::vector<LayerResult> results;
  // One input set per op (the layer's weights together are the working set).
  std::vector<std::unique_ptr<TensorSet>> sets;
  std::size_t bytes = 0;
  // Progress (on a terminal): each op's inputs, then per backend each op's verification and the
  // timing. A large layer spends minutes before its timing (DeepSeek-V3 at 32 tokens in fp8:
  // 11.6 GB of operands generated and every output checked).
  // Backend b's steps start at first(b) (ops.size() verifications, then the timing); first(nb)
  // is the total.
  const std::size_t nb = cfg.backends.size();
  auto first = [&](std::size_t b) { return ops.size() * (1 + b) + b; };
  ProgressBar progress(cfg.progress, first(nb));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    progress.update(i, "inputs " + ops[i].op.op.spec());
    sets.push_back(std::make_unique<TensorSet>(ops[i].op.op));
    fill_inputs(*sets.back(), cfg.seed + i);
    bytes += sets.back()->total_bytes();
  }
  // Backend b's layer, built and verified (null, with r saying why, when it is not "ok").
  struct Prepared {
    std::vector<std::unique_ptr<Kernel>> kernels;
    LayerKernel layer;
  };
  auto prepare = [&](std::size_t bi, Backend& be, LayerResult& r) -> std::unique_ptr<Prepared> {
    const std::string& name = cfg.backends[bi];
    const bool grouped = name == "attain:auto" || (name == "attain" && cfg.run.schedule == "auto");
    auto p = std::make_unique<Prepared>();
    LayerKernel& layer = p->layer;
    layer.threads = cfg.run.threads;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Support s = be.supports(ops[i].op.op);
      if (!s.ok) {
        r.status = "unsupported";
        r.reason = fmt::format("{}: {}", ops[i].op.op.spec(), s.reason);
        return nullptr;
      }
    }
    for (std::size_t i = 0; i < ops.size();) {
      std::size_t j = i;
      while (j < ops.size() && ops[j].stage == ops[i].stage) ++j;
      std::size_t gemms = 0;
      for (std::size_t q = i; q < j; ++q) gemms += ops[q].op.op.kind != OpKind::mla_decode;
      if (grouped && gemms > 1) {
        // The stage's GEMMs in one region, each with its own auto schedule.
        LayerKernel::Step step;
        for (std::size_t q = i; q < j; ++q) {
          if (ops[q].op.op.kind == OpKind::mla_decode) continue;
          gemm::Call c = backends::gemm_call(*sets[q], cfg.run);
          c.p.schedule =
              tune::Scheduler::instance().choose(c, tune::host_machine(c.p.threads)).schedule;
          step.calls.push_back(c);
        }
        layer.steps.push_back(std::move(step));
        for (std::size_t q = i; q < j; ++q) {
          if (ops[q].op.op.kind != OpKind::mla_decode) continue;
          p->kernels.push_back(be.prepare(*sets[q], cfg.run));
          layer.steps.push_back({p->kernels.back().get(), {}});
        }
      } else {
        for (std::size_t q = i; q < j; ++q) {
          p->kernels.push_back(be.prepare(*sets[q], cfg.run));
          layer.steps.push_back({p->kernels.back().get(), {}});
        }
      }
      i = j;
    }
    r.regions = static_cast<int>(layer.steps.size());
    for (auto& s : sets) poison_outputs(*s);
    layer.run();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      progress.update(first(bi) + i, name + ": verify " + ops[i].op.op.spec());
      const Verification v = verify(*sets[i]);
      if (!v.ok) {
        r.status = "wrong";
        r.reason = fmt::format("{}: {}", ops[i].op.op.spec(), v.detail);
        return nullptr;
      }
    }
    r.verified = true;
    return p;
  };
  std::vector<std::unique_ptr<Backend>> bes(nb);
  std::vector<std::string> why(nb);  // why a backend could not be made
  for (std::size_t bi = 0; bi < nb; ++bi) {
    try {
      bes[bi] = make_backend(cfg.backends[bi]);
    } catch (const std::exception& e) {
      why[bi] = e.what();
    }
  }
  // Consecutive backends of one interleave group (attain, attain:auto) are timed together,
  // run by run in turn; the others one by one.
  for (std::size_t bi = 0; bi < nb;) {
    const std::size_t be = interleave_run_end(bi, nb, [&](std::size_t i) {
      return bes[i] ? bes[i]->interleave_group() : std::string_view{};
    });
    std::vector<std::unique_ptr<Prepared>> ready;
    std::vector<std::size_t> at;  // their results
    std::string names;
    for (std::size_t b = bi; b < be; ++b) {
      LayerResult r;
      r.backend = cfg.backends[b];
      try {
        if (!bes[b]) throw std::runtime_error(why[b]);
        if (auto p = prepare(b, *bes[b], r)) {
          ready.push_back(std::move(p));
          at.push_back(results.size());
          names += (names.empty() ? "" : ", ") + r.backend;
        }
      } catch (const std::exception& e) {
        r.status = "error";
        r.reason = e.what();
      }
      results.push_back(r);
    }
    if (!ready.empty()) {
      progress.update(
          first(be - 1) + ops.size(),
          names + (ready.size() > 1 ? ": timing the layers in turn" : ": timing the layer"));
      try {
        std::vector<std::vector<Kernel*>> groups;
        for (auto& p : ready) groups.push_back({&p->layer});
        const std::vector<Timing> ts = time_interleaved(groups, bytes, cfg.timing);
        ThreadPool::instance().rest();  // the next backend gets the cores to itself
        for (std::size_t j = 0; j < ready.size(); ++j) {
          LayerResult& r = results[at[j]];
          r.median_s = ts[j].median_s, r.min_s = ts[j].min_s, r.iqr_s = ts[j].iqr_s;
          r.reps = ts[j].reps;
        }
      } catch (const std::exception& e) {
        for (std::size_t j : at) results[j].status = "error", results[j].reason = e.what();
      }
    }
    bi = be;
  }
  progress.update(first(nb), "done");
  return results;
}

}  // namespace attain
