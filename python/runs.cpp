// attain's runs from Python: bench (the run of record, as `attain bench`), results files,
// the probe, the device table, the report and the cluster simulator. Files and results cross
// as JSON text in attain's own formats (the one writer and reader of each), parsed by Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "attain/bench.hpp"
#include "attain/bench_session.hpp"
#include "attain/cluster_job.hpp"
#include "attain/device.hpp"
#include "attain/files.hpp"
#include "attain/report.hpp"
#include "attain/results.hpp"
#include "bindings.hpp"
#include "device/probe.hpp"

namespace attain::python {

namespace {

// An op from its spec and provenance (an attain.Op's fields).
CatalogOp catalog_op(const py::dict& d) {
  CatalogOp c;
  c.op = Op::parse(d["spec"].cast<std::string>());
  auto str = [&](const char* k) { return d.contains(k) ? d[k].cast<std::string>() : ""; };
  auto num = [&](const char* k, std::int64_t dflt) {
    return d.contains(k) ? d[k].cast<std::int64_t>() : dflt;
  };
  c.prov.model = str("model"), c.prov.layer = str("layer"), c.prov.phase = str("phase");
  c.prov.tokens = num("tokens", 0), c.prov.context = num("context", 0);
  c.prov.count = num("count", 1);
  return c;
}

struct BenchArgs {
  std::vector<py::dict> ops;
  std::vector<std::string> backends;
  int threads = 0, rounds = 1;
  double max_seconds = 0, deadline_s = 0, sample_every_s = 60;
  bool hot = false, progress = true, resume = false, tune = true;
  std::uint64_t seed = 42;
  std::string out, recheck, schedule;
};

// (results JSON text with its summary, exit status, the note of an incomplete run)
py::tuple bench(const BenchArgs& a) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  BenchRequest req;
  for (const auto& d : a.ops) req.ops.push_back(catalog_op(d));
  if (req.ops.empty()) throw py::value_error("ops: give at least one");
  req.cfg.backends = a.backends;
  if (a.threads < 0 || a.threads > 4 * hw)
    throw py::value_error("threads: " + std::to_string(a.threads) + " (this machine has " +
                          std::to_string(hw) + " logical CPUs)");
  req.cfg.run.threads = a.threads > 0 ? a.threads : hw;
  req.cfg.run.schedule = a.schedule;
  req.cfg.timing.max_seconds = a.max_seconds > 0 ? a.max_seconds : req.cfg.timing.max_seconds;
  req.cfg.timing.hot = a.hot;
  req.cfg.seed = a.seed;
  req.cfg.rounds = a.rounds;
  req.cfg.progress = a.progress;
  req.out = a.out, req.resume = a.resume, req.deadline_s = a.deadline_s;
  if (a.recheck == "always")
    req.recheck = Recheck::always;
  else if (a.recheck == "never")
    req.recheck = Recheck::never;
  else if (a.recheck != "auto")
    throw py::value_error("recheck: 'auto', 'always' or 'never', not '" + a.recheck + "'");
  req.sample_every_s = a.sample_every_s;
  req.tune = a.tune;
  req.verbose = a.progress;
  req.created = now_iso();
  req.command = "python: attain.bench";
  req.validate();
  BenchOutcome outcome;
  {
    py::gil_scoped_release free;
    if (req.ops.size() == 1) require_memory_for(req.ops[0].op);
    const HostCeilings host = probe_host(false, a.progress);
    req.cfg.timing.llc_bytes = timing_llc_bytes(host);
    outcome = run_bench_session(req, host);
  }
  return py::make_tuple(to_json(outcome).dump(), outcome.exit_status(),
                        outcome.incomplete_note(a.out));
}

// The backends of a file's results in their first appearance's order.
std::vector<std::string> backends_of(const ResultsFile& f) {
  std::vector<std::string> order;
  for (const auto& r : f.results)
    if (std::find(order.begin(), order.end(), r.backend) == order.end()) order.push_back(r.backend);
  return order;
}

// A results file's JSON as attain writes it, its summary computed again.
std::string results_json(const ResultsFile& f) {
  nlohmann::json j = to_json(f);
  j["summary"] = to_json(summarize(f.results, backends_of(f)));
  return j.dump();
}

std::string load_results(const std::string& path) {
  py::gil_scoped_release free;
  return results_json(read_results(path));
}

void save_results(const std::string& json_text, const std::string& path) {
  py::gil_scoped_release free;
  write_results(path, results_from_json(parse_json_input(json_text, "results"), "results"));
}

// The results' text as `attain bench` prints it: "table", "summary", "headline" or "checks".
std::string results_text(const std::string& json_text, const std::string& what) {
  const ResultsFile f = results_from_json(parse_json_input(json_text, "results"), "results");
  const std::vector<std::string> order = backends_of(f);
  if (what == "table") return format_table(f.results, order);
  if (what == "summary") return format_summary(summarize(f.results, order), order);
  if (what == "headline") return format_headline(f, order);
  if (what == "checks") return format_checks(f.machine);
  throw py::value_error("what: table, summary, headline or checks, not '" + what + "'");
}

std::string probe(bool refresh, bool progress) {
  py::gil_scoped_release free;
  const HostCeilings c = probe_host(refresh, progress);
  return probe::probe_json(c, probe::probe_gpu_json(progress)).dump();
}

std::string devices() {
  py::gil_scoped_release free;
  return devices_json(load_devices()).dump();
}

std::string report(const std::vector<std::string>& files, const std::string& out,
                   const std::string& title, std::size_t furthest) {
  py::gil_scoped_release free;
  if (furthest == 0) throw InputError("furthest: 1 or more");
  const auto labels = report_labels(files);
  ReportFiles in;
  for (std::size_t i = 0; i < files.size(); ++i) read_report_file(files[i], labels[i], in);
  const ReportModel m = build_report_model(std::move(in));
  if (!out.empty()) {
    ReportOptions opt;
    opt.title = title, opt.generated = now_iso(), opt.furthest = furthest;
    write_file_atomic(out, render_report_html(m, opt));
  }
  return report_summary_json(m).dump();
}

// ---- the cluster simulator: keyword arguments onto a JobRequest, by the CLI's option names ----

using cluster::JobRequest;
using cluster::Topology;
using Field =
    std::variant<std::string JobRequest::*, double JobRequest::*, std::int64_t JobRequest::*,
                 int JobRequest::*, bool JobRequest::*, std::uint64_t JobRequest::*,
                 std::vector<std::int64_t> JobRequest::*, std::vector<std::string> JobRequest::*,
                 int Topology::*, double Topology::*>;

const std::map<std::string, Field>& job_fields() {
  static const std::map<std::string, Field> f = {
      {"device", &JobRequest::device},
      {"dtype", &JobRequest::dtype},
      {"model", &JobRequest::model},
      {"peak_tflops", &JobRequest::peak_tflops},
      {"mem_gbps", &JobRequest::mem_gbps},
      {"mem_gb", &JobRequest::mem_gb},
      {"scaleup_gbps", &JobRequest::scaleup_gbps},
      {"assume_peak", &JobRequest::assume_peaks},
      {"chips", &JobRequest::chips},
      {"seq", &JobRequest::seq},
      {"batch", &JobRequest::batch},
      {"tp", &JobRequest::tp},
      {"pp", &JobRequest::pp},
      {"ep", &JobRequest::ep},
      {"cp", &JobRequest::cp},
      {"micro_batch", &JobRequest::micro_batch},
      {"virtual_stages", &JobRequest::virtual_stages},
      {"efficiency", &JobRequest::efficiency},
      {"overlap", &JobRequest::overlap},
      {"overlap_slowdown", &JobRequest::overlap_slowdown},
      {"efficiency_from", &JobRequest::efficiency_from},
      {"efficiency_backend", &JobRequest::efficiency_backend},
      {"allreduce", &JobRequest::allreduce},
      {"recompute", &JobRequest::recompute},
      {"unfused_attention", &JobRequest::unfused_attention},
      {"scale_batch", &JobRequest::scale_batch},
      {"chips_per_node", &Topology::chips_per_node},
      {"intra_gbps", &Topology::intra_gbps},
      {"intra_latency_us", &Topology::intra_latency_us},
      {"inter_gbps", &Topology::inter_gbps},
      {"inter_latency_us", &Topology::inter_latency_us},
      {"days", &JobRequest::days},
      {"tokens", &JobRequest::tokens},
      {"failures", &JobRequest::failures},
      {"detect_min", &JobRequest::detect_min},
      {"restart_min", &JobRequest::restart_min},
      {"rewarm_min", &JobRequest::rewarm_min},
      {"checkpoint", &JobRequest::checkpoint},
      {"interval", &JobRequest::interval},
      {"spares", &JobRequest::spares},
      {"storage_gbps", &JobRequest::storage_gbps},
      {"ckpt_bytes_per_param", &JobRequest::ckpt_bytes_per_param},
      {"ckpt_overhead_s", &JobRequest::ckpt_overhead_s},
      {"host_copy_gbps", &JobRequest::host_copy_gbps},
      {"repair_hours", &JobRequest::repair_hours},
      {"replace_min", &JobRequest::replace_min},
      {"straggler_fraction", &JobRequest::straggler_fraction},
      {"straggler_slowdown", &JobRequest::straggler_slowdown},
      {"target_ettr", &JobRequest::target_ettr},
      {"target_goodput", &JobRequest::target_goodput},
      {"runs", &JobRequest::runs},
      {"threads", &JobRequest::threads},
      {"seed", &JobRequest::seed},
      {"timeline", &JobRequest::timeline},
      {"sweep", &JobRequest::sweep},
  };
  return f;
}

// The overrides whose defaults mean "the device's / the table's": given, each is a figure.
bool positive_override(const std::string& k) {
  return k == "peak_tflops" || k == "mem_gbps" || k == "scaleup_gbps";
}
bool nonnegative_override(const std::string& k) {
  return k == "mem_gb" || k == "detect_min" || k == "restart_min" || k == "rewarm_min";
}

void set_field(JobRequest& q, const std::string& key, py::handle value) {
  const auto& fields = job_fields();
  const auto it = fields.find(key);
  if (it == fields.end()) {
    std::string names;
    for (const auto& [k, f] : fields) names += (names.empty() ? "" : ", ") + k;
    throw py::type_error("simulate() got an unexpected keyword argument '" + key + "' (it takes " +
                         names + ")");
  }
  try {
    std::visit(
        [&](auto member) {
          using M = decltype(member);
          if constexpr (std::is_same_v<M, int Topology::*> || std::is_same_v<M, double Topology::*>)
            q.topo.*member = value.cast<std::remove_reference_t<decltype(q.topo.*member)>>();
          else
            q.*member = value.cast<std::remove_reference_t<decltype(q.*member)>>();
        },
        it->second);
  } catch (const py::cast_error&) {
    throw py::type_error(key + ": " + std::string(py::str(py::repr(value))) +
                         " is not of the type this field takes");
  }
  if (positive_override(key) || nonnegative_override(key)) {
    const double v = value.cast<double>();
    const bool zero_ok = nonnegative_override(key);
    if (!std::isfinite(v) || (zero_ok ? v < 0 : v <= 0))
      throw py::value_error(key + ": " + std::string(py::str(value)) + " must be " +
                            (zero_ok ? "0 or more" : "positive") + " and finite");
  }
}

// (the run's or the sweep's JSON text, its text as `attain cluster` prints it)
py::tuple cluster_simulate(const py::dict& kwargs) {
  JobRequest q;
  for (const auto& [k, v] : kwargs) set_field(q, k.cast<std::string>(), v);
  if (kwargs.contains("tokens") && !kwargs.contains("days")) q.days = 0;
  q.created = now_iso();
  q.command = "python: attain.cluster.simulate";
  std::string json, text;
  {
    py::gil_scoped_release free;
    q.validate();
    if (q.sweep.empty()) {
      const auto out = cluster::simulate_job(q);
      json = cluster::to_json(out).dump(), text = cluster::job_text(out);
    } else {
      const auto out = cluster::sweep_jobs(q);
      json = cluster::to_json(out).dump(), text = cluster::sweep_text(out);
    }
  }
  return py::make_tuple(json, text);
}

}  // namespace

void bind_runs(py::module_& m) {
  m.def(
      "bench",
      [](std::vector<py::dict> ops, std::vector<std::string> backends, int threads, int rounds,
         double max_seconds, double deadline_s, double sample_every_s, bool hot, bool progress,
         bool resume, bool tune, std::uint64_t seed, std::string out, std::string recheck,
         std::string schedule) {
        BenchArgs a{std::move(ops),
                    std::move(backends),
                    threads,
                    rounds,
                    max_seconds,
                    deadline_s,
                    sample_every_s,
                    hot,
                    progress,
                    resume,
                    tune,
                    seed,
                    std::move(out),
                    std::move(recheck),
                    std::move(schedule)};
        return bench(a);
      },
      py::arg("ops"), py::arg("backends"), py::arg("threads"), py::arg("rounds"),
      py::arg("max_seconds"), py::arg("deadline_s"), py::arg("sample_every_s"), py::arg("hot"),
      py::arg("progress"), py::arg("resume"), py::arg("tune"), py::arg("seed"), py::arg("out"),
      py::arg("recheck"), py::arg("schedule"));
  m.def(
      "parse_duration", [](const std::string& s) { return parse_duration(s); }, py::arg("text"));
  m.def("load_results", &load_results, py::arg("path"));
  m.def("save_results", &save_results, py::arg("json_text"), py::arg("path"));
  m.def("results_text", &results_text, py::arg("json_text"), py::arg("what"));
  m.def("probe", &probe, py::arg("refresh"), py::arg("progress"));
  m.def("devices", &devices);
  m.def("report", &report, py::arg("files"), py::arg("out"), py::arg("title"), py::arg("furthest"));
  m.def("cluster_simulate", &cluster_simulate, py::arg("kwargs"));
}

}  // namespace attain::python
