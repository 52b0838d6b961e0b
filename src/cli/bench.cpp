// attain bench: measure ops on backends, side by side, verified first.
#include "attain/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "attain/moe.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

std::string default_backends() {
  std::string s;
  for (const auto& b : backend_registry()) {
    if (b.name != "attain" && b.name != "openblas") continue;
    s += (s.empty() ? "" : ",") + b.name;
  }
  return s;
}

const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    OpSource src;
    std::string backends = default_backends(), out, schedule = "default";
    int threads = 0, stages = 2;
    double max_seconds = 0.25;
    bool hot = false, json = false, no_progress = false, list = false;
    std::uint64_t seed = 42;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "bench", "Measure ops (a suite, a model, one op) on backends, verified first");
  o->src.add_to(sub, true);
  sub->add_option("--backend", o->backends,
                  "comma list of backends, timed side by side (see attain bench --list)")
      ->capture_default_str();
  sub->add_option("--threads", o->threads, "threads per backend (default: all logical CPUs)");
  sub->add_option("--max-seconds", o->max_seconds, "timing budget per op and backend, in seconds")
      ->capture_default_str();
  sub->add_flag("--hot", o->hot, "warm cache: no input rotation, no LLC flush");
  sub->add_option("--stages", o->stages, "attain backend: tile pipeline depth (1 = no prefetch)")
      ->capture_default_str();
  sub->add_option("--schedule", o->schedule, "attain backend: default or auto")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "seed of the random inputs")->capture_default_str();
  sub->add_flag("--json", o->json, "print the results file (JSON) on stdout instead of the table");
  sub->add_option("--out", o->out, "write the results file (schema attain.results/1) here");
  sub->add_flag("--no-progress", o->no_progress,
                "no progress bar (it is shown only on a terminal anyway)");
  sub->add_flag("--list", o->list, "list the backends compiled in, and exit");
  set_action(sub, [o] {
    if (o->list) {
      for (const auto& b : backend_registry()) {
        std::string why;
        const auto be = b.make(&why);
        fmt::print("{:<10} {}{}\n", b.name, b.description,
                   be ? "" : fmt::format(" [not available: {}]", why));
      }
      return 0;
    }
    const auto ops = o->src.resolve("quick");
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (o->threads < 0 || o->threads > 4 * hw)
      throw InputError(
          fmt::format("--threads {} (this machine has {} logical CPUs)", o->threads, hw));
    if (o->stages < 1 || o->stages > 8)
      throw InputError(fmt::format("--stages {} must be 1..8", o->stages));
    if (o->schedule != "default" && o->schedule != "auto")
      throw InputError(fmt::format("--schedule {} (known: default, auto)", o->schedule));
    if (!(o->max_seconds > 0)) throw InputError("--max-seconds must be positive");
    BenchConfig cfg;
    cfg.backends = split_list(o->backends);
    if (cfg.backends.empty()) throw InputError("--backend needs at least one backend");
    cfg.run.threads = o->threads > 0 ? o->threads : hw;
    cfg.run.stages = o->stages;
    cfg.run.schedule = o->schedule;
    cfg.timing.max_seconds = o->max_seconds;
    cfg.timing.hot = o->hot;
    cfg.seed = o->seed;
    cfg.progress = !o->no_progress && !o->json;

    const HostCeilings host = probe_host(false, !o->json);
    cfg.timing.llc_bytes = timing_llc_bytes(host);
    const Roofline roof = host_roofline(host, cfg.run.threads);

    ResultsFile rf;
    rf.created = now_iso();
    rf.command = command_line();
    rf.machine.cpu_model = host.cpu_model;
    rf.machine.cores = host.cores;
    rf.machine.threads = cfg.run.threads;
    rf.machine.device = "host";
    rf.machine.roofline = roof;
    rf.machine.ceilings = host;
    rf.config = {
        {"max_seconds", cfg.timing.max_seconds},
        {"hot", cfg.timing.hot},
        {"seed", cfg.seed},
        {"stages", cfg.run.stages},
        {"schedule", cfg.run.schedule},
        {"backends", cfg.backends},
        {"timing", "median of repeats after warm-up; cold cache by input rotation or LLC flush"},
        {"flops_model", "2*M*N*K per GEMM (grouped: summed; mla: QK^T + PV)"},
        {"bytes_model", "inputs read once + outputs written once, stored dtypes"}};
    if (!o->json)
      fmt::print(
          "attain bench: {} ops x {} backends, {} threads, {} cache; roofline {:.1f} GFLOP/s, "
          "{:.1f} GB/s ({})\n",
          ops.size(), cfg.backends.size(), cfg.run.threads, cfg.timing.hot ? "hot" : "cold",
          roof.peak_tflops * 1e3, roof.bw_gbps, roof.source);
    // Under mpirun the ops are sharded round robin over the ranks (one rank per host), and
    // rank 0 gathers every result in the suite's order and writes the one results file.
    std::unique_ptr<moe::MpiSession> mpi;
    if (moe::launched_by_mpirun()) {
      mpi = std::make_unique<moe::MpiSession>();
      cfg.progress = cfg.progress && mpi->rank() == 0;
      rf.results = moe::run_bench_sharded(ops, cfg, roof, &rf.machine.libraries);
      if (mpi->rank() != 0) return 0;
      rf.config["ranks"] = mpi->size();
    } else {
      rf.results = run_bench(ops, cfg, roof, &rf.machine.libraries);
    }
    const Summary sum = summarize(rf.results, cfg.backends);
    if (!o->out.empty()) write_results(o->out, rf);
    if (o->json) {
      auto j = to_json(rf);
      j["summary"] = to_json(sum);
      emit_json(j, "", true);
      return 0;
    }
    fmt::print("{}", format_table(rf.results, cfg.backends));
    fmt::print("{}", format_summary(sum, cfg.backends));
    for (const auto& [b, v] : rf.machine.libraries) fmt::print("  {:<10} = {}\n", b, v);
    for (const auto& r : rf.results)
      if (r.status == "wrong" || r.status == "error")
        fmt::print("{} {} on {}: {}\n", r.status == "wrong" ? "WRONG" : "ERROR", r.op.op.spec(),
                   r.backend, r.reason);
    if (!o->out.empty()) fmt::print("results written to {}\n", o->out);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
