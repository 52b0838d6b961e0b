// Reports: a self-contained HTML page (inline SVG + CSS) from results files; results files
// from timings measured elsewhere (CSV import); roofline projections to listed devices.
#pragma once

#include <cstddef>
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
  Aggregate efficiency;                     // over `ok`
  double eff_min = 0, eff_max = 0;          // whiskers of the box plot
  std::map<std::string, Aggregate> eff_by;  // "phase=decode", "kind=gemm", ... (summarize())
};

// Speed of series `a` relative to series `b` over the op specs both ran: time_b / time_a per
// op (< 1: a is slower; 0.43 = "a runs at 43% of b's speed").
struct ReportPair {
  std::size_t a = 0, b = 0;
  Aggregate ratio;
  std::size_t wins_a = 0, wins_b = 0, ties = 0;
  bool projected = false;  // either side is a projection
};

// Series point into `inputs`: the model moves but does not copy.
struct ReportModel {
  ReportModel() = default;
  ReportModel(ReportModel&&) = default;
  ReportModel& operator=(ReportModel&&) = default;
  ReportModel(const ReportModel&) = delete;
  ReportModel& operator=(const ReportModel&) = delete;

  std::vector<ReportInput> inputs;
  std::vector<ReportSeries> series;
  std::vector<ReportPair> pairs;  // every pair of series, a before b in series order
};

// Builds the series and pairs. `inputs` is moved into the model (results are referenced).
ReportModel build_report_model(std::vector<ReportInput> inputs);

struct ReportOptions {
  std::string title = "attain report";
  std::string generated;      // ISO timestamp shown in the header
  std::size_t furthest = 10;  // ops listed as furthest from attainable, per series
};

// The page: one string of HTML, no scripts, no external references.
std::string render_report_html(const ReportModel& m, const ReportOptions& opt = {});
// What the page shows, as JSON (series aggregates and pairs), for scripts.
nlohmann::json report_summary_json(const ReportModel& m);

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
