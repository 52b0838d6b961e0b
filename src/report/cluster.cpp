// The files `attain report` reads, recognised by content (results, or `attain cluster` files,
// whose format src/cluster/job_file.cpp defines), and a run's kept-work curve rebuilt from its
// timeline.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "attain/cluster_job.hpp"
#include "attain/files.hpp"
#include "attain/report.hpp"

namespace attain {

namespace {

using json = nlohmann::json;

using cluster::kRunSchema;
using cluster::kSweepSchema;

}  // namespace

ReportFileKind report_file_kind(const json& j, std::string_view origin) {
  if (!j.is_object())
    throw InputError(
        fmt::format("{}: not a results file nor an attain cluster file (the JSON is "
                    "not an object)",
                    origin));
  const auto sit = j.find("schema");
  const std::string schema = sit != j.end() && sit->is_string() ? sit->get<std::string>() : "";
  if (schema == kResultsSchema) return ReportFileKind::results;
  if (schema == kRunSchema) return ReportFileKind::cluster_run;
  if (schema == kSweepSchema) return ReportFileKind::cluster_sweep;
  const std::string known = fmt::format("{}, {} or {}", kResultsSchema, kRunSchema, kSweepSchema);
  if (!schema.empty())
    throw InputError(
        fmt::format("{}: schema '{}' is not one attain report reads ({})", origin, schema, known));
  // No schema: only a document that has one kind's fields and none of the others'.
  auto has = [&](const char* k, bool (json::*is)() const noexcept) {
    auto it = j.find(k);
    return it != j.end() && ((*it).*is)();
  };
  const bool run = has("interruptions", &json::is_object) && has("step", &json::is_object) &&
                   has("ettr", &json::is_number);
  const bool sweep = has("points", &json::is_array) && has("variants", &json::is_array);
  const bool results = has("results", &json::is_array);
  if (run + sweep + results == 1) {
    if (run) return ReportFileKind::cluster_run;
    if (sweep) return ReportFileKind::cluster_sweep;
    return ReportFileKind::results;  // results_from_json says what is missing
  }
  throw InputError(fmt::format(
      "{}: neither a results file (attain bench, import or project) nor an attain cluster file: "
      "no 'schema' (one of {}) and {}",
      origin, known,
      run + sweep + results == 0 ? "none of their fields" : "the fields of more than one kind"));
}

std::vector<std::string> report_labels(const std::vector<std::string>& files) {
  std::vector<std::string> stems;
  std::set<std::string> seen, dup;
  for (const auto& f : files) {
    stems.push_back(std::filesystem::path(f).stem().string());
    if (!seen.insert(stems.back()).second) dup.insert(stems.back());
  }
  for (std::size_t i = 0; i < files.size(); ++i)
    if (dup.count(stems[i])) stems[i] = files[i];
  return stems;
}

void read_report_file(const std::filesystem::path& file, const std::string& label,
                      ReportFiles& into) {
  const std::string text = read_input_file(file, kMaxResultsBytes, "report input");
  const std::string origin = file.string();
  const json j = parse_json_input(text, origin);
  try {
    switch (report_file_kind(j, origin)) {
      case ReportFileKind::results:
        into.results.push_back({label, results_from_json(j, origin)});
        break;
      case ReportFileKind::cluster_run:
        into.runs.push_back({label, cluster_run_from_json(j, origin)});
        break;
      case ReportFileKind::cluster_sweep:
        into.sweeps.push_back({label, cluster_sweep_from_json(j, origin)});
        break;
    }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: malformed ({})", origin, e.what()));
  }
}

double cluster_end_h(const ClusterRun& r) {
  double end = r.run_wall_h > 0 ? r.run_wall_h : r.days > 0 ? r.days * 24 : 0;
  if (end <= 0) {
    end = r.wall_h.mean;
    for (const auto& e : r.timeline) end = std::max(end, e.t_h + e.down_min / 60);
  }
  return end > 0 ? end : 1;
}

std::vector<std::pair<double, double>> cluster_progress(const ClusterRun& r) {
  const double end = cluster_end_h(r);
  const double tau = r.interval_min * 60;
  const double rate = std::isfinite(tau) && tau > 0 ? tau / (tau + r.pause_s) : 1.0;
  std::vector<std::pair<double, double>> pts{{0, 0}};
  double t = 0, y = 0, down_until = 0;  // the job runs from down_until on
  auto advance = [&](double to) {
    to = std::min(to, end);
    if (to <= t) return;
    const double run_from = std::clamp(down_until, t, to);
    if (run_from > t) pts.push_back({run_from, y});  // flat while down
    y += rate * (to - run_from);
    t = to;
    pts.push_back({t, y});
  };
  for (const auto& e : r.timeline) {
    if (e.t_h >= end) break;
    advance(e.t_h);
    if (e.lost_work_min > 0) {
      y = std::max(0.0, y - e.lost_work_min / 60);
      pts.push_back({t, y});
    }
    down_until = std::max(down_until, e.t_h + e.down_min / 60);
  }
  advance(end);
  return pts;
}

}  // namespace attain
