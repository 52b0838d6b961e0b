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
  return fmt::format("compute {}, memory {:.1f} GB/s ({})", throughput(r.peak_tflops), r.bw_gbps,
                     r.source);
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

}  // namespace

std::string render_report_html(const ReportModel& m, const ReportOptions& opt) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>";
  h += fmt::format("<title>{}</title><style>{}</style></head><body>", esc(opt.title), kStyle);
  h += fmt::format("<h1>{}</h1>", esc(opt.title));
  h += fmt::format(
      "<p class=\"note\">{}{}. Efficiency = achieved throughput / attainable throughput, where "
      "attainable = min(compute peak of the op's dtype, FLOPs/byte &#215; memory bandwidth) on the "
      "machine or device each file names. Aggregates over ops are geometric means.</p>",
      opt.generated.empty() ? "" : "Generated " + esc(opt.generated) + " from ",
      opt.generated.empty() ? "From " + fmt_count(m.inputs.size(), "results file")
                            : fmt_count(m.inputs.size(), "results file"));
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
    if (se.efficiency.count == 0) {
      h +=
          fmt::format("<p class=\"headline\"><b>{}</b>: no op ran successfully.</p>", esc(se.name));
      continue;
    }
    h += fmt::format(
        "<p class=\"headline\"><b>{}</b> reaches <b>{}</b> of attainable{} (geomean over {}; "
        "median {}, "
        "quartiles {} .. {}).</p>",
        esc(se.name), pct(se.efficiency.geomean),
        se.projected ? " <span class=\"projtag\">(PROJECTED: assumed)</span>" : "",
        fmt_count(se.efficiency.count, "op"), pct(se.efficiency.median), pct(se.efficiency.q1),
        pct(se.efficiency.q3));
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
  h += "<p class=\"note\">Written by attain report; the page is self-contained (inline SVG and "
       "CSS, no scripts).</p>";
  h += "</body></html>\n";
  return h;
}

}  // namespace attain
