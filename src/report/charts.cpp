// The report's charts as inline SVG (no xmlns needed inside HTML, no scripts).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

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

double LinearScale::operator()(double v) const {
  return hi > lo ? p0 + (v - lo) / (hi - lo) * (p1 - p0) : p0;
}

LinearScale LinearScale::nice(double min_v, double max_v, double p0, double p1, int ticks) {
  if (!std::isfinite(min_v)) min_v = 0;
  if (!std::isfinite(max_v) || max_v <= min_v) max_v = min_v + 1;
  const double raw = (max_v - min_v) / std::max(1, ticks);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double f : {1.0, 2.0, 5.0})
    if (f * mag >= raw * 0.999) {
      step = f * mag;
      break;
    }
  return {std::floor(min_v / step + 1e-9) * step, std::ceil(max_v / step - 1e-9) * step, p0, p1,
          step};
}

std::vector<Tick> decade_ticks(const LogScale& s) {
  std::vector<Tick> t;
  for (double v = s.lo; v <= s.hi * 1.0001; v *= 10) t.push_back({s(v), fmt::format("{:g}", v)});
  return t;
}

std::vector<Tick> log_ticks(const LogScale& s, std::string (*label)(double)) {
  const bool fine = std::log10(s.hi / s.lo) <= 4;
  std::vector<Tick> t;
  for (double d = std::pow(10, std::floor(std::log10(s.lo))); d <= s.hi * 1.0001; d *= 10)
    for (double f : {1.0, 2.0, 5.0}) {
      const double v = d * f;
      if ((f == 1.0 || fine) && v >= s.lo * 0.9999 && v <= s.hi * 1.0001)
        t.push_back({s(v), label(v)});
    }
  return t;
}

std::vector<Tick> linear_ticks(const LinearScale& s, std::string (*label)(double)) {
  std::vector<Tick> t;
  const double step = s.step > 0 ? s.step : (s.hi - s.lo) / 5;
  if (!(step > 0)) return t;
  for (double v = s.lo; v <= s.hi + step * 1e-6; v += step)
    t.push_back({s(v), label(std::abs(v) < step * 1e-9 ? 0.0 : v)});
  return t;
}

std::string axes(const Axis& x, const Axis& y) {
  std::string s;
  for (const Tick& t : x.ticks) {
    s += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
        t.px, y.p0, t.px, y.p1);
    s += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", t.px,
        y.p0 + 16, esc(t.label));
  }
  for (const Tick& t : y.ticks) {
    s += fmt::format(
        "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>",
        x.p0, t.px, x.p1, t.px);
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                     x.p0 - 6, t.px + 4, esc(t.label));
  }
  s += fmt::format(
      "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"></rect>",
      x.p0, y.p1, x.p1 - x.p0, y.p0 - y.p1);
  s +=
      fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>",
                  x.label_mid >= 0 ? x.label_mid : (x.p0 + x.p1) / 2, y.p0 + 36, esc(x.label));
  s += fmt::format(
      "<text class=\"axis\" transform=\"translate({:.1f} {:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      x.p0 - 52, y.label_mid >= 0 ? y.label_mid : (y.p0 + y.p1) / 2, esc(y.label));
  return s;
}

std::string group_digits(double v) {
  std::string d = fmt::format("{:.0f}", std::abs(v)), o;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) o += ',';
    o += d[i];
  }
  return (v < 0 ? "-" : "") + o;
}

namespace {

// Log-log axes with decade grid lines and labels.
std::string log_axes(const LogScale& x, const LogScale& y, std::string_view xlabel,
                     std::string_view ylabel) {
  return axes({x.p0, x.p1, decade_ticks(x), std::string(xlabel)},
              {y.p0, y.p1, decade_ticks(y), std::string(ylabel)});
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
      if (!(e > 0) || se.ok[j]->exceeds_ceiling()) continue;
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
    // Powers of two: "100%" at parity, "4x" faster, "1/4" the speed.
    const std::string label = e == 0  ? "100%"
                              : e > 0 ? fmt::format("{:g}x", r)
                                      : fmt::format("1/{:g}", 1 / r);
    s += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", px,
        top - 10, label);
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

// ---- cluster charts --------------------------------------------------------------------

namespace {

// One legend entry drawn inside a chart: a marker, a line or a box, then its label.
struct LegendItem {
  enum Kind { mark, line, box } kind = mark;
  std::string color;
  std::size_t shape = 0;  // mark: marker shape
  std::string dash;       // line: stroke-dasharray
  std::string label, title;
};

// Entries left to right from (x0, y), wrapping before x1; returns the y below the last row.
double draw_legend(std::string& s, const std::vector<LegendItem>& items, double x0, double y,
                   double x1) {
  double x = x0;
  for (const LegendItem& it : items) {
    const double w = 26 + 6.4 * static_cast<double>(it.label.size()) + 14;
    if (x > x0 && x + w > x1) x = x0, y += 17;
    s += "<g class=\"legend-item\">";
    if (!it.title.empty()) s += fmt::format("<title>{}</title>", esc(it.title));
    switch (it.kind) {
      case LegendItem::mark:
        s += marker(it.shape, x + 9, y - 4, 4,
                    fmt::format("fill=\"{}\" stroke=\"{}\"", it.color, it.color), it.label);
        break;
      case LegendItem::line:
        s += fmt::format(
            "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
            "stroke-width=\"2\"{}></line>",
            x, y - 4, x + 20, y - 4, it.color,
            it.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", it.dash));
        break;
      case LegendItem::box:
        s += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"18\" height=\"9\" fill=\"{}\"></rect>", x + 1,
            y - 8.5, it.color);
        break;
    }
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text></g>", x + 24, y,
                     esc(it.label));
    x += w;
  }
  return y + 8;
}

std::string chart_open(const char* cls, double W, double H, std::string_view title) {
  return fmt::format(
             "<svg class=\"chart {0}\" width=\"{1:.0f}\" height=\"{2:.0f}\" viewBox=\"0 0 "
             "{1:.0f} {2:.0f}\" role=\"img\"><title>{3}</title>",
             cls, W, H, esc(title)) +
         fmt::format("<text class=\"ctitle\" x=\"12\" y=\"20\">{}</text>", esc(title));
}

std::string days_label(double v) {
  return fmt::format("{:g}", v);
}
std::string pct_label(double v) {
  return fmt::format("{:.0f}%", v * 100);
}

constexpr const char* kPlannedColor = "#111827";
constexpr const char* kOtherColor = "#78716c";
constexpr const char* kDownColor = "#9ca3af";
constexpr const char* kLostColor = "#be185d";
constexpr std::size_t kCauseColors = 6;  // series_color(0..5); the rest share kOtherColor

}  // namespace

std::string timeline_svg(const ClusterRun& r) {
  const double end_h = cluster_end_h(r);
  // Unexpected causes by how often they occur in this run, then in the table's order.
  std::vector<std::pair<std::string, std::size_t>> causes;
  for (const auto& [name, st] : r.by_cause) causes.push_back({name, 0});
  std::size_t planned = 0;
  for (const auto& e : r.timeline) {
    if (e.planned) {
      ++planned;
      continue;
    }
    auto it = std::find_if(causes.begin(), causes.end(),
                           [&](const auto& c) { return c.first == e.cause; });
    if (it == causes.end())
      causes.push_back({e.cause, 1});
    else
      ++it->second;
  }
  std::stable_sort(causes.begin(), causes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  while (!causes.empty() && causes.back().second == 0) causes.pop_back();
  std::map<std::string, const char*> color;
  std::size_t other = 0, other_causes = 0;
  for (std::size_t i = 0; i < causes.size(); ++i) {
    const bool own = i < kCauseColors;
    color[causes[i].first] = own ? series_color(i) : kOtherColor;
    if (!own) other += causes[i].second, ++other_causes;
  }

  const double W = 960, x0 = 72, x1 = W - 24;
  const std::string title = fmt::format(
      "Interruptions of run {}{} over {:.3g} days{}", r.timeline_run,
      r.runs > 1 ? fmt::format(" of {}", r.runs) : std::string(), end_h / 24,
      r.chips > 0 ? fmt::format(", {} chips", group_digits(static_cast<double>(r.chips)))
                  : std::string());
  std::vector<LegendItem> items;
  items.push_back({LegendItem::line, "#2563eb", 0, "", "kept training compute", ""});
  items.push_back({LegendItem::line, "#6b7280", 0, "6 4", "no interruptions", ""});
  for (std::size_t i = 0; i < causes.size() && color[causes[i].first] != kOtherColor; ++i)
    items.push_back({LegendItem::mark, color[causes[i].first], 0, "",
                     fmt::format("{} ({})", causes[i].first, causes[i].second), ""});
  if (other > 0) {
    std::string names;
    for (const auto& [name, n] : causes)
      if (color[name] == kOtherColor)
        names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", name, n);
    items.push_back(
        {LegendItem::mark, kOtherColor, 0, "",
         fmt::format("{} other cause{} ({})", other_causes, other_causes == 1 ? "" : "s", other),
         names});
  }
  items.push_back(
      {LegendItem::mark, kPlannedColor, 1, "", fmt::format("planned ({})", planned), ""});
  items.push_back({LegendItem::box, kDownColor, 0, "", "down (detect, restart, re-warm)", ""});
  items.push_back({LegendItem::box, kLostColor, 0, "", "lost work", ""});

  std::string body;
  const double top = draw_legend(body, items, x0, 42, x1) + 6;
  const double y_plot0 = top + 220;  // bottom of the progress plot
  const double lane_u = y_plot0 + 16, lane_p = y_plot0 + 32, lane_down = y_plot0 + 48,
               lane_lost = y_plot0 + 64, bottom = y_plot0 + 76, H = bottom + 48;

  const auto pts = cluster_progress(r);
  const double tau = r.interval_min * 60;
  const double rate = std::isfinite(tau) && tau > 0 ? tau / (tau + r.pause_s) : 1.0;
  LinearScale x = LinearScale::nice(0, end_h / 24, x0, x1, 8);
  x.hi = end_h / 24;  // the axis ends with the run; ticks stay on the step
  double ymax = rate * end_h / 24;
  for (const auto& p : pts) ymax = std::max(ymax, p.second / 24);
  const LinearScale y = LinearScale::nice(0, ymax, y_plot0, top, 5);

  std::string s = chart_open("timeline", W, H, title) + body;
  Axis ya{bottom, top, linear_ticks(y, days_label), "kept compute (days)", (y_plot0 + top) / 2};
  s += axes({x0, x1, linear_ticks(x, days_label), "wall clock (days since the start)"}, ya);
  s += fmt::format(
      "<line class=\"sep\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"></line>", x0,
      y_plot0, x1, y_plot0);
  for (const auto& [py, name] :
       std::initializer_list<std::pair<double, const char*>>{{lane_u, "unexpected"},
                                                             {lane_p, "planned"},
                                                             {lane_down, "down"},
                                                             {lane_lost, "lost work"}})
    s += fmt::format("<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                     x0 - 6, py + 4, name);
  // The lines: kept compute rebuilt from the timeline, and the job without interruptions.
  s += fmt::format(
      "<polyline class=\"ideal\" points=\"{:.1f},{:.1f} {:.1f},{:.1f}\"><title>no interruptions: "
      "compute {} of the wall clock (checkpoint pauses only)</title></polyline>",
      x(0), y(0), x(end_h / 24), y(rate * end_h / 24), pct(rate));
  std::string line;
  for (const auto& [th, ch] : pts) line += fmt::format("{:.1f},{:.1f} ", x(th / 24), y(ch / 24));
  s += fmt::format(
      "<polyline class=\"progress\" points=\"{}\"><title>kept training compute of run "
      "{}: {:.2f} days at the end</title></polyline>",
      line, r.timeline_run, pts.back().second / 24);
  // Downtime (merged where recoveries overlap) and lost work in their lanes.
  std::vector<std::pair<double, double>> down;
  for (const auto& e : r.timeline) {
    if (!(e.down_min > 0)) continue;
    const double a = e.t_h, b = std::min(end_h, e.t_h + e.down_min / 60);
    if (!down.empty() && a <= down.back().second)
      down.back().second = std::max(down.back().second, b);
    else
      down.push_back({a, b});
  }
  for (const auto& [a, b] : down)
    s += fmt::format(
        "<rect class=\"down\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"9\" fill=\"{}\">"
        "<title>down {:.1f} min from day {:.2f}</title></rect>",
        x(a / 24), lane_down - 4.5, std::max(1.0, x(b / 24) - x(a / 24)), kDownColor, (b - a) * 60,
        a / 24);
  for (const auto& e : r.timeline)
    if (e.lost_work_min > 0) {
      const double a = std::max(0.0, e.t_h - e.lost_work_min / 60);
      s += fmt::format(
          "<rect class=\"lost\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"9\" "
          "fill=\"{}\"><title>{:.1f} min of work lost at day {:.2f} ({})</title></rect>",
          x(a / 24), lane_lost - 4.5, std::max(1.0, x(e.t_h / 24) - x(a / 24)), kLostColor,
          e.lost_work_min, e.t_h / 24, esc(e.cause));
    }
  // One marker per interruption.
  for (const auto& e : r.timeline) {
    const char* col = e.planned ? kPlannedColor : color[e.cause];
    const std::string hover = fmt::format(
        "day {:.2f} ({:.1f} h): {}{}\nlost work {:.1f} min, down {:.1f} min{}", e.t_h / 24, e.t_h,
        e.planned ? "planned stop" : e.cause, e.planned ? "" : " (unexpected)", e.lost_work_min,
        e.down_min, e.spare_used ? ", hot spare used" : "");
    s += marker(e.planned ? 1 : 0, x(std::min(e.t_h, end_h) / 24), e.planned ? lane_p : lane_u, 3.6,
                fmt::format("class=\"ev {}\" fill=\"{}\" stroke=\"{}\"",
                            e.planned ? "planned" : "unexpected", col, col),
                hover);
  }
  if (!r.has_timeline)
    s += fmt::format(
        "<text class=\"clabel\" x=\"{:.1f}\" y=\"{:.1f}\">the file has no timeline "
        "(attain cluster --no-timeline)</text>",
        x0 + 8, top + 16);
  s += "</svg>";
  return s;
}

std::string sweep_svg(const ClusterSweep& sw) {
  const double W = 820, x0 = 72, x1 = W - 24;
  double cmin = HUGE_VAL, cmax = 0;
  for (const auto& p : sw.points) {
    cmin = std::min(cmin, static_cast<double>(p.chips));
    cmax = std::max(cmax, static_cast<double>(p.chips));
  }
  // The x axis spans 1,000 .. 100,000 chips at least, widened to 1-2-5 values around the data.
  auto down125 = [](double v) {
    const double d = std::pow(10, std::floor(std::log10(v)));
    return v >= 5 * d ? 5 * d : v >= 2 * d ? 2 * d : d;
  };
  auto up125 = [](double v) {
    const double d = std::pow(10, std::floor(std::log10(v)));
    return v <= d ? d : v <= 2 * d ? 2 * d : v <= 5 * d ? 5 * d : 10 * d;
  };
  const double lo = down125(std::min(1000.0, cmin)), hi = up125(std::max(1e5, cmax));
  bool any_ci = false;
  for (const auto& p : sw.points)
    for (const auto& [n, v] : p.variants) any_ci = any_ci || v.has_ci;

  std::vector<LegendItem> items;
  for (std::size_t i = 0; i < sw.variants.size(); ++i)
    items.push_back(
        {LegendItem::mark, series_color(i), i, "", sw.variants[i].first, sw.variants[i].second});
  items.push_back({LegendItem::line, "#374151", 0, "", "goodput", ""});
  items.push_back({LegendItem::line, "#374151", 0, "6 4", "ETTR", ""});
  items.push_back({LegendItem::line, "#111827", 0, "2 3", "MFU (healthy step)", ""});
  if (any_ci) items.push_back({LegendItem::box, "#c7d2fe", 0, "", "95% CI of goodput", ""});
  std::string body;
  const double top = draw_legend(body, items, x0, 42, x1) + 8;
  const double y0 = top + 300, H = y0 + 52;
  const LogScale x{lo, hi, x0, x1};
  const LinearScale y{0, 1, y0, top, 0.1};
  const std::string title =
      fmt::format("Goodput and ETTR against scale{}{}", sw.model.empty() ? "" : ": " + sw.model,
                  sw.device.empty() ? "" : " on " + sw.device);
  std::string s = chart_open("sweep", W, H, title) + body;
  s += axes({x0, x1, log_ticks(x, group_digits), "chips (log scale)"},
            {y0, top, linear_ticks(y, pct_label), "goodput, ETTR, MFU"});
  auto Y = [&](double v) { return y(std::clamp(v, 0.0, 1.0)); };
  // MFU of the healthy step at each scale: the ceiling goodput approaches.
  std::string mfu;
  for (const auto& p : sw.points)
    if (std::isfinite(p.mfu))
      mfu += fmt::format("{:.1f},{:.1f} ", x(static_cast<double>(p.chips)), Y(p.mfu));
  if (!mfu.empty())
    s += fmt::format(
        "<polyline class=\"mfu\" points=\"{}\"><title>MFU of a healthy step</title></polyline>",
        mfu);
  for (std::size_t i = 0; i < sw.variants.size(); ++i) {
    const auto& [name, what] = sw.variants[i];
    const char* col = series_color(i);
    std::string band_hi, band_lo, gp, et;
    for (const auto& p : sw.points) {
      const ClusterVariantPoint& v = p.variants.at(name);
      const double px = x(static_cast<double>(p.chips));
      band_hi += fmt::format("{:.1f},{:.1f} ", px, Y(v.goodput_hi));
      band_lo.insert(0, fmt::format("{:.1f},{:.1f} ", px, Y(v.goodput_lo)));
      gp += fmt::format("{:.1f},{:.1f} ", px, Y(v.goodput));
      et += fmt::format("{:.1f},{:.1f} ", px, Y(v.ettr));
    }
    s += fmt::format("<g class=\"variant\" data-variant=\"{}\"><title>{}: {}</title>", esc(name),
                     esc(name), esc(what));
    if (any_ci)
      s += fmt::format("<polygon class=\"band\" points=\"{}{}\" fill=\"{}\"></polygon>", band_hi,
                       band_lo, col);
    s += fmt::format("<polyline class=\"gline\" points=\"{}\" stroke=\"{}\"></polyline>", gp, col);
    s += fmt::format("<polyline class=\"eline\" points=\"{}\" stroke=\"{}\"></polyline>", et, col);
    for (const auto& p : sw.points) {
      const ClusterVariantPoint& v = p.variants.at(name);
      const double px = x(static_cast<double>(p.chips));
      const std::string ci =
          v.has_ci ? fmt::format(" [95% CI {} .. {}]", pct(v.goodput_lo), pct(v.goodput_hi)) : "";
      const std::string eci =
          v.has_ci ? fmt::format(" [95% CI {} .. {}]", pct(v.ettr_lo), pct(v.ettr_hi)) : "";
      if (v.has_ci)
        s += fmt::format(
            "<line class=\"whisker\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
            "stroke=\"{3}\"></line>",
            px, Y(v.ettr_lo), Y(v.ettr_hi), col);
      s += marker(
          i, px, Y(v.goodput), 4.2, fmt::format("class=\"gp\" fill=\"{}\" stroke=\"{}\"", col, col),
          fmt::format("{} at {} chips: goodput {}{}; MFU {}", name,
                      group_digits(static_cast<double>(p.chips)), pct(v.goodput), ci, pct(p.mfu)));
      s += marker(
          i, px, Y(v.ettr), 3.6,
          fmt::format("class=\"et\" fill=\"#ffffff\" stroke=\"{}\" stroke-width=\"1.4\"", col),
          fmt::format("{} at {} chips: ETTR {}{}", name, group_digits(static_cast<double>(p.chips)),
                      pct(v.ettr), eci));
    }
    s += "</g>";
  }
  s += "</svg>";
  return s;
}

}  // namespace attain::report
