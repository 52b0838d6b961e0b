// `attain cluster` files as the report reads them: recognised by content, parsed with checks,
// and a run's kept-work curve rebuilt from its timeline.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "attain/files.hpp"
#include "attain/report.hpp"

namespace attain {

namespace {

using json = nlohmann::json;

constexpr const char* kRunSchema = "attain.cluster/1";
constexpr const char* kSweepSchema = "attain.cluster-sweep/1";

// A number at `key` of object `j`: `def` when absent or null (unless required); InputError
// when it is something else.
double number(const json& j, const char* key, std::string_view origin, bool required,
              double def = 0) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw InputError(fmt::format("{}: missing number '{}'", origin, key));
    return def;
  }
  if (!it->is_number()) throw InputError(fmt::format("{}: '{}' is not a number", origin, key));
  return it->get<double>();
}

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json& object(const json& j, const char* key, std::string_view origin) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object())
    throw InputError(fmt::format("{}: missing object '{}'", origin, key));
  return *it;
}

// {"mean", "ci95": [lo, hi], "n"} as attain cluster writes it (stat_json); `fallback` is the
// mean when the file has no stats object.
ClusterStat stat(const json* s, double fallback, std::string_view origin) {
  ClusterStat st;
  st.mean = st.lo = st.hi = fallback;
  st.n = 1;
  if (!s || !s->is_object()) return st;
  st.mean = number(*s, "mean", origin, false, fallback);
  st.n = static_cast<std::int64_t>(number(*s, "n", origin, false, 1));
  st.lo = st.hi = st.mean;
  if (auto ci = s->find("ci95"); ci != s->end() && ci->is_array() && ci->size() == 2 &&
                                 (*ci)[0].is_number() && (*ci)[1].is_number())
    st.lo = (*ci)[0].get<double>(), st.hi = (*ci)[1].get<double>();
  return st;
}

const json* find_object(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? &*it : nullptr;
}

// [lo, hi] at `key`, or (v, v).
// A fraction's interval (ETTR, goodput), kept within [0, 1]: a normal-approximation interval
// over few runs can reach past the ends.
std::pair<double, double> interval(const json& j, const char* key, double v) {
  auto it = j.find(key);
  if (it != j.end() && it->is_array() && it->size() == 2 && (*it)[0].is_number() &&
      (*it)[1].is_number())
    return {std::clamp((*it)[0].get<double>(), 0.0, 1.0),
            std::clamp((*it)[1].get<double>(), 0.0, 1.0)};
  return {v, v};
}

}  // namespace

ReportFileKind report_file_kind(const json& j, std::string_view origin) {
  if (!j.is_object())
    throw InputError(
        fmt::format("{}: not a results file nor an attain cluster file (the JSON is "
                    "not an object)",
                    origin));
  const std::string schema = text(j, "schema");
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

ClusterRun cluster_run_from_json(const json& j, std::string_view origin) {
  ClusterRun r;
  r.command = text(j, "command"), r.created = text(j, "created");
  if (const json* in = find_object(j, "inputs")) {
    r.model = text(*in, "model"), r.device = text(*in, "device");
    r.failures = text(*in, "failures");
    r.chips = static_cast<std::int64_t>(number(*in, "chips", origin, false));
    r.runs = static_cast<std::int64_t>(number(*in, "runs", origin, false));
    r.seed = static_cast<std::int64_t>(number(*in, "seed", origin, false));
    r.days = number(*in, "days", origin, false);
    r.token_budget = number(*in, "token_budget", origin, false);
  }
  const json* stats = find_object(j, "stats");
  auto from_stats = [&](const char* key, double fallback) {
    return stat(stats ? find_object(*stats, key) : nullptr, fallback, origin);
  };
  r.ettr = from_stats("ettr", number(j, "ettr", origin, true));
  r.goodput = from_stats("goodput", number(j, "goodput", origin, true));
  r.wall_h = from_stats("wall_h", number(j, "wall_days", origin, false) * 24);
  r.mfu = number(j, "mfu", origin, true);
  r.mtbf_h = number(j, "mtbf_h", origin, false, NAN);
  const json& in = object(j, "interruptions", origin);
  r.unexpected =
      stat(find_object(in, "unexpected_stats"), number(in, "unexpected", origin, true), origin);
  r.planned = stat(find_object(in, "planned_stats"), number(in, "planned", origin, true), origin);
  const json* by_stats = find_object(in, "by_cause_stats");
  for (const auto& [cause, v] : object(in, "by_cause", origin).items()) {
    if (!v.is_number())
      throw InputError(
          fmt::format("{}: interruptions.by_cause['{}'] is not a number", origin, cause));
    r.by_cause.push_back({cause, stat(by_stats ? find_object(*by_stats, cause.c_str()) : nullptr,
                                      v.get<double>(), origin)});
  }
  if (const json* pub = find_object(j, "published")) {
    if (const json* pc = find_object(*pub, "by_cause"))
      for (const auto& [cause, v] : pc->items())
        if (v.is_number()) r.published[cause] = v.get<double>();
    r.published_chips = static_cast<std::int64_t>(number(*pub, "chips", origin, false));
    r.published_days = number(*pub, "days", origin, false);
    r.published_planned = number(*pub, "planned", origin, false, -1);
  }
  if (const json* ck = find_object(j, "checkpoint")) {
    r.checkpoint_mode = text(*ck, "mode");
    r.interval_min = number(*ck, "interval_min", origin, false, NAN);
    r.daly_min = number(*ck, "daly_min", origin, false, NAN);
    r.young_min = number(*ck, "young_min", origin, false, NAN);
    r.pause_s = number(*ck, "pause_s", origin, false);
  }
  if (auto tl = j.find("timeline"); tl != j.end()) {
    if (!tl->is_array()) throw InputError(fmt::format("{}: 'timeline' is not an array", origin));
    r.has_timeline = true;
    for (std::size_t i = 0; i < tl->size(); ++i) {
      const json& e = (*tl)[i];
      const std::string where = fmt::format("{}: timeline[{}]", origin, i);
      if (!e.is_object()) throw InputError(where + ": not an object");
      ClusterEvent ev;
      ev.t_h = number(e, "t_h", where, true);
      const std::string kind = text(e, "kind");
      if (kind != "planned" && kind != "unexpected")
        throw InputError(fmt::format("{}: kind '{}' (known: planned, unexpected)", where, kind));
      ev.planned = kind == "planned";
      ev.cause = text(e, "cause");
      ev.lost_work_min = number(e, "lost_work_min", where, false);
      ev.down_min = number(e, "down_min", where, false);
      if (!(ev.t_h >= 0) || ev.lost_work_min < 0 || ev.down_min < 0)
        throw InputError(where + ": negative or non-finite time");
      auto sp = e.find("spare_used");
      ev.spare_used = sp != e.end() && sp->is_boolean() && sp->get<bool>();
      r.timeline.push_back(std::move(ev));
    }
    std::stable_sort(r.timeline.begin(), r.timeline.end(),
                     [](const ClusterEvent& a, const ClusterEvent& b) { return a.t_h < b.t_h; });
    if (const json* tr = find_object(j, "timeline_run")) {
      r.timeline_run = static_cast<std::int64_t>(number(*tr, "run", origin, false));
      r.run_wall_h = number(*tr, "wall_h", origin, false, -1);
      r.run_useful_h = number(*tr, "useful_h", origin, false, -1);
      r.run_ettr = number(*tr, "ettr", origin, false, -1);
      r.run_goodput = number(*tr, "goodput", origin, false, -1);
      if (tr->contains("unexpected") && tr->contains("planned"))
        r.run_events =
            number(*tr, "unexpected", origin, false) + number(*tr, "planned", origin, false);
    }
  }
  return r;
}

ClusterSweep cluster_sweep_from_json(const json& j, std::string_view origin) {
  ClusterSweep s;
  s.command = text(j, "command"), s.created = text(j, "created");
  if (const json* in = find_object(j, "inputs")) {
    s.model = text(*in, "model"), s.device = text(*in, "device");
    s.failures = text(*in, "failures");
    s.days = number(*in, "days", origin, false);
    s.runs = static_cast<std::int64_t>(number(*in, "runs", origin, false));
  }
  auto vs = j.find("variants");
  if (vs == j.end() || !vs->is_array() || vs->empty())
    throw InputError(fmt::format("{}: missing array 'variants'", origin));
  for (const auto& v : *vs) {
    const std::string name = v.is_object() ? text(v, "name") : std::string();
    if (name.empty()) throw InputError(fmt::format("{}: a variant without a name", origin));
    s.variants.push_back({name, text(v, "what")});
  }
  auto ps = j.find("points");
  if (ps == j.end() || !ps->is_array() || ps->empty())
    throw InputError(fmt::format("{}: missing array 'points'", origin));
  for (std::size_t i = 0; i < ps->size(); ++i) {
    const json& p = (*ps)[i];
    const std::string where = fmt::format("{}: points[{}]", origin, i);
    if (!p.is_object()) throw InputError(where + ": not an object");
    ClusterSweepPoint pt;
    pt.chips = static_cast<std::int64_t>(number(p, "chips", where, true));
    if (pt.chips <= 0) throw InputError(where + ": chips must be positive");
    pt.mtbf_h = number(p, "mtbf_h", where, false, NAN);
    pt.mfu = number(p, "mfu", where, false, NAN);
    if (const json* st = find_object(p, "step")) pt.step_s = number(*st, "step_s", where, false);
    const json& vr = object(p, "variants", where);
    for (const auto& [name, what] : s.variants) {
      const json* v = find_object(vr, name.c_str());
      if (!v) throw InputError(fmt::format("{}: no figures for variant '{}'", where, name));
      ClusterVariantPoint cv;
      cv.ettr = number(*v, "ettr", where, true);
      cv.goodput = number(*v, "goodput", where, true);
      std::tie(cv.ettr_lo, cv.ettr_hi) = interval(*v, "ettr_ci95", cv.ettr);
      std::tie(cv.goodput_lo, cv.goodput_hi) = interval(*v, "goodput_ci95", cv.goodput);
      cv.has_ci = cv.ettr_hi > cv.ettr_lo || cv.goodput_hi > cv.goodput_lo;
      cv.interval_min = number(*v, "interval_min", where, false, NAN);
      cv.unexpected = number(*v, "unexpected", where, false);
      cv.spare_nodes = static_cast<std::int64_t>(number(*v, "spare_nodes", where, false));
      pt.variants[name] = cv;
    }
    s.points.push_back(std::move(pt));
  }
  std::stable_sort(s.points.begin(), s.points.end(),
                   [](const auto& a, const auto& b) { return a.chips < b.chips; });
  return s;
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
