// Helpers shared by the subcommands: output routing and op selection.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attain/catalog.hpp"
#include "attain/files.hpp"

namespace attain::cli {

// Writes `j` to `out` (if set, atomically) and to stdout when `to_stdout`.
void emit_json(const nlohmann::json& j, const std::string& out, bool to_stdout);
void write_text_file(const std::string& path, const std::string& text);

std::vector<std::string> split_list(const std::string& s);  // "a,b,c"
DType dtype_arg(const std::string& s);                      // InputError for unknown

// Where ops come from: --suite | --model | --op | --shape (+ --dtype), shared by bench and catalog.
struct OpSource {
  std::string suite, model, shape, dtype, phases = "prefill,decode";  // dtype "": the default
  std::vector<std::string> ops;                                       // --op, repeatable
  std::string tokens;  // comma list; default per phase
  std::int64_t context = 4096;
  int sample = 0;
  bool assume_llama = false;  // --assume-llama: an unknown model_type read as Llama-like
  // The options as given, so that an empty value (--suite "") is refused, not taken as absent.
  const CLI::Option *suite_opt = nullptr, *model_opt = nullptr, *shape_opt = nullptr;
  void add_to(CLI::App* sub, bool with_sample);
  std::vector<CatalogOp> resolve(const std::string& default_suite) const;
  DType dtype_or(DType fallback) const;  // --dtype, or `fallback` when it is not given
};

// A deterministic stratified sample (by kind, phase and dtype) of n ops.
std::vector<CatalogOp> stratified_sample(const std::vector<CatalogOp>& ops, std::size_t n);

std::string command_line();  // the attain invocation, for provenance in results files
void set_command_line(int argc, char** argv);

}  // namespace attain::cli
