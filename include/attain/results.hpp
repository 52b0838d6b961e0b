// Results files (schema "attain.results/1"): what ran, on what, how fast, how right.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attain/device.hpp"
#include "attain/op.hpp"

namespace attain {

inline constexpr const char* kResultsSchema = "attain.results/1";

struct Result {
  CatalogOp op;
  std::string backend;
  std::string status = "ok";  // ok | unsupported | wrong | error
  std::string reason;         // for anything but ok
  double median_s = 0, min_s = 0, iqr_s = 0;
  int reps = 0;
  double flops = 0, bytes = 0, tflops = 0, gbps = 0, attainable_tflops = 0, efficiency = 0;
  bool verified = false;
  double error = 0;        // relative error vs the reference
  bool projected = false;  // a projection, not a measurement (attain project)
};

struct MachineInfo {
  std::string cpu_model;
  int cores = 0;
  int threads = 0;     // threads the run used
  std::string device;  // "host" or a device id (imported / projected results)
  Roofline roofline;   // ceilings the efficiencies were computed against
  HostCeilings ceilings;
  std::map<std::string, std::string> libraries;  // backend -> library and version that ran
  std::vector<CeilingsCheck> checks;  // the ceilings measured again during the run (bench)
};

struct ResultsFile {
  std::string created;  // ISO timestamp
  std::string command;  // how it was produced
  MachineInfo machine;
  nlohmann::json config;  // timing settings etc.
  std::vector<Result> results;
};

nlohmann::json to_json(const Result& r);
nlohmann::json to_json(
    const CeilingsCheck& c);  // {when, at, threads, fma_gflops, bf16_gflops, read_gbps}
nlohmann::json to_json(const ResultsFile& f);
ResultsFile results_from_json(const nlohmann::json& j,
                              std::string_view origin);  // throws InputError
void write_results(const std::filesystem::path& file,
                   const ResultsFile& f);                     // atomic (temp + rename)
ResultsFile read_results(const std::filesystem::path& file);  // throws InputError

}  // namespace attain
