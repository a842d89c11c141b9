#include "pages/svg.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hpt {

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(double value, int digits) {
  if (!std::isfinite(value)) return "–";
  if (value != 0 && std::fabs(value) < 1e-3) return absl::StrFormat("%.*e", digits - 1, value);
  return absl::StrFormat("%.*g", digits, value);
}

std::string RatioOrDash(double ratio) { return ratio > 0 ? Num(ratio, 3) + "×" : "–"; }

std::string Seconds(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-3) return Num(s * 1e6, 3) + " µs";
  if (a < 1) return Num(s * 1e3, 3) + " ms";
  if (a < 600) return Num(s, 3) + " s";
  return Num(s / 3600, 3) + " h";
}

std::string Joules(double j) {
  const double a = std::fabs(j);
  if (a == 0) return "0 J";
  if (a < 1e-3) return Num(j * 1e6, 3) + " µJ";
  if (a < 1) return Num(j * 1e3, 3) + " mJ";
  if (a < 1e4) return Num(j, 3) + " J";
  return Num(j / 3.6e6, 3) + " kWh";
}

std::vector<double> Ticks(double lo, double hi, int target, bool log) {
  std::vector<double> ticks;
  if (!(hi > lo)) return {lo};
  if (log && lo > 0) {
    for (double p = std::floor(std::log10(lo)); p <= std::ceil(std::log10(hi)); ++p) {
      const double v = std::pow(10.0, p);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
    }
    if (ticks.size() >= 2) return ticks;
    ticks.clear();  // less than a decade: round linear ticks read better
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return ticks;
}

PlotArea::PlotArea(int width, int height, int left, int right, int top, int bottom)
    : width_(width), height_(height), left_(left), right_(right), top_(top), bottom_(bottom) {}

void PlotArea::SetX(double lo, double hi, bool log) {
  x_log_ = log && lo > 0;
  x_lo_ = lo;
  x_hi_ = hi > lo ? hi : lo + 1;
}

void PlotArea::SetY(double lo, double hi, bool log) {
  y_log_ = log && lo > 0;
  y_lo_ = lo;
  y_hi_ = hi > lo ? hi : lo + 1;
}

namespace {
double Fraction(double v, double lo, double hi, bool log) {
  if (log) {
    v = std::max(v, lo);
    return (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
  }
  return (v - lo) / (hi - lo);
}
}  // namespace

double PlotArea::X(double v) const {
  return left_ + Fraction(v, x_lo_, x_hi_, x_log_) * (width_ - left_ - right_);
}

double PlotArea::Y(double v) const {
  return height_ - bottom_ - Fraction(v, y_lo_, y_hi_, y_log_) * (height_ - top_ - bottom_);
}

void PlotArea::Axes(const std::string& x_label, const std::string& y_label, bool y_ticks) {
  std::string axes;
  for (double t : y_ticks ? Ticks(y_lo_, y_hi_, y_tick_target_, y_log_) : std::vector<double>()) {
    const double y = Y(t);
    absl::StrAppend(&axes, absl::StrFormat(
        "<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>"
        "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
        left_, right_edge(), y, y, left_ - 6, y + 4, Num(t, 3) + y_unit_));
  }
  std::vector<std::pair<double, std::string>> x_ticks = x_ticks_;
  if (x_ticks.empty()) {
    for (double t : Ticks(x_lo_, x_hi_, 8, x_log_)) {
      if (!x_whole_ || t == std::round(t)) x_ticks.emplace_back(t, Num(t, 4));
    }
  }
  for (const auto& [t, label] : x_ticks) {
    const double x = X(t);
    absl::StrAppend(&axes, absl::StrFormat(
        "<line class=\"tick-mark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>"
        "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
        x, x, bottom_edge(), bottom_edge() + 4, x, bottom_edge() + 16, Escape(label)));
  }
  absl::StrAppend(&axes, absl::StrFormat(
      "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>"
      "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>"
      "<text class=\"label\" transform=\"translate(14 %d) rotate(-90)\" "
      "text-anchor=\"middle\">%s</text>",
      left_, right_edge(), bottom_edge(), bottom_edge(), (left_ + right_edge()) / 2,
      height_ - 6, Escape(x_label), (top_ + bottom_edge()) / 2, Escape(y_label)));
  body = axes + body;
}

std::string PlotArea::Svg(const std::string& id, const std::string& attributes) const {
  return absl::StrFormat(
      "<svg id=\"%s\" class=\"plot\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
      "role=\"img\" %s>%s</svg>",
      id, width_, height_, width_, height_, attributes, body);
}

std::string Points(const std::vector<std::pair<double, double>>& pixels) {
  std::string out;
  for (const auto& [x, y] : pixels) {
    absl::StrAppend(&out, out.empty() ? "" : " ", absl::StrFormat("%.1f,%.1f", x, y));
  }
  return out;
}

}  // namespace hpt
