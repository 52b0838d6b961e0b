// `attain mla`: the MLA decode kernel next to its two baselines (separate K/V caches, naive
// absorbed attention); the run and its report live in the library (attain/mla_bench.hpp).
#include <fmt/format.h>

#include <memory>
#include <string>

#include "attain/mla_bench.hpp"
#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

struct Args {
  std::int64_t batch = 0, seqlen = 0, heads = 0, s_q = 1;
  bool varlen = false, json = false, hot = false;
  std::string dtype = "bf16", out, variants = "attain,separate_kv,naive";
  int threads = 2;
  double max_seconds = 0.25;
  int min_reps = 5;
  double separate_kv_max_gb = 6;
  std::uint64_t seed = 1;
};

int run(const Args& a) {
  if (a.batch < 1 || a.seqlen < 1 || a.heads < 1 || a.s_q < 1)
    throw InputError("mla: --batch, --seqlen, --heads and --s-q must be positive");
  const auto dt = parse_dtype(a.dtype);
  if (!dt)
    throw InputError(fmt::format("mla: --dtype '{}' not supported (bf16, fp8, fp32)", a.dtype));
  MlaBenchConfig c;
  c.op.kind = OpKind::mla_decode, c.op.dtype = *dt;
  c.op.b = a.batch, c.op.s = a.seqlen, c.op.h = a.heads, c.op.s_q = a.s_q;
  c.varlen = a.varlen;
  c.variants = split_list(a.variants);
  c.threads = a.threads;
  c.timing.max_seconds = a.max_seconds, c.timing.min_reps = a.min_reps, c.timing.hot = a.hot;
  c.separate_kv_max_gb = a.separate_kv_max_gb;
  c.seed = a.seed;
  c.progress = !a.json;

  MlaReport report = run_mla_bench(c);
  report.created = now_iso();
  report.command = command_line();
  const nlohmann::json j = to_json(report);
  if (!a.out.empty()) write_text_file(a.out, j.dump(2) + "\n");
  if (a.json)
    fmt::print("{}\n", j.dump(2));
  else
    fmt::print("{}", mla_report_text(report));
  return report.all_verified() ? 0 : 1;
}

const bool reg = add_command([](CLI::App& app) {
  auto args = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "mla", "MLA decode attention: attain's kernel vs separate-K/V and naive baselines");
  sub->add_option("--batch,-b", args->batch, "requests")->required();
  sub->add_option("--seqlen,-s", args->seqlen,
                  "cached tokens per request (the maximum with --varlen)")
      ->required();
  sub->add_option("--heads", args->heads, "query heads")->required();
  sub->add_option("--s-q", args->s_q, "query tokens per request (causal when > 1)");
  sub->add_flag("--varlen", args->varlen, "ragged batch: seqlens uniform in [1, seqlen]");
  sub->add_option("--dtype", args->dtype, "cache dtype: bf16, fp8 or fp32");
  sub->add_option("--threads,-t", args->threads, "threads (default 2)");
  sub->add_option("--variants", args->variants,
                  "comma list of attain, separate_kv, naive (default all)");
  sub->add_option("--max-seconds", args->max_seconds, "timing budget per variant (default 0.25)");
  sub->add_option("--min-reps", args->min_reps, "timed runs at least (default 5)");
  sub->add_flag("--hot", args->hot, "warm cache: no input rotation, no LLC flush");
  sub->add_option(
      "--separate-kv-max-gb", args->separate_kv_max_gb,
      "memory the separate-K/V cache may take; beyond it requests share blocks (default 6)");
  sub->add_option("--seed", args->seed, "input seed");
  sub->add_flag("--json", args->json, "machine-readable output on stdout");
  sub->add_option("--out", args->out, "also write the JSON to FILE");
  set_action(sub, [args] { return run(*args); });
});

}  // namespace
}  // namespace attain::cli
