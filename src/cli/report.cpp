// attain report: results files and attain cluster files -> one self-contained HTML page
// (roofline, efficiency, speed; interruption timelines, goodput against scale).
#include "attain/report.hpp"

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/util.hpp"

namespace attain::cli {
namespace {

std::string percent(double f) {
  return 100 * f < 0.1 ? fmt::format("{:.2g}%", 100 * f) : fmt::format("{:.1f}%", 100 * f);
}

// Each file is labelled by its stem; when stems repeat, by the path as given.
const bool registered = add_command([](CLI::App& app) {
  struct Opts {
    std::vector<std::string> files;
    std::string out, title = "attain report";
    std::size_t furthest = 10;
    bool json = false, headline = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("report",
                                 "One self-contained HTML page from results files (rooflines, "
                                 "efficiency, relative speed, tables) and attain cluster files "
                                 "(interruption timeline, goodput against scale)");
  sub->add_option("files", o->files,
                  "RESULTS.json or CLUSTER.json (attain cluster --json --out), any mix")
      ->required()
      ->expected(1, -1);
  sub->add_option("-o,--out", o->out, "the HTML file to write");
  sub->add_option("--title", o->title, "the page title")->capture_default_str();
  sub->add_option("--furthest", o->furthest, "ops listed as furthest from attainable, per series")
      ->capture_default_str();
  sub->add_flag("--json", o->json, "print what the page shows (series and pairs) as JSON");
  sub->add_flag("--headline", o->headline,
                "print each results file's headline as a Markdown table (the README's form)");
  set_action(sub, [o] {
    if (o->out.empty() && !o->json && !o->headline)
      throw InputError("attain report needs -o/--out FILE.html (or --json, --headline)");
    if (o->furthest == 0) throw InputError("--furthest must be at least 1");
    const auto labels = report_labels(o->files);
    ReportFiles files;
    for (std::size_t i = 0; i < o->files.size(); ++i)
      read_report_file(o->files[i], labels[i], files);
    const ReportModel m = build_report_model(std::move(files));
    ReportOptions opt;
    opt.title = o->title;
    opt.generated = now_iso();
    opt.furthest = o->furthest;
    if (!o->out.empty()) write_text_file(o->out, render_report_html(m, opt));
    if (o->json) {
      emit_json(report_summary_json(m), "", true);
      return 0;
    }
    if (o->headline) {
      for (const auto& in : m.inputs)
        fmt::print("{}{}", m.inputs.size() > 1 ? fmt::format("\n{}:\n\n", in.label) : "",
                   format_headline(in.file));
      if (o->out.empty()) return 0;
    }
    std::size_t points = 0;
    for (const auto& s : m.series) points += s.ok.size();
    fmt::print("report written to {}: {} file(s), {} series, {} roofline points", o->out,
               o->files.size(), m.series.size(), points);
    if (!m.runs.empty() || !m.sweeps.empty())
      fmt::print("; {} cluster run(s) with a timeline, {} goodput-vs-scale sweep(s)", m.runs.size(),
                 m.sweeps.size());
    fmt::print("\n");
    for (const auto& in : m.runs)
      fmt::print("  {:<28} ETTR {}, goodput {} (mean of {} run(s)); {}\n", in.label,
                 percent(in.run.ettr.mean), percent(in.run.goodput.mean), in.run.runs,
                 in.run.has_timeline ? fmt::format("timeline of run {}: {} interruptions",
                                                   in.run.timeline_run, in.run.timeline.size())
                                     : "no timeline");
    for (const auto& in : m.sweeps)
      fmt::print("  {:<28} {} points x {} variants\n", in.label, in.sweep.points.size(),
                 in.sweep.variants.size());
    for (const auto& s : m.series)
      if (s.efficiency.count > 0)
        fmt::print("  {:<28} {}geomean efficiency {} over {} ops\n", s.name,
                   s.projected ? "projected " : "", percent(s.efficiency.geomean),
                   s.efficiency.count);
    for (const auto& p : m.pairs)
      if (p.ratio.count > 0)
        fmt::print("  {} runs at {}{} of {}'s speed (geomean over {} ops; wins {} : {})\n",
                   m.series[p.a].name, p.projected ? "a projected " : "", percent(p.ratio.geomean),
                   m.series[p.b].name, p.ratio.count, p.wins_a, p.wins_b);
    return 0;
  });
});

}  // namespace
}  // namespace attain::cli
