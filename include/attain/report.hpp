// Reports: a self-contained HTML page (inline SVG + CSS) from results files and `attain cluster`
// files; results files from timings measured elsewhere (CSV import); roofline projections to
// listed devices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "attain/bench.hpp"
#include "attain/catalog.hpp"
#include "attain/device.hpp"
#include "attain/results.hpp"

namespace attain {

// ---- the report ----------------------------------------------------------------------

// One results file as the report sees it; `label` names it on the page (e.g. the file name).
struct ReportInput {
  std::string label;
  ResultsFile file;
};

// One (file, backend) pair: the unit every chart and table compares.
struct ReportSeries {
  std::string name;  // "label:backend" (or the backend alone when there is one file)
  std::size_t file = 0;
  std::string backend;
  bool projected = false;         // any of its results is a projection
  std::vector<const Result*> ok;  // status ok, in file order
  std::map<std::string, std::size_t> status_counts;
  Aggregate efficiency;        // over `ok`, less the ceiling errors
  Aggregate local_efficiency;  // the same ops against the ceilings sampled beside each
  std::vector<const Result*> ceiling_errors;  // in `ok` but faster than their ceiling
  double eff_min = 0, eff_max = 0;            // whiskers of the box plot
  std::map<std::string, Aggregate> eff_by;    // "phase=decode", "kind=gemm", ... (summarize())
};

// Speed of series `a` relative to series `b` over the op specs both ran: time_b / time_a per
// op (< 1: a is slower; 0.43 = "a runs at 43% of b's speed").
struct ReportPair {
  std::size_t a = 0, b = 0;
  Aggregate ratio;
  std::size_t wins_a = 0, wins_b = 0, ties = 0;
  bool projected = false;  // either side is a projection
};

// ---- cluster files (attain cluster --json --out F) ---------------------------------------

// A figure over Monte Carlo runs: mean and the 95% confidence interval of the mean (n > 1).
struct ClusterStat {
  double mean = 0, lo = 0, hi = 0;
  std::int64_t n = 0;
  bool has_ci() const { return n > 1; }
};

struct ClusterEvent {  // one interruption of the run the timeline holds
  double t_h = 0;      // wall clock since the start
  bool planned = false;
  std::string cause;
  double lost_work_min = 0, down_min = 0;
  bool spare_used = false;
};

// One simulated job (schema "attain.cluster/1").
struct ClusterRun {
  std::string command, created;
  std::string model, device, failures, checkpoint_mode;
  std::int64_t chips = 0, runs = 0, seed = 0;
  double days = 0, token_budget = 0;
  ClusterStat ettr, goodput, unexpected, planned, wall_h;
  double mfu = 0, mtbf_h = 0;
  double interval_min = 0, daly_min = 0, young_min = 0, pause_s = 0;  // checkpoints
  std::vector<std::pair<std::string, ClusterStat>> by_cause;          // in the table's order
  std::map<std::string, double> published;  // the table's record, by cause
  std::int64_t published_chips = 0;         // ... on this many chips
  double published_days = 0;                // ... over this many days
  double published_planned = -1;
  // The timeline of one run (run `timeline_run`), when the file has one; its totals when the
  // file records them (attain cluster from this version on), else < 0.
  bool has_timeline = false;
  std::int64_t timeline_run = 0;
  std::vector<ClusterEvent> timeline;
  double run_wall_h = -1, run_useful_h = -1, run_ettr = -1, run_goodput = -1;
  double run_events = -1;  // unexpected + planned of that run (> timeline size: cut short)
};

// Goodput against scale (schema "attain.cluster-sweep/1").
struct ClusterVariantPoint {
  double ettr = 0, goodput = 0;
  double ettr_lo = 0, ettr_hi = 0, goodput_lo = 0, goodput_hi = 0;
  bool has_ci = false;
  double interval_min = 0, unexpected = 0;
  std::int64_t spare_nodes = 0;
};
struct ClusterSweepPoint {
  std::int64_t chips = 0;
  double mtbf_h = 0, mfu = 0, step_s = 0;
  std::map<std::string, ClusterVariantPoint> variants;
};
struct ClusterSweep {
  std::string command, created;
  std::string model, device, failures;
  double days = 0;
  std::int64_t runs = 0;
  std::vector<std::pair<std::string, std::string>> variants;  // name, what it is
  std::vector<ClusterSweepPoint> points;                      // by chips, ascending
};

// What a JSON document is, from its "schema" or, without one, from fields only one kind has.
enum class ReportFileKind { results, cluster_run, cluster_sweep };
// Throws InputError naming `origin` for a document that is none of the three.
ReportFileKind report_file_kind(const nlohmann::json& j, std::string_view origin);
ClusterRun cluster_run_from_json(const nlohmann::json& j, std::string_view origin);
ClusterSweep cluster_sweep_from_json(const nlohmann::json& j, std::string_view origin);

struct ClusterRunInput {
  std::string label;
  ClusterRun run;
};
struct ClusterSweepInput {
  std::string label;
  ClusterSweep sweep;
};

// Everything `attain report` was given, by kind, each in the order given.
struct ReportFiles {
  std::vector<ReportInput> results;
  std::vector<ClusterRunInput> runs;
  std::vector<ClusterSweepInput> sweeps;
};
// Each file's label in a report: its name without directory and extension, or the path as
// given where two files share that name.
std::vector<std::string> report_labels(const std::vector<std::string>& files);
// Reads `file` and files it under `label` by its content. Throws InputError when it cannot be
// read, is not JSON, or is neither a results file nor a cluster file.
void read_report_file(const std::filesystem::path& file, const std::string& label,
                      ReportFiles& into);

// Run `r`'s kept training compute against its wall clock, rebuilt from its timeline: the job
// computes at interval / (interval + pause) of the wall clock (checkpoint pauses) outside the
// downtime after each interruption, and loses `lost_work_min` at each failure. Points are
// (wall hours, compute hours), from (0, 0) to the end of the run.
std::vector<std::pair<double, double>> cluster_progress(const ClusterRun& r);
double cluster_end_h(const ClusterRun& r);  // the x extent of the timeline

// Series point into `inputs`: the model moves but does not copy.
struct ReportModel {
  ReportModel() = default;
  ReportModel(ReportModel&&) = default;
  ReportModel& operator=(ReportModel&&) = default;
  ReportModel(const ReportModel&) = delete;
  ReportModel& operator=(const ReportModel&) = delete;

  std::vector<ReportInput> inputs;
  std::vector<ReportSeries> series;
  std::vector<ReportPair> pairs;          // every pair of series, a before b in series order
  std::vector<ClusterRunInput> runs;      // a timeline chart and tables each
  std::vector<ClusterSweepInput> sweeps;  // a goodput-vs-scale chart each
};

// Builds the series and pairs. `inputs` is moved into the model (results are referenced).
ReportModel build_report_model(std::vector<ReportInput> inputs);
ReportModel build_report_model(ReportFiles files);

struct ReportOptions {
  std::string title = "attain report";
  std::string generated;      // ISO timestamp shown in the header
  std::size_t furthest = 10;  // ops listed as furthest from attainable, per series
};

// The page: one string of HTML, no scripts, no external references.
std::string render_report_html(const ReportModel& m, const ReportOptions& opt = {});
// What the page shows, as JSON (series aggregates and pairs), for scripts.
nlohmann::json report_summary_json(const ReportModel& m);

// ---- compare (attain compare; src/report/compare.cpp) ---------------------------------

// Speed of backend `a` relative to backend `b` per op spec both ran ok (time_b / time_a).
struct ComparisonRow {
  std::string spec;
  double a_s = 0, b_s = 0, speed_a_over_b = 0, efficiency_a = 0, efficiency_b = 0;
};
struct ComparisonGroup {
  Aggregate speed;                       // of speed_a_over_b over the group's matched ops
  Aggregate efficiency_a, efficiency_b;  // the same ops' efficiencies (0s: no ceiling known)
};
struct Comparison {
  std::string a, b;                 // "file:backend"
  std::vector<ComparisonRow> rows;  // by spec
  Aggregate speed;                  // of speed_a_over_b
  std::size_t wins_a = 0, wins_b = 0;
  double efficiency_a_geomean = 0, efficiency_b_geomean = 0;
  // "dtype=bf16", "kind=gemm", "phase=decode" -> the same figures over that group
  std::map<std::string, ComparisonGroup> by;
  // Ops that ran ok on one side only, by spec (the other lacks them or did not run them ok).
  std::vector<std::string> only_a, only_b;
};
// `backend_a` / `backend_b` empty: the first backend of A's file, and the first of B's (or,
// with one file, its second). InputError when a backend is missing or no op ran ok in both.
Comparison compare_results(const ResultsFile& fa, const std::string& label_a, std::string backend_a,
                           const ResultsFile* fb, const std::string& label_b,
                           std::string backend_b);
nlohmann::json to_json(const Comparison& c);
std::string comparison_text(const Comparison& c);

// ---- import --------------------------------------------------------------------------

struct ImportOptions {
  std::string backend = "imported";  // backend name given to the rows
  std::string origin;                // file name used in messages
};

struct ImportIssue {
  std::size_t line = 0;  // 1-based line in the CSV
  std::string message;
};

struct ImportOutcome {
  ResultsFile file;
  std::vector<ImportIssue> skipped;   // rows that did not parse (not in `file`)
  std::vector<ImportIssue> warnings;  // rows kept, but suspicious (e.g. above the roofline)
  std::vector<std::string> ignored_columns;
};

// CSV with a header row, any column order: m, n, k, dtype and time_us or tflops; optional
// layer, model, phase, tokens, count, kind (gemm | grouped_gemm | batched_gemm), groups, batch.
// Efficiencies are against device_roofline(device, dtype). Throws InputError for an empty
// file, a missing required column, or when no row parses (listing the rows' problems).
ImportOutcome import_csv(std::string_view csv_text, const DeviceSpec& device,
                         const ImportOptions& opt);

// ---- projection ----------------------------------------------------------------------

// The efficiency a projection assumes for an op: one figure, or per op kind and phase from a
// measured results file (geomeans; falling back to kind, then phase, then all ops).
struct EfficiencyModel {
  double uniform = 1.0;
  std::map<std::string, double> by_group;  // "kind=gemm,phase=decode", "kind=gemm", "phase=decode"
  double all = 0;                          // > 0 when taken from a file
  std::string source;                      // "--efficiency 0.7", "geomeans of x.json:attain"
  // The efficiency for `op` and the group it came from.
  double for_op(const CatalogOp& op, std::string* basis = nullptr) const;
};

EfficiencyModel efficiency_uniform(double e);  // throws InputError unless 0 < e <= 1
// From the ok, measured (not projected) results of `backend` in `f` (empty: the first backend
// with ok results). Throws InputError when there are none or the file holds projections.
EfficiencyModel efficiency_like(const ResultsFile& f, const std::string& backend,
                                const std::string& label);

// Every op projected on `device`: time = flops / (attainable x efficiency). Ops whose dtype
// the device does not list are recorded as unsupported. Every result has projected = true and
// backend "projected:<device id>".
ResultsFile project_ops(const std::vector<CatalogOp>& ops, const DeviceSpec& device,
                        const EfficiencyModel& eff);

}  // namespace attain
