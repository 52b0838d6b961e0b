// The report's charts as inline SVG (no xmlns needed inside HTML, no scripts).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/svg.hpp"

namespace attain::report {

std::string esc(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      case '/':
        o += i > 0 && s[i - 1] == ':' ? "&#47;" : "/";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string pct(double f) {
  if (!std::isfinite(f)) return "-";
  const double p = 100 * f;
  if (p != 0 && std::abs(p) < 0.1) return fmt::format("{:.2g}%", p);
  return std::abs(p) < 10 ? fmt::format("{:.2f}%", p) : fmt::format("{:.1f}%", p);
}

std::string throughput(double tflops) {
  if (!std::isfinite(tflops) || tflops <= 0) return "-";
  if (tflops >= 1) return fmt::format("{:.1f} TFLOP/s", tflops);
  if (tflops >= 1e-3) return fmt::format("{:.1f} GFLOP/s", tflops * 1e3);
  return fmt::format("{:.3f} GFLOP/s", tflops * 1e3);
}

std::string duration(double s) {
  if (!std::isfinite(s) || s <= 0) return "-";
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

double LogScale::operator()(double v) const {
  const double t =
      (std::log10(std::max(v, 1e-300)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return p0 + t * (p1 - p0);
}

LogScale LogScale::decades(double min_v, double max_v, double p0, double p1) {
  if (!(min_v > 0) || !std::isfinite(min_v)) min_v = 1;
  if (!(max_v > 0) || !std::isfinite(max_v)) max_v = min_v;
  double lo = std::pow(10, std::floor(std::log10(min_v)));
  double hi = std::pow(10, std::ceil(std::log10(max_v)));
  if (hi <= lo * 10) hi = lo * 100;
  return {lo, hi, p0, p1};
}

const char* kind_color(OpKind k) {
  switch (k) {
    case OpKind::gemm:
      return "#2563eb";
    case OpKind::batched_gemm:
      return "#d97706";
    case OpKind::grouped_gemm:
      return "#059669";
    case OpKind::mla_decode:
      return "#dc2626";
  }
  return "#555555";
}

const char* series_color(std::size_t i) {
  static const char* const c[] = {"#2563eb", "#dc2626", "#059669", "#d97706",
                                  "#7c3aed", "#0891b2", "#be185d", "#4d7c0f"};
  return c[i % 8];
}

std::string marker(std::size_t shape, double x, double y, double r, std::string_view attrs,
                   std::string_view title) {
  const std::string t = fmt::format("<title>{}</title>", esc(title));
  switch (shape % 4) {
    case 0:
      return fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" {}>{}</circle>", x, y, r,
                         attrs, t);
    case 1:
      return fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" {}>{}</rect>", x - r,
          y - r, 2 * r, 2 * r, attrs, t);
    case 2:
      return fmt::format("<path d=\"M{:.1f} {:.1f}L{:.1f} {:.1f}L{:.1f} {:.1f}Z\" {}>{}</path>", x,
                         y - 1.2 * r, x + 1.1 * r, y + 0.8 * r, x - 1.1 * r, y + 0.8 * r, attrs, t);
    default:
      return fmt::format(
          "<path d=\"M{:.1f} {:.1f}L{:.1f} {:.1f}L{:.1f} {:.1f}L{:.1f} {:.1f}Z\" {}>{}</path>", x,
          y - 1.3 * r, x + 1.3 * r, y, x, y + 1.3 * r, x - 1.3 * r, y, attrs, t);
  }
}

namespace {

std::string tick_label(double v) {
  return fmt::format("{:g}", v);
}

// Log-log axes with decade grid lines and labels.
std::string log_axes(const LogScale& x, const LogScale& y, std::string_view xlabel,
                     std::string_view ylabel) {
  std::string s;
  for (double v = x.lo; v <= x.hi * 1.0001; v *= 10) {
    const double px = x(v);
    s += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>", px,
        y.p0, px, y.p1);
    s += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", px,
        y.p0 + 16, tick_label(v));
  }
  for (double v = y.lo; v <= y.hi * 1.0001; v *= 10) {
    const double py = y(v);
    s += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
        x.p0, py, x.p1, py);
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                     x.p0 - 6, py + 4, tick_label(v));
  }
  s += fmt::format(
      "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"></rect>",
      x.p0, y.p1, x.p1 - x.p0, y.p0 - y.p1);
  s +=
      fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
                  (x.p0 + x.p1) / 2, y.p0 + 36, esc(xlabel));
  s += fmt::format(
      "<text class=\"axis\" transform=\"translate({:.1f} {:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      x.p0 - 52, (y.p0 + y.p1) / 2, esc(ylabel));
  return s;
}

}  // namespace

std::string roofline_svg(const ReportModel& m, std::size_t file) {
  const ResultsFile& f = m.inputs[file].file;
  const Roofline& roof = f.machine.roofline;
  const bool have_roof = roof.peak_tflops > 0 && roof.bw_gbps > 0;
  std::vector<std::size_t> sids;
  for (std::size_t i = 0; i < m.series.size(); ++i)
    if (m.series[i].file == file) sids.push_back(i);

  // Compute ceilings of other dtypes, read back from the results' attainable figures: an op
  // that the bandwidth does not bound attains its dtype's peak (imports and projections).
  std::map<std::string, double> dtype_peaks;
  double xmin = HUGE_VAL, xmax = 0, ymin = HUGE_VAL, ymax = 0;
  for (std::size_t si : sids)
    for (const Result* r : m.series[si].ok) {
      const double ai = r->bytes > 0 ? r->flops / r->bytes : 0;
      if (ai > 0) xmin = std::min(xmin, ai), xmax = std::max(xmax, ai);
      if (r->tflops > 0) ymin = std::min(ymin, r->tflops), ymax = std::max(ymax, r->tflops);
      if (have_roof && ai > 0 && r->attainable_tflops > 0 &&
          ai * roof.bw_gbps / 1e3 > r->attainable_tflops * 1.001) {
        double& p = dtype_peaks[std::string(dtype_name(r->op.op.dtype))];
        p = std::max(p, r->attainable_tflops);
      }
    }
  for (auto it = dtype_peaks.begin(); it != dtype_peaks.end();)
    it = std::abs(it->second / roof.peak_tflops - 1) < 0.01 ? dtype_peaks.erase(it) : std::next(it);
  if (xmax == 0) xmin = xmax = 1;
  if (ymax == 0) ymin = ymax = have_roof ? roof.peak_tflops : 1;
  const double ridge = have_roof ? roof.peak_tflops * 1e3 / roof.bw_gbps : 0;  // FLOP/byte
  if (have_roof) {
    xmin = std::min(xmin, ridge / 4), xmax = std::max(xmax, ridge * 4);
    ymax = std::max(ymax, roof.peak_tflops);
    for (const auto& [d, p] : dtype_peaks) ymax = std::max(ymax, p);
  }
  // Below a teraflop the axis reads in GFLOP/s.
  const double unit = ymax < 1 ? 1e3 : 1;
  const std::string uname = unit > 1 ? "GFLOP/s" : "TFLOP/s";
  const double W = 760, H = 470;
  const LogScale x = LogScale::decades(xmin, xmax, 72, W - 24);
  const LogScale y = LogScale::decades(ymin * unit, ymax * unit, H - 58, 16);
  const std::string clip = fmt::format("clip{}", file);

  std::string s = fmt::format(
      "<svg class=\"chart roofline\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} "
      "{1:.0f}\" "
      "role=\"img\" data-file=\"{2}\">",
      W, H, file);
  s += fmt::format(
      "<defs><clipPath id=\"{}\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
      "height=\"{:.1f}\">"
      "</rect></clipPath></defs>",
      clip, x.p0, y.p1, x.p1 - x.p0, y.p0 - y.p1);
  s += log_axes(x, y, "arithmetic intensity (FLOPs / byte)", "achieved " + uname);
  s += fmt::format("<g clip-path=\"url(#{})\">", clip);
  if (have_roof) {
    auto bw_line = [&](double peak, const char* cls) {
      const double xr = peak * 1e3 / roof.bw_gbps;
      return fmt::format(
          "<polyline class=\"{}\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"></polyline>",
          cls, x(x.lo), y(x.lo * roof.bw_gbps / 1e3 * unit), x(xr), y(peak * unit), x(x.hi),
          y(peak * unit));
    };
    for (const auto& [d, p] : dtype_peaks) s += bw_line(p, "ceiling alt");
    s += bw_line(roof.peak_tflops, "ceiling");
    s += fmt::format(
        "<line class=\"ridge\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"></line>",
        x(ridge), y.p0, y(roof.peak_tflops * unit));
  }
  // Points: color = op kind, shape = backend (series of this file); projections hollow.
  std::size_t points = 0;
  for (std::size_t k = 0; k < sids.size(); ++k) {
    const ReportSeries& se = m.series[sids[k]];
    for (const Result* r : se.ok) {
      const double ai = r->bytes > 0 ? r->flops / r->bytes : x.lo;
      const double px = std::clamp(x(ai), x.p0, x.p1);
      const double py = std::clamp(y(r->tflops * unit), y.p1, y.p0);
      const char* col = kind_color(r->op.op.kind);
      const std::string attrs =
          r->projected ? fmt::format("class=\"pt proj\" stroke=\"{}\" fill=\"none\"", col)
                       : fmt::format("class=\"pt\" fill=\"{}\" stroke=\"{}\"", col, col);
      std::string where = r->op.prov.model;
      if (!r->op.prov.layer.empty()) where += (where.empty() ? "" : " ") + r->op.prov.layer;
      if (!r->op.prov.phase.empty()) where += (where.empty() ? "" : ", ") + r->op.prov.phase;
      const std::string title = fmt::format(
          "{}\nbackend {}{}\n{}: {} of attainable {} = efficiency {}\n{:.1f} FLOPs/byte, {}{}",
          r->op.op.spec(), r->backend, r->projected ? " (PROJECTED)" : "",
          r->projected ? "projected" : "achieved", throughput(r->tflops),
          throughput(r->attainable_tflops), pct(r->efficiency), ai, duration(r->median_s),
          where.empty() ? "" : "\n" + where);
      s += marker(k, px, py, 4.2, attrs, title);
      ++points;
    }
  }
  s += "</g>";
  if (have_roof) {
    s += fmt::format(
        "<text class=\"clabel\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">compute {} "
        "({})</text>",
        x.p1 - 4, y(roof.peak_tflops * unit) - 6, throughput(roof.peak_tflops),
        esc(roof.source.size() > 60 ? roof.source.substr(0, 57) + "..." : roof.source));
    // The bandwidth label runs along the slope, a quarter of the way from where the slope
    // enters the plot to the ridge point.
    const double enter = std::max(x.lo, y.lo / unit * 1e3 / roof.bw_gbps);
    if (enter < ridge) {
      const double lx = enter * std::pow(ridge / enter, 0.2);
      const double angle = -std::atan2(y(1) - y(10), x(10) - x(1)) * 180 /
                           3.141592653589793;  // one decade per decade
      s += fmt::format(
          "<text class=\"clabel\" transform=\"translate({:.1f} {:.1f}) rotate({:.1f})\" x=\"0\" "
          "y=\"-6\">memory "
          "{:.1f} GB/s</text>",
          x(lx), y(lx * roof.bw_gbps / 1e3 * unit), angle, roof.bw_gbps);
    }
    for (const auto& [d, p] : dtype_peaks)
      s += fmt::format(
          "<text class=\"clabel alt\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{} peak "
          "{}</text>",
          x.p1 - 4, y(p * unit) - 6, esc(d), throughput(p));
  } else {
    s += fmt::format(
        "<text class=\"clabel\" x=\"{:.1f}\" y=\"{:.1f}\">no ceilings recorded in this file</text>",
        x.p0 + 8, y.p1 + 16);
  }
  if (points == 0)
    s += fmt::format(
        "<text class=\"clabel\" x=\"{:.1f}\" y=\"{:.1f}\">no op ran successfully</text>", x.p0 + 8,
        y.p1 + 32);
  s += "</svg>";
  return s;
}

std::string efficiency_box_svg(const ReportModel& m) {
  const std::size_t n = m.series.size();
  double top = 1;
  for (const auto& se : m.series) top = std::max(top, se.eff_max);
  top = std::ceil(top * 10 - 1e-9) / 10;
  const double band = 130, x0 = 64, y0 = 300, y1 = 16;  // y0 bottom, y1 top
  const double W = std::max(420.0, x0 + band * static_cast<double>(n) + 20), H = 352;
  auto Y = [&](double e) { return y0 - (e / top) * (y0 - y1); };
  std::string s = fmt::format(
      "<svg class=\"chart boxes\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} "
      "{1:.0f}\" role=\"img\">",
      W, H);
  for (int i = 0; i <= static_cast<int>(std::lround(top * 10)); ++i) {
    const double e = i / 10.0, py = Y(e);
    s += fmt::format(
        "<line class=\"grid{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
        std::abs(e - 1) < 1e-9 ? " one" : "", x0, py, W - 20, py);
    s += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{:.0f}%</text>", x0 - 6,
        py + 4, e * 100);
  }
  s += fmt::format(
      "<text class=\"axis\" transform=\"translate(16 {:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">efficiency "
      "(achieved / attainable)</text>",
      (y0 + y1) / 2);
  for (std::size_t i = 0; i < n; ++i) {
    const ReportSeries& se = m.series[i];
    const double cx = x0 + band * (static_cast<double>(i) + 0.5);
    const char* col = series_color(i);
    const std::string name = se.name.size() > 20 ? se.name.substr(0, 18) + ".." : se.name;
    s += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" "
        "text-anchor=\"middle\">{}<title>{}</title></text>",
        cx, y0 + 18, esc(name), esc(se.name));
    if (se.projected)
      s += fmt::format(
          "<text class=\"tick projtag\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">PROJECTED"
          "</text>",
          cx, y0 + 32);
    const Aggregate& a = se.efficiency;
    if (a.count == 0) {
      s += fmt::format(
          "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">no op ran</text>",
          cx, Y(top / 2));
      continue;
    }
    // The ops themselves, spread deterministically across the band behind the box.
    for (std::size_t j = 0; j < se.ok.size(); ++j) {
      const double e = se.ok[j]->efficiency;
      if (!(e > 0)) continue;
      const double jitter = (static_cast<double>((j * 37) % 29) / 28.0 - 0.5) * 60;
      s += fmt::format(
          "<circle class=\"dot\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"1.8\" fill=\"{}\"></circle>",
          cx + jitter, Y(e), col);
    }
    const std::string title = fmt::format(
        "{}{}: {} ops, geomean {}, median {}, quartiles {} .. {}, range {} .. {}", se.name,
        se.projected ? " (PROJECTED: assumed efficiencies)" : "", a.count, pct(a.geomean),
        pct(a.median), pct(a.q1), pct(a.q3), pct(se.eff_min), pct(se.eff_max));
    s += fmt::format("<g class=\"box{}\"><title>{}</title>", se.projected ? " proj" : "",
                     esc(title));
    s += fmt::format(
        "<line class=\"whisker\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
        "y2=\"{2:.1f}\"></line>",
        cx, Y(se.eff_min), Y(se.eff_max));
    for (double e : {se.eff_min, se.eff_max})
      s += fmt::format(
          "<line class=\"whisker\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
          cx - 10, Y(e), cx + 10, Y(e));
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"44\" height=\"{:.1f}\" fill=\"{}\" "
        "fill-opacity=\"0.25\" "
        "stroke=\"{}\"{}></rect>",
        cx - 22, Y(a.q3), std::max(1.0, Y(a.q1) - Y(a.q3)), col, col,
        se.projected ? " stroke-dasharray=\"4 3\"" : "");
    s += fmt::format(
        "<line class=\"median\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
        cx - 22, Y(a.median), cx + 22, Y(a.median));
    s += marker(3, cx, Y(a.geomean), 4.5, "class=\"gm\" fill=\"#111111\"",
                "geomean " + pct(a.geomean));
    s += fmt::format("<text class=\"val\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>", cx + 26,
                     Y(a.geomean) + 4, pct(a.geomean));
    s += "</g>";
  }
  s += "</svg>";
  return s;
}

std::string speed_svg(const ReportModel& m) {
  std::vector<const ReportPair*> ps;
  double span = std::log2(2.0);  // at least 50%..200%
  for (const auto& p : m.pairs) {
    if (p.ratio.count == 0) continue;
    ps.push_back(&p);
    for (double v : {p.ratio.q1, p.ratio.q3, p.ratio.geomean})
      span = std::max(span, std::abs(std::log2(v)));
  }
  if (ps.empty()) return "";
  span = std::ceil(span);
  std::size_t label_chars = 0;
  for (const ReportPair* p : ps)
    label_chars =
        std::max(label_chars, m.series[p->a].name.size() + m.series[p->b].name.size() + 14);
  const double row = 44, x0 = 40, x1 = 560, top = 28;
  const double W = std::max(940.0, x1 + 24 + 7.2 * static_cast<double>(label_chars));
  const double H = top + row * static_cast<double>(ps.size()) + 20;
  const double mid = (x0 + x1) / 2;
  auto X = [&](double r) { return mid + std::log2(r) / span * (x1 - mid); };
  std::string s = fmt::format(
      "<svg class=\"chart speed\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} "
      "{1:.0f}\" role=\"img\">",
      W, H);
  const int step = static_cast<int>(std::ceil(span / 4));  // at most nine ticks
  for (int e = -static_cast<int>(span); e <= static_cast<int>(span); e += step) {
    const double r = std::pow(2.0, e), px = X(r);
    s += fmt::format(
        "<line class=\"grid{}\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
        e == 0 ? " one" : "", px, top - 6, px, H - 16);
    s += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", px,
        top - 10, pct(r));
  }
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const ReportPair& p = *ps[i];
    const double cy = top + row * (static_cast<double>(i) + 0.5);
    const Aggregate& a = p.ratio;
    const std::string& na = m.series[p.a].name;
    const std::string& nb = m.series[p.b].name;
    const std::string title = fmt::format(
        "{} runs at {} of {}'s speed (geomean of time ratios over {} ops in common; median {}, "
        "quartiles {} .. {}; wins {} : {}){}",
        na, pct(a.geomean), nb, a.count, pct(a.median), pct(a.q1), pct(a.q3), p.wins_a, p.wins_b,
        p.projected ? " - involves PROJECTED figures" : "");
    s += fmt::format("<g class=\"pair{}\"><title>{}</title>", p.projected ? " proj" : "",
                     esc(title));
    const double gx = X(a.geomean);
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\" "
        "fill-opacity=\"0.75\"{}></rect>",
        std::min(gx, mid), cy - 8, std::max(1.0, std::abs(gx - mid)),
        a.geomean >= 1 ? "#059669" : "#dc2626",
        p.projected ? " stroke=\"#111111\" stroke-dasharray=\"4 3\"" : "");
    s += fmt::format(
        "<line class=\"whisker\" x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" "
        "y2=\"{2:.1f}\"></line>",
        X(a.q1), X(a.q3), cy + 12);
    s += fmt::format(
        "<line class=\"median\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
        "y2=\"{2:.1f}\"></line>",
        X(a.median), cy + 7, cy + 17);
    s += fmt::format("<text class=\"val\" x=\"{:.1f}\" y=\"{:.1f}\">{} at {} of {}</text>", x1 + 14,
                     cy - 2, esc(na), pct(a.geomean), esc(nb));
    s += fmt::format(
        "<text class=\"tick{}\" x=\"{:.1f}\" y=\"{:.1f}\">{}{} ops, quartiles {} .. {}, wins {} : "
        "{}</text>",
        p.projected ? " projtag" : "", x1 + 14, cy + 13, p.projected ? "PROJECTED - " : "", a.count,
        pct(a.q1), pct(a.q3), p.wins_a, p.wins_b);
    s += "</g>";
  }
  s += "</svg>";
  return s;
}

}  // namespace attain::report
