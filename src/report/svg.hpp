// Internal to src/report: escaping, number formatting, log scales and the charts (inline SVG).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

// Maps [lo, hi] onto pixels [p0, p1] linearly.
struct LinearScale {
  double lo = 0, hi = 1, p0 = 0, p1 = 1;
  double step = 0;  // between ticks; 0: a fifth of the range
  double operator()(double v) const;
  // [min_v, max_v] widened to multiples of a 1-2-5 step giving about `ticks` intervals.
  static LinearScale nice(double min_v, double max_v, double p0, double p1, int ticks = 6);
};

// An axis as drawn: tick positions in pixels with their labels.
struct Tick {
  double px = 0;
  std::string label;
};
struct Axis {
  double p0 = 0, p1 = 1;  // x: left, right; y: bottom, top
  std::vector<Tick> ticks;
  std::string label;
  double label_mid = -1;  // where the axis label is centred (< 0: the middle of p0..p1)
};
std::vector<Tick> decade_ticks(const LogScale& s);  // 1, 10, 100, ...
// 1, 2, 5, 10, ... inside the scale (decades only beyond four decades); `label` writes each.
std::vector<Tick> log_ticks(const LogScale& s, std::string (*label)(double));
// Multiples of the scale's step; `label` writes each.
std::vector<Tick> linear_ticks(const LinearScale& s, std::string (*label)(double));
// Grid lines at every tick, tick labels, the frame and both axis labels.
std::string axes(const Axis& x, const Axis& y);

std::string group_digits(double v);  // 100000 -> "100,000"

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

// A cluster run's timeline: kept training compute against the wall clock (cluster_progress),
// beside the no-interruption line; one element of class "ev" per interruption (coloured by
// cause, planned ones square), downtime and lost work in lanes below.
std::string timeline_svg(const ClusterRun& r);
// Goodput (solid, one element of class "gp" per point) and ETTR (dashed, class "et") against
// chips on a log axis, one colour per variant, confidence bands where the sweep has them, and
// the healthy-cluster MFU dotted.
std::string sweep_svg(const ClusterSweep& s);

}  // namespace attain::report
