// The report page: header, headline figures, charts and tables in one self-contained HTML file.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/svg.hpp"

namespace attain {

using report::duration;
using report::esc;
using report::pct;
using report::throughput;

namespace {

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1f2937;
margin:0 auto;max-width:1200px;padding:16px 24px 48px;background:#ffffff}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #e5e7eb;
padding-bottom:4px}h3{font-size:16px;margin:20px 0 6px}
p.note,span.note{color:#6b7280;font-size:12.5px}
p.warn{color:#b45309}
table{border-collapse:collapse;margin:8px 0 12px;font-size:13px}
th,td{border:1px solid #e5e7eb;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}div.scroll{overflow-x:auto;max-width:100%}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f3f4f6;padding:1px 3px;
border-radius:3px}
.headline{font-size:16px;margin:4px 0}.headline b{font-size:18px}
.banner{background:#fef3c7;border:2px solid #d97706;padding:8px 12px;margin:12px 0;font-weight:600}
.projtag{color:#b45309;fill:#b45309;font-weight:700}
td.proj,span.proj{color:#b45309;font-style:italic}
.legend span.sw{display:inline-block;width:11px;height:11px;margin:0 4px 0 12px;border-radius:2px;
vertical-align:-1px}
.bar{display:inline-block;height:9px;background:#2563eb;opacity:.55;margin-right:6px;vertical-align:0}
svg.chart{display:block;margin:6px 0;background:#ffffff}
svg .grid{stroke:#e5e7eb;stroke-width:1}svg .grid.one{stroke:#6b7280;stroke-width:1.2}
svg .frame{fill:none;stroke:#9ca3af}
svg .tick{font-size:11px;fill:#4b5563}svg .axis{font-size:12.5px;fill:#111827}
svg .val{font-size:12px;fill:#111827;font-weight:600}
svg .ceiling{fill:none;stroke:#111827;stroke-width:2.2}
svg .ceiling.alt{stroke:#6b7280;stroke-width:1.4;stroke-dasharray:6 4}
svg .ridge{stroke:#9ca3af;stroke-dasharray:2 3}
svg .clabel{font-size:11.5px;fill:#111827}svg .clabel.alt{fill:#4b5563}
svg .pt{fill-opacity:.6;stroke-width:1}svg .pt.proj{stroke-dasharray:2 1.5;stroke-width:1.3}
svg .dot{fill-opacity:.35}svg .whisker{stroke:#374151;stroke-width:1.3}
svg .median{stroke:#111827;stroke-width:2.2}
svg .ctitle{font-size:14px;font-weight:600;fill:#111827}svg .sep{stroke:#6b7280;stroke-width:1}
svg .progress{fill:none;stroke:#2563eb;stroke-width:2}
svg .ideal{fill:none;stroke:#6b7280;stroke-width:1.4;stroke-dasharray:6 4}
svg .ev{fill-opacity:.8}svg .band{fill-opacity:.13;stroke:none}
svg .gline{fill:none;stroke-width:2}svg .eline{fill:none;stroke-width:1.5;stroke-dasharray:6 4}
svg .mfu{fill:none;stroke:#111827;stroke-width:1.4;stroke-dasharray:2 3}
)";

std::string fmt_count(std::size_t n, const char* what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

std::string machine_line(const ResultsFile& f) {
  const MachineInfo& mi = f.machine;
  std::string s = mi.device.empty() || mi.device == "host" ? "this host" : "device " + mi.device;
  if (!mi.cpu_model.empty()) s += ", " + mi.cpu_model;
  if (mi.threads > 0) s += fmt::format(", {} threads", mi.threads);
  return s;
}

std::string ceilings_line(const ResultsFile& f) {
  const Roofline& r = f.machine.roofline;
  if (!(r.peak_tflops > 0)) return "no ceilings recorded";
  std::string s = fmt::format("compute {}, memory {:.1f} GB/s ({})", throughput(r.peak_tflops),
                              r.bw_gbps, r.source);
  // The ceilings measured again while the ops ran (attain bench --recheck).
  for (const auto& c : f.machine.checks)
    s += fmt::format("; at the {} of the run: compute {}, memory {:.1f} GB/s", c.when,
                     throughput(c.fma_gflops / 1e3), c.read_gbps);
  return s;
}

// Ops grouped by model and phase, per series.
struct Cell {
  std::vector<double> eff;
  double pass_s = 0;  // sum of median x count: time of these ops in one forward pass
};

std::string model_phase_table(const ReportModel& m) {
  std::map<std::pair<std::string, std::string>, std::map<std::size_t, Cell>> grid;
  for (std::size_t i = 0; i < m.series.size(); ++i)
    for (const Result* r : m.series[i].ok) {
      Cell& c = grid[{r->op.prov.model.empty() ? "(no model)" : r->op.prov.model,
                      r->op.prov.phase.empty() ? "-" : r->op.prov.phase}][i];
      c.eff.push_back(r->efficiency);
      c.pass_s += r->median_s * static_cast<double>(std::max<std::int64_t>(1, r->op.prov.count));
    }
  std::string s =
      "<table class=\"modelphase\"><thead><tr><th rowspan=\"2\">model</th><th "
      "rowspan=\"2\">phase</th>";
  for (const auto& se : m.series)
    s += fmt::format("<th colspan=\"3\">{}{}</th>", esc(se.name),
                     se.projected ? " <span class=\"projtag\">PROJECTED</span>" : "");
  s += "</tr><tr>";
  for (std::size_t i = 0; i < m.series.size(); ++i)
    s += "<th>ops</th><th>geomean efficiency</th><th>time per pass</th>";
  s += "</tr></thead><tbody>";
  for (const auto& [key, cells] : grid) {
    s += fmt::format("<tr><td>{}</td><td>{}</td>", esc(key.first), esc(key.second));
    for (std::size_t i = 0; i < m.series.size(); ++i) {
      auto it = cells.find(i);
      if (it == cells.end()) {
        s += "<td class=\"num\">-</td><td class=\"num\">-</td><td class=\"num\">-</td>";
        continue;
      }
      const Aggregate a = aggregate(it->second.eff);
      const char* cls = m.series[i].projected ? "num proj" : "num";
      const char* tag = m.series[i].projected ? " (projected)" : "";
      s += fmt::format(
          "<td class=\"num\">{}</td><td class=\"{}\">{}{}</td><td class=\"{}\">{}{}</td>",
          it->second.eff.size(), cls, pct(a.geomean), tag, cls, duration(it->second.pass_s), tag);
    }
    s += "</tr>";
  }
  s += "</tbody></table>";
  return s;
}

std::string groups_table(const ReportModel& m) {
  std::vector<std::string> groups;  // phases, then kinds, then dtypes
  for (const char* prefix : {"phase=", "kind=", "dtype="})
    for (const auto& se : m.series)
      for (const auto& [g, a] : se.eff_by)
        if (g.rfind(prefix, 0) == 0 && std::find(groups.begin(), groups.end(), g) == groups.end())
          groups.push_back(g);
  std::string s = "<table class=\"groups\"><thead><tr><th>series</th><th>all ops</th>";
  for (const auto& g : groups) s += fmt::format("<th>{}</th>", esc(g));
  s += "</tr></thead><tbody>";
  for (const auto& se : m.series) {
    const char* tag = se.projected ? " proj." : "";
    s += fmt::format("<tr><td>{}{}</td>", esc(se.name),
                     se.projected ? " <span class=\"projtag\">PROJECTED</span>" : "");
    auto cell = [&](const Aggregate* a) {
      if (!a || a->count == 0) return std::string("<td class=\"num\">-</td>");
      const double w = std::clamp(a->geomean, 0.0, 1.0) * 40;
      return fmt::format(
          "<td class=\"num{}\"><span class=\"bar\" style=\"width:{:.0f}px\"></span>{}{} "
          "<span class=\"note\">n={}</span></td>",
          se.projected ? " proj" : "", w, pct(a->geomean), tag, a->count);
    };
    s += cell(&se.efficiency);
    for (const auto& g : groups) {
      auto it = se.eff_by.find(g);
      s += cell(it == se.eff_by.end() ? nullptr : &it->second);
    }
    s += "</tr>";
  }
  s += "</tbody></table>";
  return s;
}

std::string speed_table(const ReportModel& m) {
  std::string s =
      "<table class=\"speed\"><thead><tr><th>A</th><th>B</th><th>ops in common</th><th>A's speed / "
      "B's "
      "(geomean)</th><th>median</th><th>q1</th><th>q3</th><th>A faster</th><th>B "
      "faster</th><th>equal</th>"
      "</tr></thead><tbody>";
  for (const auto& p : m.pairs) {
    const Aggregate& a = p.ratio;
    s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td>", esc(m.series[p.a].name),
                     esc(m.series[p.b].name), a.count);
    if (a.count == 0) {
      s += "<td colspan=\"7\">no op ran in both</td></tr>";
      continue;
    }
    const char* cls = p.projected ? "num proj" : "num";
    const char* tag = p.projected ? " (projected)" : "";
    s += fmt::format(
        "<td class=\"{0}\"><b>{1}</b>{5}</td><td class=\"{0}\">{2}</td><td "
        "class=\"{0}\">{3}</td><td "
        "class=\"{0}\">{4}</td>",
        cls, pct(a.geomean), pct(a.median), pct(a.q1), pct(a.q3), tag);
    s += fmt::format(
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        p.wins_a, p.wins_b, p.ties);
  }
  s += "</tbody></table>";
  return s;
}

std::string reproduce(const ReportModel& m, const ReportSeries& se, const Result& r) {
  const MachineInfo& mi = m.inputs[se.file].file.machine;
  std::string cmd = fmt::format("attain bench --op {}", r.op.op.spec());
  // Only this host's measurements name a backend and thread count attain can run again.
  if (mi.device.empty() || mi.device == "host") {
    cmd += " --backend " + r.backend;
    if (mi.threads > 0) cmd += fmt::format(" --threads {}", mi.threads);
  }
  return cmd;
}

std::string furthest_tables(const ReportModel& m, std::size_t limit) {
  std::string s;
  for (const auto& se : m.series) {
    s += fmt::format("<h3>{}</h3>", esc(se.name));
    if (se.projected) {
      s += "<p class=\"note\">PROJECTED series: its efficiencies are assumed, not measured; "
           "nothing to list.</p>";
      continue;
    }
    std::vector<const Result*> v(se.ok.begin(), se.ok.end());
    std::stable_sort(v.begin(), v.end(), [](const Result* a, const Result* b) {
      return a->efficiency < b->efficiency;
    });
    if (v.size() > limit) v.resize(limit);
    if (v.empty()) {
      s += "<p class=\"note\">no op ran successfully.</p>";
      continue;
    }
    s += "<table class=\"furthest\"><thead><tr><th>#</th><th>op</th><th>where</th><th>achieved</th>"
         "<th>attainable</th><th>efficiency</th><th>bound</th><th>time</th><th>reproduce</th></"
         "tr></thead><tbody>";
    const Roofline& roof = m.inputs[se.file].file.machine.roofline;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const Result& r = *v[i];
      std::string where = r.op.prov.model;
      if (!r.op.prov.layer.empty()) where += (where.empty() ? "" : " ") + r.op.prov.layer;
      if (!r.op.prov.phase.empty()) where += (where.empty() ? "" : ", ") + r.op.prov.phase;
      const double ai = r.bytes > 0 ? r.flops / r.bytes : 0;
      const bool mem = roof.bw_gbps > 0 && ai * roof.bw_gbps / 1e3 < r.attainable_tflops * 1.001;
      s += fmt::format(
          "<tr><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td><td "
          "class=\"num\">{}</td><td "
          "class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td "
          "class=\"num\">{}</td><td><code>{}</code>"
          "</td></tr>",
          i + 1, esc(r.op.op.spec()), esc(where.empty() ? "-" : where), throughput(r.tflops),
          throughput(r.attainable_tflops), pct(r.efficiency),
          roof.bw_gbps > 0 ? (mem ? "memory" : "compute") : "-", duration(r.median_s),
          esc(reproduce(m, se, r)));
    }
    s += "</tbody></table>";
  }
  return s;
}

std::string status_section(const ReportModel& m) {
  std::string s =
      "<table "
      "class=\"status\"><thead><tr><th>series</th><th>ok</th><th>unsupported</th><th>wrong</th>"
      "<th>error</th></tr></thead><tbody>";
  std::vector<std::pair<const ReportSeries*, const Result*>> bad;
  for (const auto& se : m.series) {
    auto n = [&](const char* st) {
      auto it = se.status_counts.find(st);
      return it == se.status_counts.end() ? std::size_t{0} : it->second;
    };
    s += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td "
        "class=\"num\">{}</td></tr>",
        esc(se.name), n("ok"), n("unsupported"), n("wrong"), n("error"));
    for (const auto& r : m.inputs[se.file].file.results)
      if (r.backend == se.backend && (r.status == "wrong" || r.status == "error"))
        bad.push_back({&se, &r});
  }
  s += "</tbody></table>";
  if (!bad.empty()) {
    s += "<p>Wrong answers are reported as wrong and never as a speed:</p><table "
         "class=\"bad\"><thead><tr><th>series"
         "</th><th>status</th><th>op</th><th>reason</th></tr></thead><tbody>";
    const std::size_t shown = std::min<std::size_t>(bad.size(), 40);
    for (std::size_t i = 0; i < shown; ++i)
      s += fmt::format("<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
                       esc(bad[i].first->name), esc(bad[i].second->status),
                       esc(bad[i].second->op.op.spec()), esc(bad[i].second->reason));
    s += "</tbody></table>";
    if (bad.size() > shown)
      s += fmt::format("<p class=\"note\">... and {} more.</p>", bad.size() - shown);
  }
  return s;
}

std::string kind_legend(const ReportModel& m, std::size_t file) {
  std::set<OpKind> kinds;
  std::vector<std::pair<std::string, bool>> backends;  // name, projected
  for (const auto& se : m.series)
    if (se.file == file) {
      backends.push_back({se.backend, se.projected});
      for (const Result* r : se.ok) kinds.insert(r->op.op.kind);
    }
  std::string s = "<div class=\"legend\">op kind:";
  for (OpKind k : kinds)
    s += fmt::format("<span class=\"sw\" style=\"background:{}\"></span>{}", report::kind_color(k),
                     kind_name(k));
  s += "<br/>";  // html.parser and browsers read <br/> as a void element
  s += "marker per backend:";
  static const char* const shapes[] = {"circle", "square", "triangle", "diamond"};
  for (std::size_t i = 0; i < backends.size(); ++i)
    s += fmt::format(" <b>{}</b> = {}{}{}", esc(backends[i].first), shapes[i % 4],
                     backends[i].second ? " (hollow, PROJECTED)" : "",
                     i + 1 < backends.size() ? "," : "");
  s += "</div>";
  return s;
}

std::string ci_pct(const ClusterStat& st) {
  return st.has_ci() ? fmt::format("{} <span class=\"note\">[{} .. {}]</span>", pct(st.mean),
                                   pct(st.lo), pct(st.hi))
                     : pct(st.mean);
}
// Counts cannot be negative: an interval of few runs is cut at zero.
std::string ci_count(const ClusterStat& st) {
  return st.has_ci() ? fmt::format("{:.1f} <span class=\"note\">[{:.1f} .. {:.1f}]</span>", st.mean,
                                   std::max(0.0, st.lo), st.hi)
                     : fmt::format("{:.0f}", st.mean);
}
std::string minutes(double m) {
  return std::isfinite(m) && m > 0 ? fmt::format("{:.1f} min", m) : "-";
}
std::string data_line(const std::string& command) {
  return command.empty() ? " The file does not record the command that produced it."
                         : " Data: <code>" + esc(command) + "</code>.";
}

std::string cluster_inputs(const ReportModel& m) {
  std::string s =
      "<table class=\"cluster-inputs\"><thead><tr><th>file</th><th>kind</th><th>model</th>"
      "<th>device</th><th>chips</th><th>simulated</th><th>runs</th><th>created</th>"
      "<th>command</th></tr></thead><tbody>";
  for (const auto& in : m.runs) {
    const ClusterRun& r = in.run;
    s += fmt::format(
        "<tr><td>{}</td><td>one job</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
        esc(in.label), esc(r.model), esc(r.device),
        report::group_digits(static_cast<double>(r.chips)),
        r.days > 0 ? fmt::format("{:g} days", r.days)
                   : fmt::format("until {:.3g} tokens", r.token_budget),
        r.runs, esc(r.created), esc(r.command));
  }
  for (const auto& in : m.sweeps) {
    const ClusterSweep& sw = in.sweep;
    const std::string chips =
        sw.points.size() == 1
            ? report::group_digits(static_cast<double>(sw.points[0].chips))
            : fmt::format("{} .. {} ({} points)",
                          report::group_digits(static_cast<double>(sw.points.front().chips)),
                          report::group_digits(static_cast<double>(sw.points.back().chips)),
                          sw.points.size());
    s += fmt::format(
        "<tr><td>{}</td><td>sweep</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
        esc(in.label), esc(sw.model), esc(sw.device), chips,
        sw.days > 0 ? fmt::format("{:g} days per point", sw.days) : "-", sw.runs, esc(sw.created),
        esc(sw.command));
  }
  return s + "</tbody></table>";
}

std::string cluster_run_section(const ClusterRunInput& in) {
  const ClusterRun& r = in.run;
  std::string h = fmt::format(
      "<h3>{} &#8212; {}{}</h3>", esc(in.label), esc(r.model.empty() ? "training job" : r.model),
      r.chips > 0 ? fmt::format(" on {} x {}", report::group_digits(static_cast<double>(r.chips)),
                                esc(r.device))
                  : std::string());
  if (r.has_timeline) {
    h += "<div class=\"scroll\">" + report::timeline_svg(r) + "</div>";
    const double tau = r.interval_min * 60;
    const double rate = std::isfinite(tau) && tau > 0 ? tau / (tau + r.pause_s) : 1.0;
    const auto pts = cluster_progress(r);
    h += fmt::format(
        "<p class=\"note\">The timeline of run {} of {} (a cluster file holds one run's timeline; "
        "the tables give means over all runs with 95% confidence intervals of the mean). x = wall "
        "clock in days. Blue line = training compute kept so far, rebuilt from the timeline: the "
        "job computes {} of the time it is up (checkpoints: {}, every {}, a {:.1f} s pause each) "
        "and "
        "falls back by the lost work at each failure; dashed = the same job without interruptions. "
        "One marker per interruption ({} in all): circles unexpected, coloured by cause; squares "
        "planned. The lanes below show the downtime (detection, waiting for a node, restart, "
        "load, re-warm) and the work lost, each at least one pixel wide. Single checkpoints are "
        "not drawn: the file records the interval, not each checkpoint.",
        r.timeline_run, r.runs, pct(rate), esc(r.checkpoint_mode), minutes(r.interval_min),
        r.pause_s, r.timeline.size());
    if (r.run_useful_h > 0)
      h += fmt::format(
          " The rebuilt line ends at {:.2f} days of kept compute; the simulation counted {:.2f} "
          "for this run.",
          pts.back().second / 24, r.run_useful_h / 24);
    if (r.run_events > static_cast<double>(r.timeline.size()))
      h += fmt::format(" The timeline stops after {} of the run's {:.0f} interruptions.",
                       r.timeline.size(), r.run_events);
    h += data_line(r.command) + "</p>";
  } else {
    h += "<p class=\"note\">This file has no timeline (written with <code>--no-timeline</code>): "
         "figures only." +
         data_line(r.command) + "</p>";
  }
  // Interruptions by cause.
  std::map<std::string, std::size_t> in_run;
  std::size_t planned_run = 0;
  for (const auto& e : r.timeline) e.planned ? ++planned_run : ++in_run[e.cause];
  const bool pub = !r.published.empty();
  h += fmt::format(
      "<table class=\"causes\"><thead><tr><th>interruptions by cause</th>{}<th>mean over {} "
      "run{}</th>{}</tr></thead><tbody>",
      r.has_timeline ? fmt::format("<th>run {}</th>", r.timeline_run) : "", r.runs,
      r.runs == 1 ? "" : "s",
      pub ? fmt::format("<th>published ({} chips, {:g} days)</th>",
                        report::group_digits(static_cast<double>(r.published_chips)),
                        r.published_days)
          : "");
  auto row = [&](const std::string& name, const std::string& run, const ClusterStat& st,
                 const std::string& published, bool bold) {
    h += fmt::format("<tr><td>{}{}{}</td>{}<td class=\"num\">{}</td>{}</tr>", bold ? "<b>" : "",
                     esc(name), bold ? "</b>" : "",
                     r.has_timeline ? "<td class=\"num\">" + run + "</td>" : "", ci_count(st),
                     pub ? "<td class=\"num\">" + published + "</td>" : "");
  };
  for (const auto& [cause, st] : r.by_cause) {
    auto it = in_run.find(cause);
    auto p = r.published.find(cause);
    if (st.mean == 0 && it == in_run.end() && p == r.published.end()) continue;
    row(cause, std::to_string(it == in_run.end() ? 0 : it->second), st,
        p == r.published.end() ? "-" : fmt::format("{:g}", p->second), false);
  }
  double pub_unexpected = 0;
  for (const auto& [c, v] : r.published) pub_unexpected += v;
  row("unexpected", std::to_string(r.timeline.size() - planned_run), r.unexpected,
      fmt::format("{:g}", pub_unexpected), true);
  row("planned", std::to_string(planned_run), r.planned,
      r.published_planned >= 0 ? fmt::format("{:g}", r.published_planned) : "-", true);
  h += "</tbody></table>";
  if (pub && (r.published_chips != r.chips || r.published_days != r.days))
    h += "<p class=\"note\">The published record is of a different job size or length than this "
         "simulation: compare its counts in proportion, not one to one.</p>";
  // The run's figures.
  auto run_val = [&](double v) {
    return r.has_timeline && v >= 0
               ? fmt::format(" <span class=\"note\">(run {}: {})</span>", r.timeline_run, pct(v))
               : std::string();
  };
  h += "<table class=\"figures\"><tbody>";
  h += fmt::format(
      "<tr><th>ETTR</th><td class=\"num\">{}{}</td><td>useful training time / wall clock</td></tr>",
      ci_pct(r.ettr), run_val(r.run_ettr));
  h += fmt::format(
      "<tr><th>goodput</th><td class=\"num\">{}{}</td><td>kept model FLOPs / (chips x peak x "
      "wall)</td></tr>",
      ci_pct(r.goodput), run_val(r.run_goodput));
  h += fmt::format(
      "<tr><th>MFU</th><td class=\"num\">{}</td><td>of a healthy step (3 x forward FLOPs / "
      "(chips x peak x step))</td></tr>",
      pct(r.mfu));
  h += fmt::format(
      "<tr><th>checkpoint interval</th><td class=\"num\">{}</td><td>{} checkpoints; Daly's "
      "optimum {}, Young's {}; pause {:.1f} s</td></tr>",
      minutes(r.interval_min), esc(r.checkpoint_mode.empty() ? "-" : r.checkpoint_mode),
      minutes(r.daly_min), minutes(r.young_min), r.pause_s);
  if (std::isfinite(r.mtbf_h))
    h += fmt::format(
        "<tr><th>MTBF</th><td class=\"num\">{:.2f} h</td><td>between unexpected failures of the "
        "job (failure table {})</td></tr>",
        r.mtbf_h, esc(r.failures.empty() ? "-" : r.failures));
  h += "</tbody></table>";
  return h;
}

std::string cluster_sweep_section(const ClusterSweepInput& in) {
  const ClusterSweep& sw = in.sweep;
  std::string h = fmt::format("<h3>{} &#8212; goodput against scale</h3>", esc(in.label));
  h += "<div class=\"scroll\">" + report::sweep_svg(sw) + "</div>";
  std::string variants;
  for (const auto& [name, what] : sw.variants)
    variants += fmt::format("{}<b>{}</b>: {}", variants.empty() ? "" : "; ", esc(name), esc(what));
  bool any_ci = false;
  for (const auto& p : sw.points)
    for (const auto& [n, v] : p.variants) any_ci = any_ci || v.has_ci;
  h += fmt::format(
      "<p class=\"note\">x = chips on a log scale (each point rounded down to whole TP x PP "
      "groups by attain cluster); y = goodput (solid lines, filled markers: kept model FLOPs / "
      "(chips x peak x wall)) and ETTR (dashed lines, hollow markers: useful training time / "
      "wall), one colour and marker per variant; dotted = MFU of a healthy step, the ceiling of "
      "goodput. {}Variants: {}.{}</p>",
      any_ci ? fmt::format("Bands: 95% confidence interval of the mean goodput over {} runs per "
                           "point; whiskers: the same for ETTR (both clipped to 0..100%). ",
                           sw.runs)
             : "",
      variants, data_line(sw.command));
  h += "<div class=\"scroll\"><table class=\"sweep\"><thead><tr><th>chips</th><th>MTBF</th>"
       "<th>step</th><th>MFU</th>";
  for (const auto& v : sw.variants) h += fmt::format("<th>{}: goodput (ETTR)</th>", esc(v.first));
  h += "</tr></thead><tbody>";
  for (const auto& p : sw.points) {
    h += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td>",
        report::group_digits(static_cast<double>(p.chips)),
        std::isfinite(p.mtbf_h) ? fmt::format("{:.2f} h", p.mtbf_h) : "-", duration(p.step_s),
        pct(p.mfu));
    for (const auto& v : sw.variants) {
      const ClusterVariantPoint& c = p.variants.at(v.first);
      h += fmt::format("<td class=\"num\">{} ({}){}</td>", pct(c.goodput), pct(c.ettr),
                       c.has_ci ? fmt::format(" <span class=\"note\">[{} .. {}]</span>",
                                              pct(c.goodput_lo), pct(c.goodput_hi))
                                : "");
    }
    h += "</tr>";
  }
  h += "</tbody></table></div>";
  return h;
}

// Everything about results files: inputs, headline, rooflines, efficiency, speed, tables.
std::string results_sections(const ReportModel& m, const ReportOptions& opt) {
  std::string h;
  const bool any_proj =
      std::any_of(m.series.begin(), m.series.end(), [](const auto& s) { return s.projected; });
  if (any_proj)
    h += "<div class=\"banner\">This report contains PROJECTIONS: figures computed from a device's "
         "roofline and an "
         "assumed efficiency, not measurements. They are marked PROJECTED (hollow markers, dashed "
         "outlines, "
         "italic cells).</div>";

  // Inputs.
  h += "<h2>Inputs</h2><table "
       "class=\"inputs\"><thead><tr><th>file</th><th>machine</th><th>ceilings used</th>"
       "<th>backends</th><th>created</th><th>command</th></tr></thead><tbody>";
  for (std::size_t fi = 0; fi < m.inputs.size(); ++fi) {
    const ResultsFile& f = m.inputs[fi].file;
    std::string backends;
    for (const auto& se : m.series)
      if (se.file == fi) {
        auto lib = f.machine.libraries.find(se.backend);
        backends += (backends.empty() ? "" : "; ") + esc(se.backend) +
                    (lib != f.machine.libraries.end() ? " (" + esc(lib->second) + ")" : "") +
                    (se.projected ? " <span class=\"projtag\">PROJECTED</span>" : "");
      }
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
        esc(m.inputs[fi].label), esc(machine_line(f)), esc(ceilings_line(f)), backends,
        esc(f.created), esc(f.command));
    if (auto p = f.config.find("projection"); p != f.config.end())
      h += fmt::format(
          "<tr><td></td><td colspan=\"5\" class=\"proj\">projection basis: "
          "<code>{}</code></td></tr>",
          esc(p->dump()));
  }
  h += "</tbody></table>";

  // Headline figures.
  h += "<h2>Headline</h2>";
  for (const auto& se : m.series) {
    if (!se.ceiling_errors.empty()) {
      std::string names;
      for (const Result* r : se.ceiling_errors)
        names += fmt::format("{}<code>{}</code> ({})", names.empty() ? "" : ", ",
                             esc(r->op.op.spec()), pct(r->efficiency));
      h += fmt::format(
          "<p class=\"note warn\">{} of {} ran above the ceiling: a ceiling error (the ceiling is "
          "wrong, not the kernel fast), left out of every efficiency figure: {}.</p>",
          fmt_count(se.ceiling_errors.size(), "op"), esc(se.name), names);
    }
    if (se.efficiency.count == 0) {
      h += fmt::format("<p class=\"headline\"><b>{}</b>: no op ran successfully{}.</p>",
                       esc(se.name), se.ceiling_errors.empty() ? "" : " within its ceiling");
      continue;
    }
    h += fmt::format(
        "<p class=\"headline\"><b>{}</b> reaches <b>{}</b> of attainable{} (geomean over {}; "
        "median {}, "
        "quartiles {} .. {}){}.</p>",
        esc(se.name), pct(se.efficiency.geomean),
        se.projected ? " <span class=\"projtag\">(PROJECTED: assumed)</span>" : "",
        fmt_count(se.efficiency.count, "op"), pct(se.efficiency.median), pct(se.efficiency.q1),
        pct(se.efficiency.q3),
        se.local_efficiency.count > 0
            ? fmt::format("; <b>{}</b> against the ceilings sampled beside each op",
                          pct(se.local_efficiency.geomean))
            : "");
  }
  for (std::size_t fi = 0; fi < m.inputs.size(); ++fi) {
    const ResultsFile& f = m.inputs[fi].file;
    if (!f.complete)
      h += fmt::format(
          "<p class=\"note warn\">{} is an incomplete run: {} of {} ops so far (<code>attain bench "
          "... --resume</code> finishes it).</p>",
          esc(m.inputs[fi].label), f.ops_done, f.ops_total);
    if (!f.machine.checks.empty())
      h += fmt::format(
          "<p class=\"note\">The machine while {} ran: the ceilings measured again during the "
          "run, beside those the efficiencies use.</p><pre>{}</pre>",
          esc(m.inputs[fi].label), esc(format_checks(f.machine)));
  }
  for (const auto& p : m.pairs)
    if (p.ratio.count > 0)
      h += fmt::format(
          "<p class=\"headline\"><b>{}</b> runs at <b>{}</b> of <b>{}</b>'s speed{} (geomean over "
          "{} "
          "in common; {} faster on {}, {} on {}).</p>",
          esc(m.series[p.a].name), pct(p.ratio.geomean), esc(m.series[p.b].name),
          p.projected ? " <span class=\"projtag\">(involves PROJECTED figures)</span>" : "",
          fmt_count(p.ratio.count, "op"), esc(m.series[p.a].name), p.wins_a,
          esc(m.series[p.b].name), p.wins_b);

  // Rooflines.
  h += "<h2>Roofline</h2><p class=\"note\">One point per op that ran (status ok): x = FLOPs / byte "
       "(the op's "
       "arithmetic intensity), y = achieved throughput, both logarithmic. The solid line is the "
       "roofline of the "
       "ceilings the file recorded (memory bandwidth slope, then the compute peak); dashed lines "
       "are other dtypes' "
       "compute peaks found in the results. Hover a point for its op spec, backend and "
       "efficiency.</p>";
  for (std::size_t fi = 0; fi < m.inputs.size(); ++fi) {
    const ResultsFile& f = m.inputs[fi].file;
    std::size_t pts = 0;
    bool proj = false;
    for (const auto& se : m.series)
      if (se.file == fi) pts += se.ok.size(), proj = proj || se.projected;
    h += fmt::format("<h3>{}{} &#8212; {}, {}</h3>", esc(m.inputs[fi].label),
                     proj ? " <span class=\"projtag\">PROJECTED</span>" : "", esc(machine_line(f)),
                     fmt_count(pts, "point"));
    h += kind_legend(m, fi);
    h += report::roofline_svg(m, fi);
  }

  // Efficiency distributions.
  h += "<h2>Efficiency per backend</h2><p class=\"note\">Box = quartiles, thick line = median, "
       "whiskers = lowest "
       "and highest op, diamond = geometric mean; the faint dots are the ops. 100% means the op "
       "ran at its "
       "roofline.</p>";
  h += "<div class=\"scroll\">" + report::efficiency_box_svg(m) + "</div>";
  h += "<h3>Geomean efficiency by phase, op kind and dtype</h3><div class=\"scroll\">" +
       groups_table(m) + "</div>";

  // Relative speed.
  h += "<h2>Relative speed</h2>";
  if (m.pairs.empty()) {
    h += "<p class=\"note\">One series only: give two results files (or a file with two backends) "
         "to compare.</p>";
  } else {
    h += "<p class=\"note\">For each pair, over the op specs both ran: speed of A relative to B = "
         "time of B / time "
         "of A per op; bar = geometric mean (100% = as fast), whisker = quartiles, tick = median. "
         "Wins count the "
         "ops each side ran faster.</p>";
    h += "<div class=\"scroll\">" + report::speed_svg(m) + "</div>";
    h += speed_table(m);
  }

  h += "<h2>Per model and phase</h2><p class=\"note\">Ops grouped by the model and phase they come "
       "from; time per "
       "pass = sum over the group's ops of time &#215; occurrences in one forward pass.</p>";
  h += "<div class=\"scroll\">" + model_phase_table(m) + "</div>";

  h += fmt::format(
      "<h2>Furthest from attainable</h2><p class=\"note\">The {} ops with the lowest efficiency "
      "per "
      "series, with the command that measures one again on this host.</p>",
      opt.furthest);
  h += furthest_tables(m, opt.furthest);

  h += "<h2>Status</h2>" + status_section(m);
  return h;
}

}  // namespace

std::string render_report_html(const ReportModel& m, const ReportOptions& opt) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>";
  h += fmt::format("<title>{}</title><style>{}</style></head><body>", esc(opt.title), kStyle);
  h += fmt::format("<h1>{}</h1>", esc(opt.title));
  std::string from;
  for (const auto& [n, what] :
       {std::pair{m.inputs.size(), "results file"}, std::pair{m.runs.size(), "cluster run file"},
        std::pair{m.sweeps.size(), "cluster sweep file"}})
    if (n > 0) from += (from.empty() ? "" : ", ") + fmt_count(n, what);
  h += fmt::format("<p class=\"note\">{}{}.{}</p>",
                   opt.generated.empty() ? "From " : "Generated " + esc(opt.generated) + " from ",
                   from.empty() ? "no files" : from,
                   m.inputs.empty()
                       ? ""
                       : " Efficiency = achieved throughput / attainable throughput, where "
                         "attainable = min(compute peak of the op's dtype, FLOPs/byte &#215; "
                         "memory bandwidth) on the machine or device each file names. Aggregates "
                         "over ops are geometric means.");
  if (!m.inputs.empty()) h += results_sections(m, opt);
  if (!m.runs.empty() || !m.sweeps.empty()) {
    h += "<h2>Training at scale (attain cluster)</h2><p class=\"note\">Simulated training jobs "
         "(<code>attain cluster</code>, docs/cluster.md): every figure below is a simulation "
         "result, not a measurement.</p>";
    h += "<div class=\"scroll\">" + cluster_inputs(m) + "</div>";
    for (const auto& in : m.runs) h += cluster_run_section(in);
    for (const auto& in : m.sweeps) h += cluster_sweep_section(in);
  }
  h += "<p class=\"note\">Written by attain report; the page is self-contained (inline SVG and "
       "CSS, no scripts).</p>";
  h += "</body></html>\n";
  return h;
}

}  // namespace attain
