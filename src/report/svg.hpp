// Internal to src/report: escaping, number formatting, log scales and the charts (inline SVG).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "attain/report.hpp"

namespace attain::report {

// Text for HTML/SVG: & < > " ' escaped, and "://" broken so the page holds no URL.
std::string esc(std::string_view s);

std::string pct(double fraction);       // 0.431 -> "43.1%"
std::string throughput(double tflops);  // "12.3 TFLOP/s" or "45.6 GFLOP/s"
std::string duration(double s);         // "1.23 ms"

// Maps [lo, hi] (positive values) onto pixels [p0, p1] logarithmically.
struct LogScale {
  double lo = 1, hi = 10, p0 = 0, p1 = 1;
  double operator()(double v) const;
  // Decades covering [min_v, max_v] (at least two).
  static LogScale decades(double min_v, double max_v, double p0, double p1);
};

const char* kind_color(OpKind k);
const char* series_color(std::size_t i);

// A marker of shape `shape` (0 circle, 1 square, 2 triangle, 3 diamond, cycling) centred at
// (x, y) with radius r; `attrs` is added to the element and `title` becomes its hover text.
std::string marker(std::size_t shape, double x, double y, double r, std::string_view attrs,
                   std::string_view title);

// One roofline chart: every ok result of every series of input `file` is one element of
// class "pt" at (FLOPs/byte, achieved throughput), ceilings from machine.ceilings_used.
std::string roofline_svg(const ReportModel& m, std::size_t file);
// Efficiency distribution per series: box (quartiles), whiskers (min, max), geomean marker.
std::string efficiency_box_svg(const ReportModel& m);
// Relative speed per pair: geomean bar from 100%, quartile whisker, median tick (log scale).
std::string speed_svg(const ReportModel& m);

}  // namespace attain::report
