// attain moe: MoE expert-parallel dispatch/combine over MPI (run under mpirun, or alone as 1 rank).
#include "attain/moe.hpp"

#include <fmt/format.h>

#include "attain/backend.hpp"
#include "attain/catalog.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {
// Timed repetitions at most: a run's length is reps times a step, and a step can take seconds.
constexpr int kMaxReps = 100000;

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    std::int64_t tokens = 128, hidden = 7168, inter = 256, align = 128;
    int experts = 16, topk = 8, n_group = 1, topk_group = 1, threads = 1, reps = 10;
    std::string mode = "normal", dtype = "bf16", model, out, transport = "auto", backend,
                scoring = "softmax", fault;
    double timeout = 30, skew = 0, scaling = 1.0;
    bool json = false, no_overlap = false, no_contention = false, no_progress = false;
    std::uint64_t seed = 42;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("moe",
                                 "MoE expert parallelism over MPI: dispatch/combine bandwidth and "
                                 "latency, overlap, contention "
                                 "(run under mpirun -n R; alone it is 1 rank)");
  sub->add_option("--tokens", o->tokens, "tokens per rank (and per micro-batch)")
      ->capture_default_str();
  auto* o_hidden = sub->add_option("--hidden", o->hidden, "hidden size")->capture_default_str();
  auto* o_experts =
      sub->add_option("--experts", o->experts, "routed experts (split evenly over the ranks)")
          ->capture_default_str();
  auto* o_topk = sub->add_option("--topk", o->topk, "experts per token")->capture_default_str();
  auto* o_inter =
      sub->add_option("--inter", o->inter, "expert intermediate size (the expert MLP's GEMMs)")
          ->capture_default_str();
  auto* o_ngroup = sub->add_option("--n-group", o->n_group, "expert groups (group-limited routing)")
                       ->capture_default_str();
  auto* o_tgroup = sub->add_option("--topk-group", o->topk_group, "groups kept per token")
                       ->capture_default_str();
  auto* o_scoring =
      sub->add_option("--scoring", o->scoring, "softmax or sigmoid (DeepSeek-V3, with bias)")
          ->capture_default_str();
  auto* o_scaling = sub->add_option("--routed-scaling", o->scaling, "routed_scaling_factor")
                        ->capture_default_str();
  sub->add_option("--model", o->model,
                  "model config (bundled name or file): routing, hidden and expert sizes");
  sub->add_option("--mode", o->mode, "normal (throughput) or low-latency")->capture_default_str();
  sub->add_option("--dtype", o->dtype, "payload: bf16, or fp8 (e4m3 with 1x128 scales)")
      ->capture_default_str();
  sub->add_option("--transport", o->transport,
                  "auto, shm (one node, direct writes) or rma (MPI one-sided puts)")
      ->capture_default_str();
  sub->add_option("--timeout", o->timeout, "seconds before a silent rank is declared dead")
      ->capture_default_str();
  sub->add_option("--align", o->align,
                  "normal mode: rows of each expert padded to a multiple of this")
      ->capture_default_str();
  sub->add_option("--backend", o->backend,
                  "backend of the expert grouped GEMM (default attain, else reference)");
  sub->add_option("--threads", o->threads, "expert GEMM threads per rank")->capture_default_str();
  sub->add_option("--reps", o->reps, "timed repetitions (median reported)")->capture_default_str();
  sub->add_option("--skew", o->skew, "routing skew toward low expert ids (0 = balanced)")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "seed of the routing and payloads")->capture_default_str();
  sub->add_flag("--no-overlap", o->no_overlap, "skip the two-micro-batch overlap measurement");
  sub->add_flag("--no-contention", o->no_contention, "skip the GEMM-under-traffic measurement");
  sub->add_option("--inject-fault", o->fault,
                  "testing aid: kill:R or stop:R makes rank R die or hang")
      ->group("");
  sub->add_flag("--json", o->json, "print JSON");
  sub->add_option("--out", o->out, "also write the JSON to this file");
  sub->add_flag("--no-progress", o->no_progress,
                "no progress on stderr (a bar on a terminal, a line a minute in a log)");
  set_action(sub, [=] {
    moe::MoeBenchConfig c;
    if (!o->model.empty()) {
      const ModelConfig m = load_bundled_model(o->model);
      c.gate = moe::gate_from_model(m);
      c.hidden = m.hidden;
      c.inter = m.expert_intermediate;
    } else {
      c.gate.experts = o->experts;
      c.gate.topk = o->topk;
      c.hidden = o->hidden;
      c.inter = o->inter;
    }
    // Explicit options win over the model's values.
    if (o_experts->count()) c.gate.experts = o->experts;
    if (o_topk->count()) c.gate.topk = o->topk;
    if (o_hidden->count()) c.hidden = o->hidden;
    if (o_inter->count()) c.inter = o->inter;
    if (o_ngroup->count() || o->model.empty()) c.gate.n_group = o->n_group;
    if (o_tgroup->count() || o->model.empty()) c.gate.topk_group = o->topk_group;
    if (o_scaling->count() || o->model.empty()) c.gate.routed_scaling_factor = o->scaling;
    if (o_scoring->count() || o->model.empty()) {
      if (o->scoring != "softmax" && o->scoring != "sigmoid")
        throw InputError(fmt::format("--scoring {} (known: softmax, sigmoid)", o->scoring));
      c.gate.sigmoid = o->scoring == "sigmoid";
    }
    c.tokens = o->tokens;
    const auto mode = moe::parse_mode(o->mode);
    if (!mode) throw InputError(fmt::format("--mode {} (known: normal, low-latency)", o->mode));
    c.mode = *mode;
    const auto dt = moe::parse_payload(o->dtype);
    if (!dt) throw InputError(fmt::format("--dtype {} (known: bf16, fp8)", o->dtype));
    c.dtype = *dt;
    const auto transport = moe::parse_transport(o->transport);
    if (!transport)
      throw InputError(fmt::format("--transport {} (known: auto, shm, rma)", o->transport));
    c.transport = *transport;
    if (!(o->timeout > 0)) throw InputError("--timeout must be positive");
    if (o->tokens <= 0 || o->hidden <= 0 || o->inter <= 0 || o->reps <= 0 || o->threads <= 0 ||
        o->align <= 0)
      throw InputError(
          "--tokens, --hidden, --inter, --reps, --threads and --align must be positive");
    if (o->reps > kMaxReps)
      throw InputError(fmt::format("--reps {} outside 1..{}", o->reps, kMaxReps));
    if (!(o->skew >= 0)) throw InputError("--skew must be 0 or more");
    if (!o->backend.empty()) {
      std::string known;
      bool found = false;
      for (const auto& b : backend_registry()) {
        found = found || b.name == o->backend;
        known += (known.empty() ? "" : ", ") + b.name;
      }
      if (!found)
        throw InputError(fmt::format("--backend '{}' is not a backend of this build ({})",
                                     o->backend.substr(0, 80), known));
    }
    c.timeout_s = o->timeout;
    c.align = o->align;
    c.expert_backend = o->backend;
    c.threads = o->threads;
    c.reps = o->reps;
    c.skew = o->skew;
    c.seed = o->seed;
    c.overlap = !o->no_overlap;
    c.contention = !o->no_contention;
    c.fault = o->fault;
    c.progress = !o->no_progress && !o->json;
    c.gate.validate();

    moe::MpiSession mpi;  // the only subcommand that starts MPI
    moe::MoeBenchResult r;
    try {
      r = moe::run_moe_bench(c);
    } catch (const RuntimeFailure& e) {  // a peer timed out: it is gone, no collective finalize
      fmt::print(stderr, "attain: error: rank {}: {}\n", mpi.rank(), e.what());
      moe::abort_job(3);
    } catch (const std::exception& e) {
      if (mpi.size() == 1) throw;
      fmt::print(stderr, "attain: error: rank {}: {}\n", mpi.rank(), e.what());
      moe::abort_job(dynamic_cast<const InputError*>(&e) ? 2 : 1);
    }
    if (mpi.rank() != 0) return r.verified ? 0 : 1;

    const moe::MoeReport report{c, r, now_iso(), command_line()};
    if (o->json) {
      emit_json(moe::to_json(report), o->out, true);
      return r.verified ? 0 : 1;
    }
    fmt::print("{}", moe::moe_report_text(report));
    if (!o->out.empty()) emit_json(moe::to_json(report), o->out, false);
    return r.verified ? 0 : 1;
  });
});

}  // namespace
}  // namespace attain::cli
