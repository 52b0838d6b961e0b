// Results files (schema "attain.results/1"): what ran, on what, how fast, how right.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
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
  // Against the ceilings sampled nearest this op in time (0: none sampled): what the software
  // reached of what the machine gave in that minute (see judge_results).
  double local_efficiency = 0;
  double t_unix = 0;  // when its timing ended, seconds since the epoch (0: not recorded)
  // Faster than the ceilings allow: the ceiling is wrong, not the kernel fast. Such a result
  // is kept and shown as a ceiling error, never as a figure, and stays out of every aggregate.
  bool exceeds_ceiling() const { return status == "ok" && efficiency > 1.0; }
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
  // A run still going, or stopped before its end (a --deadline, Ctrl-C, a kill): the file
  // holds the ops finished so far and `attain bench --resume` finishes it.
  bool complete = true;
  std::size_t ops_done = 0, ops_total = 0;  // of the run's op list (when it is incomplete)
};

nlohmann::json to_json(const Result& r);
nlohmann::json to_json(
    const CeilingsCheck& c);  // {when, at, threads, fma_gflops, bf16_gflops, read_gbps}
CeilingsCheck ceilings_check_from_json(const nlohmann::json& j, std::string_view origin);
nlohmann::json to_json(const ResultsFile& f);
ResultsFile results_from_json(const nlohmann::json& j,
                              std::string_view origin);  // throws InputError
void write_results(const std::filesystem::path& file,
                   const ResultsFile& f);                     // atomic (temp + rename)
ResultsFile read_results(const std::filesystem::path& file);  // throws InputError

// A results file written while its run goes on (attain bench --out): rewritten whole and
// atomically (temporary file + rename) after every op, marked incomplete until the run ends,
// so that a kill loses at most the op in flight; and locked (flock on FILE.lock) so that a
// second process cannot write it at the same time.
class ResultsJournal {
 public:
  // Takes the lock (InputError when another process holds it). With `resume` and a file at
  // `path`: reads it and keeps its results, after checking that it was made by the same
  // settings as `header` (machine, threads, timing, seed, schedule) and holds only ops of `ops`
  // (InputError naming what differs). Otherwise the run starts from nothing.
  ResultsJournal(std::filesystem::path path, ResultsFile header, const std::vector<CatalogOp>& ops,
                 bool resume);
  ~ResultsJournal();  // releases the lock
  ResultsJournal(const ResultsJournal&) = delete;
  ResultsJournal& operator=(const ResultsJournal&) = delete;

  // Whether the file already records this op on this backend (a resumed run skips it).
  bool recorded(const CatalogOp& op, const std::string& backend) const;
  std::size_t resumed() const { return resumed_; }  // results read back from the file
  // Appends one op's results and writes the file (incomplete).
  void add(std::span<const Result> op_results);
  // The file as it stands (header, results so far, checks); the caller may add checks.
  ResultsFile& file() { return file_; }
  // Writes the file: complete, with its results in the op list's order and, within an op, in
  // the order of `backends`; or incomplete, as the run stopped.
  void finish(bool complete, const std::vector<std::string>& backends);

 private:
  void write();
  std::filesystem::path path_;
  std::vector<CatalogOp> ops_;
  ResultsFile file_;
  std::set<std::pair<std::string, std::string>> done_;  // (spec, backend)
  std::size_t resumed_ = 0;
  int lock_fd_ = -1;
};

}  // namespace attain
