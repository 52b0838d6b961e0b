#include "cli/util.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "attain/files.hpp"

namespace attain::cli {

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomic(path, text);
}

void emit_json(const nlohmann::json& j, const std::string& out, bool to_stdout) {
  if (!out.empty()) write_text_file(out, j.dump(1) + "\n");
  if (to_stdout) std::cout << j.dump(1) << std::endl;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::size_t p = 0;
  while (p <= s.size()) {
    const auto c = s.find(',', p);
    auto item = s.substr(p, c == std::string::npos ? std::string::npos : c - p);
    if (!item.empty()) v.push_back(item);
    if (c == std::string::npos) break;
    p = c + 1;
  }
  return v;
}

DType dtype_arg(const std::string& s) {
  auto d = parse_dtype(s);
  if (!d) throw InputError(fmt::format("unknown dtype '{}' (known: fp32, bf16, fp16, fp8)", s));
  return *d;
}

void OpSource::add_to(CLI::App* sub, bool with_sample) {
  suite_opt = sub->add_option("--suite", suite, "a named suite: llm-1055 or quick");
  model_opt = sub->add_option("--model", model,
                              "a bundled model name (e.g. deepseek-v3) or a config.json path");
  // `--op A B C` and `--op A --op B` alike, so a shell's brace expansion
  // (--op gemm:m=8,n=4096,k=7168,dtype={fp32,bf16}) works.
  sub->add_option("--op", ops,
                  "op specs, e.g. gemm:m=8,n=4096,k=7168,dtype=bf16 (several after one --op, or "
                  "repeat --op)")
      ->take_all()
      ->allow_extra_args(true);
  shape_opt = sub->add_option("--shape", shape, "a GEMM as MxNxK (with --dtype)");
  sub->add_option("--dtype", dtype,
                  "fp32, bf16, fp16 or fp8: for --shape (default bf16) and --model (default the "
                  "config's: fp8 for fp8 block-scaled weights, else its torch_dtype)");
  sub->add_flag("--assume-llama", assume_llama,
                "with --model: read a config of an unknown model_type that has the Llama fields "
                "as Llama-like (the output says so)");
  sub->add_option("--phase", phases, "with --model: prefill, decode or both")
      ->capture_default_str();
  sub->add_option(
      "--tokens", tokens,
      "with --model: prefill tokens / decode batch sizes (comma list; default 512 / 1,32)");
  sub->add_option("--context", context, "with --model: decode context length")
      ->capture_default_str();
  if (with_sample)
    sub->add_option("--sample", sample, "a stratified sample of N ops (by kind, phase, dtype)");
}

namespace {
std::int64_t parse_count(const std::string& s, const char* what) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used != s.size() || v <= 0) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw InputError(fmt::format("{} '{}' must be a positive integer", what, s));
  }
}
}  // namespace

DType OpSource::dtype_or(DType fallback) const {
  return dtype.empty() ? fallback : dtype_arg(dtype);
}

std::vector<CatalogOp> OpSource::resolve(const std::string& default_suite) const {
  for (const auto& [opt, value] :
       {std::pair{suite_opt, &suite}, std::pair{model_opt, &model}, std::pair{shape_opt, &shape}})
    if (opt != nullptr && opt->count() > 0 && value->empty())
      throw InputError(fmt::format("{} needs a value", opt->get_name()));
  for (const auto& spec : ops)
    if (spec.empty()) throw InputError("--op needs a spec");
  const int given = !suite.empty() + !model.empty() + !ops.empty() + !shape.empty();
  if (given > 1) throw InputError("give one of --suite, --model, --op, --shape");
  std::vector<CatalogOp> out;
  if (!ops.empty()) {
    for (const auto& spec : ops) out.push_back({Op::parse(spec), {"", "", "", 0, 0, 1}});
  } else if (!shape.empty()) {
    out.push_back({Op::gemm_shape(shape, dtype_or(DType::bf16)), {"", "", "", 0, 0, 1}});
  } else if (!model.empty()) {
    const ModelConfig cfg = load_bundled_model(model, {assume_llama});
    for (const auto& note : cfg.notes) fmt::print(stderr, "note: {}: {}\n", cfg.name, note);
    const DType dt = dtype_or(cfg.dtype);
    std::map<std::string, std::size_t> seen;
    for (const auto& ph : split_list(phases)) {
      if (ph != "prefill" && ph != "decode")
        throw InputError(fmt::format("phase '{}' (known: prefill, decode)", ph));
      std::vector<std::int64_t> toks;
      if (tokens.empty())
        toks = ph == "prefill" ? std::vector<std::int64_t>{512} : std::vector<std::int64_t>{1, 32};
      for (const auto& t : split_list(tokens)) toks.push_back(parse_count(t, "--tokens"));
      if (context <= 0) throw InputError(fmt::format("--context {} must be positive", context));
      for (auto t : toks)
        for (auto& e : model_ops(cfg, {ph, t, context, dt}))
          if (seen.emplace(e.op.spec(), out.size()).second) out.push_back(std::move(e));
    }
  } else {
    out = attain::suite(suite.empty() ? default_suite : suite);
  }
  if (sample > 0 && static_cast<std::size_t>(sample) < out.size())
    out = stratified_sample(out, static_cast<std::size_t>(sample));
  else if (sample < 0)
    throw InputError(fmt::format("--sample {} must be positive", sample));
  return out;
}

std::vector<CatalogOp> stratified_sample(const std::vector<CatalogOp>& ops, std::size_t n) {
  std::map<std::string, std::vector<std::size_t>> strata;
  for (std::size_t i = 0; i < ops.size(); ++i)
    strata[fmt::format("{}/{}/{}", kind_name(ops[i].op.kind), ops[i].prov.phase,
                       dtype_name(ops[i].op.dtype))]
        .push_back(i);
  // Proportional allocation (largest remainder), at least one per stratum while n allows,
  // then evenly spaced picks within each stratum.
  std::vector<std::size_t> picked;
  std::size_t remaining = n;
  std::map<std::string, std::size_t> take;
  std::vector<std::pair<double, std::string>> rem;
  for (auto& [k, idx] : strata) {
    const double exact =
        static_cast<double>(n) * static_cast<double>(idx.size()) / static_cast<double>(ops.size());
    take[k] = std::min(idx.size(), static_cast<std::size_t>(exact));
    remaining -= take[k];
    rem.push_back({exact - static_cast<double>(take[k]), k});
  }
  std::stable_sort(rem.begin(), rem.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; remaining > 0 && i < rem.size() * 2; ++i) {
    auto& k = rem[i % rem.size()].second;
    if (take[k] < strata[k].size()) ++take[k], --remaining;
  }
  for (auto& [k, idx] : strata)
    for (std::size_t j = 0; j < take[k]; ++j) picked.push_back(idx[j * idx.size() / take[k]]);
  std::sort(picked.begin(), picked.end());
  std::vector<CatalogOp> out;
  for (auto i : picked) out.push_back(ops[i]);
  return out;
}

namespace {
std::string& cmdline() {
  static std::string s;
  return s;
}
}  // namespace
std::string command_line() {
  return cmdline();
}
void set_command_line(int argc, char** argv) {
  std::string s = "attain";
  for (int i = 1; i < argc; ++i) s += std::string(" ") + argv[i];
  cmdline() = s;
}

}  // namespace attain::cli
