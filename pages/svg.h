// Small helpers for the pages' inline SVG plots: escaping, compact numbers,
// round axis ticks, and a plot area that maps data to pixels and draws its
// axes. Everything is drawn on the server, so a page needs no script and
// no network to show its plots.
//
//   PlotArea plot(720, 260);
//   plot.SetX(0, steps);
//   plot.SetY(0.01, 2.0, /*log=*/true);
//   plot.Axes("step", "loss");
//   absl::StrAppend(&plot.body, Polyline(...));
//   html += plot.Svg("loss-plot", "data-steps=\"12\"");
#ifndef HPT_PAGES_SVG_H_
#define HPT_PAGES_SVG_H_

#include <string>
#include <utility>
#include <vector>

namespace hpt {

// Text made safe for HTML and SVG content and attribute values.
std::string Escape(const std::string& text);
// A number in at most `digits` significant digits, no exponent below 1e6.
std::string Num(double value, int digits = 4);
// "2.5×" to 3 digits; "–" for a ratio that is not known (0).
std::string RatioOrDash(double ratio);
// Seconds and joules with a unit a person reads: "412 µs", "3.1 ms", "2.4 s".
std::string Seconds(double s);
std::string Joules(double j);

// About `target` round values covering [lo, hi] (1, 2, 5 x 10^k steps), or
// powers of ten for a log axis.
std::vector<double> Ticks(double lo, double hi, int target, bool log);

class PlotArea {
 public:
  PlotArea(int width, int height, int left = 64, int right = 16, int top = 12, int bottom = 40);
  void SetX(double lo, double hi, bool log = false);
  void SetY(double lo, double hi, bool log = false);
  // Labelled x ticks at these values, in place of round ones (a sweep's
  // grid values).
  void SetXTicks(std::vector<std::pair<double, std::string>> ticks) { x_ticks_ = std::move(ticks); }
  // The x axis counts whole things (steps, samples): no tick between them.
  void SetXWhole() { x_whole_ = true; }
  bool x_log() const { return x_log_; }
  // About `target` y ticks (default 5), each label followed by `unit`.
  void SetYTicks(int target, std::string unit) {
    y_tick_target_ = target;
    y_unit_ = std::move(unit);
  }
  // Pixel of a data value (clamped to the plot for log axes' non-positives).
  double X(double v) const;
  double Y(double v) const;
  int left() const { return left_; }
  int right_edge() const { return width_ - right_; }
  int top() const { return top_; }
  int bottom_edge() const { return height_ - bottom_; }
  // Grid, ticks and labels; bar and Gantt charts have no y ticks.
  void Axes(const std::string& x_label, const std::string& y_label, bool y_ticks = true);
  // The <svg> element with `id`, extra attributes, and everything drawn.
  std::string Svg(const std::string& id, const std::string& attributes) const;

  std::string body;

 private:
  int width_, height_, left_, right_, top_, bottom_;
  double x_lo_ = 0, x_hi_ = 1, y_lo_ = 0, y_hi_ = 1;
  bool x_log_ = false, y_log_ = false, x_whole_ = false;
  std::vector<std::pair<double, std::string>> x_ticks_;
  int y_tick_target_ = 5;
  std::string y_unit_;
};

// "x1,y1 x2,y2 ..." for a polyline's points attribute.
std::string Points(const std::vector<std::pair<double, double>>& pixels);

}  // namespace hpt

#endif  // HPT_PAGES_SVG_H_
