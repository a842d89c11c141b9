#include "benchmarks/frontier_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/frontier_plot.h"
#include "benchmarks/seed_stats.h"
#include "common/gpu_baseline.h"
#include "data/quality_metrics.h"
#include "devices/work_cost.h"

namespace hpt {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Pct(double fraction) { return absl::StrFormat("%.0f %%", fraction * 100); }

// Each seed's switch step of rule `i` ("-" never) and knee, in words.
std::string SeedLine(const SeedRun& s, const std::vector<std::string>& rules) {
  std::string line = absl::StrFormat("  seed %-3d %5d steps (window %d)  knee %-5d RMSE full %.4f "
                                     "at knee %.4f ",
                                     s.seed, s.total_steps, s.window, s.knee, s.rmse_full,
                                     s.rmse_at.at(s.knee));
  for (size_t i = 0; i < s.rules.size() && i < rules.size(); ++i) {
    const RuleRun& r = s.rules[i];
    std::string never = "never";
    if (r.closest_loss >= 0) {
      // How close its checks came: each test's least margin (< 1 passes).
      never = absl::StrFormat("never (closest: loss %.2g, weights %.2g; %d trials)",
                              r.closest_loss, r.closest_weight, r.trials);
    }
    absl::StrAppend(&line, " ", rules[i], " ",
                    r.step >= 0 ? absl::StrFormat("%d (%.4f)", r.step, r.rmse) : never);
    if (!r.layer_steps.empty()) {  // each layer's switch, and its own run's RMSE
      absl::StrAppend(&line, absl::StrFormat(" [layers %s; RMSE %.4f]",
                                             absl::StrJoin(r.layer_steps, ","), r.rmse));
    }
  }
  if (s.devices_step >= 0) {
    absl::StrAppend(&line, absl::StrFormat("  devices at %d: %.4f (GPU %.4f)", s.devices_step,
                                           s.devices_rmse, s.rmse_at.at(s.devices_step)));
  }
  return line;
}

}  // namespace

Projection Project(const App& app, int64_t step, int trials, int64_t total_steps) {
  Projection p;
  const int64_t at = step >= 0 && step < total_steps ? step : -1;
  for (const JobCosts& c : app.costs) {
    p.time.push_back(ProjectedRatio(c, app.length, false, at, trials));
    p.energy.push_back(ProjectedRatio(c, app.length, true, at, trials));
  }
  return p;
}

std::string FormatSeedRun(const SeedRun& s) {
  std::string out;
  if (!s.error.empty()) return absl::StrCat("error ", s.error, "\n");
  absl::StrAppend(&out, "seed ", s.seed, "\ntotal_steps ", s.total_steps, "\nwindow ", s.window,
                  absl::StrFormat("\nrmse_full %.17g\nknee %d\nwall_s %.3f\n", s.rmse_full,
                                  s.knee, s.wall_s));
  absl::StrAppend(&out, "grid ", absl::StrJoin(s.grid, " "), "\n");
  for (const auto& [at, rmse] : s.rmse_at) {
    absl::StrAppend(&out, absl::StrFormat("point %d %.17g\n", at, rmse));
  }
  for (const RuleRun& r : s.rules) {
    absl::StrAppend(&out, absl::StrFormat("rule %s %d %d %.17g %.17g %.17g\n", r.rule, r.step,
                                          r.trials, r.rmse, r.closest_loss, r.closest_weight));
    if (!r.layer_steps.empty()) {
      absl::StrAppend(&out, "layers ", r.rule, " ", absl::StrJoin(r.layer_steps, " "), "\n");
    }
  }
  if (s.devices_step >= 0) {
    absl::StrAppend(&out, absl::StrFormat("devices %d %.17g\n", s.devices_step, s.devices_rmse));
  }
  return out;
}

absl::Status ParseSeedRun(const std::string& text, SeedRun* s) {
  if (text.empty()) return absl::DataLossError("no result (the child process died)");
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> f = absl::StrSplit(line, ' ');
    const std::string& key = f[0];
    auto number = [&](size_t i) { return i < f.size() ? std::stod(f[i]) : 0.0; };
    if (key == "error") {
      s->error = std::string(line.substr(6));
    } else if (key == "seed") {
      s->seed = uint64_t(number(1));
    } else if (key == "total_steps") {
      s->total_steps = int64_t(number(1));
    } else if (key == "window") {
      s->window = int64_t(number(1));
    } else if (key == "rmse_full") {
      s->rmse_full = number(1);
    } else if (key == "knee") {
      s->knee = int64_t(number(1));
    } else if (key == "wall_s") {
      s->wall_s = number(1);
    } else if (key == "grid") {
      for (size_t i = 1; i < f.size(); ++i) s->grid.push_back(int64_t(number(i)));
    } else if (key == "point") {
      s->rmse_at[int64_t(number(1))] = number(2);
    } else if (key == "rule" && f.size() == 7) {
      s->rules.push_back(
          {f[1], int64_t(number(2)), int(number(3)), number(4), number(5), number(6), {}});
    } else if (key == "layers" && f.size() >= 2 && !s->rules.empty() &&
               s->rules.back().rule == f[1]) {
      std::vector<int64_t>& steps = s->rules.back().layer_steps;
      for (size_t i = 2; i < f.size(); ++i) steps.push_back(int64_t(number(i)));
    } else if (key == "devices") {
      s->devices_step = int64_t(number(1));
      s->devices_rmse = number(2);
    } else {
      return absl::DataLossError(absl::StrCat("unreadable line '", line, "'"));
    }
  }
  if (s->error.empty() && s->rmse_at.count(s->total_steps) == 0) {
    return absl::DataLossError("no never-switched point");
  }
  return absl::OkStatus();
}

int64_t KneeOf(const SeedRun& s, double tolerance) {
  std::vector<int64_t> candidates = s.grid;
  candidates.push_back(s.total_steps);
  double best = s.rmse_at.at(s.total_steps);
  for (int64_t at : candidates) best = std::min(best, s.rmse_at.at(at));
  for (int64_t at : candidates) {
    if (s.rmse_at.at(at) <= best * (1 + tolerance)) return at;
  }
  return s.total_steps;
}

RuleSummary SummarizeRule(const App& app, size_t i) {
  RuleSummary out;
  std::vector<double> distance, signed_steps, ratio, time_lost, quality_lost, paper, fastest;
  for (const SeedRun& s : app.seeds) {
    if (!s.error.empty() || i >= s.rules.size()) continue;
    const RuleRun& r = s.rules[i];
    out.rule = r.rule;
    ++out.seeds;
    const bool switched = r.step >= 0 && r.step < s.total_steps;
    if (switched) ++out.switched;
    const int64_t at = switched ? r.step : s.total_steps;
    distance.push_back(std::abs(double(at - s.knee)) / double(s.total_steps));
    signed_steps.push_back(double(at - s.knee));
    ratio.push_back(r.rmse / s.rmse_full);
    const Projection mine = Project(app, at, r.trials, s.total_steps);
    const Projection knee = Project(app, s.knee, 0, s.total_steps);
    if (at > s.knee) time_lost.push_back(knee.time[0] / mine.time[0] - 1);
    if (at < s.knee) quality_lost.push_back(r.rmse / s.rmse_at.at(s.knee) - 1);
    paper.push_back(mine.time[0]);
    fastest.push_back(mine.time[app.fastest]);
  }
  out.median_distance = Median(distance);
  out.worst_distance = distance.empty() ? 0 : *std::max_element(distance.begin(), distance.end());
  out.median_signed_steps = Median(signed_steps);
  out.mean_rmse_ratio = Summarize(ratio).mean;
  out.worst_rmse_ratio = ratio.empty() ? 0 : *std::max_element(ratio.begin(), ratio.end());
  out.median_time_lost = Median(time_lost);
  out.median_quality_lost = Median(quality_lost);
  out.mean_time_paper = Summarize(paper).mean;
  out.mean_time_fastest = Summarize(fastest).mean;
  return out;
}

std::string ChooseDefault(const std::vector<App>& apps, const std::vector<std::string>& rules,
                          std::string* why) {
  std::string best;
  double best_distance = 0, best_time = 0;
  const bool any = std::any_of(apps.begin(), apps.end(),
                               [](const App& a) { return a.error.empty() && !a.seeds.empty(); });
  if (!any) {
    *why = "  no application was measured\n";
    return "";
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    std::vector<std::string> misses;
    double worst_median = 0, time = 0;
    for (const App& app : apps) {
      if (!app.error.empty()) continue;
      const RuleSummary s = SummarizeRule(app, i);
      if (s.switched < 0.8 * s.seeds) {
        misses.push_back(absl::StrCat(app.name, ": switches in ", s.switched, " of ", s.seeds));
      }
      if (s.worst_rmse_ratio > 1.05) {
        misses.push_back(absl::StrFormat("%s: RMSE %.3f of full in its worst seed", app.name,
                                         s.worst_rmse_ratio));
      }
      if (s.median_distance > 0.25) {
        misses.push_back(absl::StrFormat("%s: median distance to the knee %s of the run",
                                         app.name, Pct(s.median_distance)));
      }
      worst_median = std::max(worst_median, s.median_distance);
      time += s.mean_time_fastest / double(apps.size());
    }
    absl::StrAppend(why, "  ", rules[i], ": ",
                    misses.empty() ? absl::StrFormat("qualifies (worst median distance %s, "
                                                     "mean time saving %.2fx vs the fastest)",
                                                     Pct(worst_median), time)
                                   : absl::StrJoin(misses, "; "),
                    "\n");
    if (!misses.empty()) continue;
    const bool closer = best.empty() || worst_median < best_distance - 0.025;
    const bool tie = !best.empty() && std::abs(worst_median - best_distance) <= 0.025;
    if (closer || (tie && time > best_time)) {
      best = rules[i];
      best_distance = worst_median;
      best_time = time;
    }
  }
  return best;
}

void PrintRuleAtPaperLength(const std::vector<App>& apps, size_t rule_index) {
  const std::vector<GpuBaseline::Name> all = AllGpuBaselines();
  std::string rule;
  for (const App& app : apps) {
    for (const SeedRun& s : app.seeds) {
      if (rule_index < s.rules.size()) rule = s.rules[rule_index].rule;
    }
  }
  std::printf("\nRule %s in paper_table's terms (RMSE: LoRA phase on the GPU worker; time / "
              "energy: GPU-only over HpT, projected to the paper's epochs at its size and "
              "batch 1, means over the seeds)\n%-8s %-40s %-16s %-8s",
              rule.c_str(), "app", "switch step", "RMSE/full", "p worse");
  for (GpuBaseline::Name b : all) std::printf(" %-15s", GpuBaselineName(b).c_str());
  std::printf(" least saving\n");
  for (const App& app : apps) {
    if (!app.error.empty()) continue;
    std::vector<int64_t> steps;
    std::vector<double> ratio, rmse, full;
    std::vector<std::vector<double>> time(all.size()), energy(all.size());
    for (const SeedRun& s : app.seeds) {
      if (!s.error.empty() || rule_index >= s.rules.size()) continue;
      const RuleRun& r = s.rules[rule_index];
      const int64_t at = r.step >= 0 && r.step < s.total_steps ? r.step : -1;
      steps.push_back(at);
      ratio.push_back(r.rmse / s.rmse_full);
      rmse.push_back(r.rmse);
      full.push_back(s.rmse_full);
      for (size_t b = 0; b < all.size() && b < app.costs.size(); ++b) {
        time[b].push_back(ProjectedRatio(app.costs[b], app.paper_length, false, at, r.trials));
        energy[b].push_back(ProjectedRatio(app.costs[b], app.paper_length, true, at, r.trials));
      }
    }
    const Spread q = Summarize(ratio);
    std::printf("%-8s %-40s %-16s %-8s", app.name.c_str(),
                FormatSwitches(SummarizeSwitches(steps)).c_str(),
                absl::StrFormat("%.3f +- %.3f", q.mean, q.sd).c_str(),
                absl::StrFormat("%.2g", PairedGreaterTest(rmse, full).p_one_sided).c_str());
    size_t least = 0;
    for (size_t b = 0; b < all.size(); ++b) {
      const double t = Summarize(time[b]).mean, e = Summarize(energy[b]).mean;
      std::printf(" %-15s", absl::StrFormat("%.2fx / %.2fx", t, e).c_str());
      if (t < Summarize(time[least]).mean) least = b;
    }
    std::printf(" %s, %.2fx\n", GpuBaselineName(all[least]).c_str(),
                Summarize(time[least]).mean);
  }
}

void PrintFrontier(const std::vector<App>& apps, const std::vector<std::string>& rules) {
  for (const App& app : apps) {
    if (!app.error.empty()) {
      std::printf("%s failed: %s\n", app.name.c_str(), app.error.c_str());
      continue;
    }
    std::printf("\n%s (time against %s, the fastest GPU-only baseline: %s)\n", app.name.c_str(),
                GpuBaselineName(AllGpuBaselines()[app.fastest]).c_str(),
                "the shortest full step");
    for (const SeedRun& s : app.seeds) {
      std::printf("%s\n", s.error.empty() ? SeedLine(s, rules).c_str()
                                          : absl::StrCat("  seed ", s.seed, " failed: ",
                                                         s.error).c_str());
    }
  }
  std::printf("\nRules against the knee (distance: |switch - knee| over the run, a seed that "
              "never switched counted at the run's end; RMSE / full-parameter; time lost: "
              "HpT's extra time over switching at the knee against the paper's baseline, median "
              "over the seeds where the rule is later (negative: later is faster); quality "
              "lost: RMSE over the knee's, median where it is earlier; time: GPU-only / HpT "
              "projected, against paper | the fastest)\n");
  std::printf("%-8s %-12s %-9s %-18s %-10s %-16s %-10s %-10s %s\n", "app", "rule", "switched",
              "distance med/worst", "steps med", "RMSE ratio mean/max", "time lost",
              "qual lost", "time paper | fastest");
  for (const App& app : apps) {
    if (!app.error.empty()) continue;
    for (size_t i = 0; i < rules.size(); ++i) {
      const RuleSummary s = SummarizeRule(app, i);
      std::printf("%-8s %-12s %-9s %-18s %-10.0f %-19s %-10s %-10s %.2fx | %.2fx\n",
                  app.name.c_str(), rules[i].c_str(),
                  absl::StrCat(s.switched, " of ", s.seeds).c_str(),
                  absl::StrCat(Pct(s.median_distance), " / ", Pct(s.worst_distance)).c_str(),
                  s.median_signed_steps,
                  absl::StrFormat("%.3f / %.3f", s.mean_rmse_ratio, s.worst_rmse_ratio).c_str(),
                  Pct(s.median_time_lost).c_str(), Pct(s.median_quality_lost).c_str(),
                  s.mean_time_paper, s.mean_time_fastest);
    }
  }
  PrintSkill(apps, rules);
}

void PrintSkill(const std::vector<App>& apps, const std::vector<std::string>& rules) {
  std::printf("\nForecast skill on the test split, 1 - RMSE / persistence's (persistence: each "
              "station's last input value; RMSE in the data's units, means over the seeds; "
              "full: the early-stopped never-switched run)\n");
  std::printf("%-8s %-12s %-38s %-18s", "app", "persistence", "climatology", "full RMSE/skill");
  for (const std::string& rule : rules) std::printf(" %-22s", (rule + " RMSE/skill").c_str());
  std::printf("\n");
  for (const App& app : apps) {
    const double p = app.reference.persistence_rmse();
    if (!app.error.empty() || p <= 0) continue;
    double full = 0;
    std::vector<double> rule_rmse(rules.size(), 0);
    int n = 0;
    for (const SeedRun& s : app.seeds) {
      if (!s.error.empty()) continue;
      ++n;
      full += s.rmse_full;
      for (size_t i = 0; i < rules.size() && i < s.rules.size(); ++i) {
        rule_rmse[i] += s.rules[i].rmse;
      }
    }
    if (n == 0) continue;
    std::printf("%-8s %-12.4g %-38s %-18s", app.name.c_str(), p,
                absl::StrFormat("%.4g (%s)", app.reference.climatology_rmse(),
                                app.reference.climatology()).c_str(),
                absl::StrFormat("%.4g / %.3f", full / n, ForecastSkill(full / n, p)).c_str());
    for (double r : rule_rmse) {
      std::printf(" %-22s", absl::StrFormat("%.4g / %.3f", r / n, ForecastSkill(r / n, p)).c_str());
    }
    std::printf("\n");
  }
}

namespace {

// One application's plot and its line in index.html.
void WritePlot(const std::string& dir, const std::string& app,
               const std::vector<FrontierSeries>& series, int64_t total,
               const std::string& fastest, const std::string& plot_rule, std::string* html) {
  const std::string file = absl::StrCat("frontier-", app, ".svg");
  std::ofstream(dir + "/" + file) << FrontierSvg(app, series, total, fastest, plot_rule);
  absl::StrAppend(html, "<p><img src=\"", file, "\" alt=\"", app, " frontier\"></p>");
}

constexpr char kIndexHead[] =
    "<!doctype html><meta charset=\"utf-8\"><title>HpT switch frontier</title>"
    "<body style=\"font-family:sans-serif\"><h1>Switch frontier</h1>";

}  // namespace

void WriteFrontierFiles(const std::vector<App>& apps, const std::vector<std::string>& rules,
                        const std::string& plot_rule, const std::string& dir) {
  std::ofstream tsv(dir + "/frontier.tsv");
  tsv << "app\tseed\tswitch_step\ttotal_steps\twhat\trmse\trmse_over_full";
  for (GpuBaseline::Name b : AllGpuBaselines()) tsv << "\ttime_" << GpuBaselineName(b);
  for (GpuBaseline::Name b : AllGpuBaselines()) tsv << "\tenergy_" << GpuBaselineName(b);
  tsv << "\n";
  std::string html = kIndexHead;
  const auto rule_at = std::find(rules.begin(), rules.end(), plot_rule) - rules.begin();
  for (const App& app : apps) {
    if (!app.error.empty()) continue;
    std::vector<FrontierSeries> series;
    int64_t total = 0;
    for (const SeedRun& s : app.seeds) {
      if (!s.error.empty()) continue;
      FrontierSeries f;
      f.seed = s.seed;
      f.knee = s.knee;
      if (size_t(rule_at) < s.rules.size()) {
        const RuleRun& r = s.rules[size_t(rule_at)];
        f.rule_step = r.step >= 0 && r.step < s.total_steps ? r.step : s.total_steps;
      }
      total = std::max(total, s.total_steps);
      for (const auto& [at, rmse] : s.rmse_at) {
        const Projection p = Project(app, at, 0, s.total_steps);
        f.points.push_back({at, rmse / s.rmse_full, p.time[0], p.time[app.fastest]});
        std::string what = at == s.total_steps ? "never" : "";
        for (const RuleRun& r : s.rules) {
          if (r.step == at) absl::StrAppend(&what, what.empty() ? "" : ",", "rule:", r.rule);
        }
        if (std::find(s.grid.begin(), s.grid.end(), at) != s.grid.end()) {
          what = what.empty() ? "grid" : "grid," + what;
        }
        tsv << app.name << "\t" << s.seed << "\t" << at << "\t" << s.total_steps << "\t" << what
            << "\t" << rmse << "\t" << rmse / s.rmse_full;
        for (double v : p.time) tsv << "\t" << v;
        for (double v : p.energy) tsv << "\t" << v;
        tsv << "\n";
      }
      series.push_back(std::move(f));
    }
    WritePlot(dir, app.name, series, total, GpuBaselineName(AllGpuBaselines()[app.fastest]),
              plot_rule, &html);
  }
  std::ofstream(dir + "/index.html") << html << "</body>\n";
}

absl::Status ReplotFrontier(const std::string& dir, const std::string& plot_rule,
                            double knee_tolerance) {
  std::ifstream in(dir + "/frontier.tsv");
  if (!in) return absl::NotFoundError(absl::StrCat(dir, "/frontier.tsv: cannot be read"));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = absl::StrSplit(line, '\t');
  const size_t first_time = 7;  // app seed step total what rmse ratio, then time_*
  size_t baselines = 0;
  while (first_time + baselines < header.size() &&
         absl::StartsWith(header[first_time + baselines], "time_")) {
    ++baselines;
  }
  // app -> seed -> its run and its points.
  std::map<std::string, std::map<uint64_t, std::pair<SeedRun, FrontierSeries>>> apps;
  std::vector<std::string> order;
  // Per app, the fastest baseline: the one HpT saves least time against at
  // its first row (every point of the app is read against it).
  std::map<std::string, size_t> fastest;
  int row = 1;
  while (std::getline(in, line)) {
    ++row;
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() < first_time + 2 * baselines) {
      return absl::InvalidArgumentError(absl::StrCat(dir, "/frontier.tsv line ", row, ": ",
                                                     f.size(), " fields, too few"));
    }
    if (apps.count(f[0]) == 0) {
      order.push_back(f[0]);
      size_t least = 0;
      for (size_t b = 0; b < baselines; ++b) {
        if (std::stod(f[first_time + b]) < std::stod(f[first_time + least])) least = b;
      }
      fastest[f[0]] = least;
    }
    auto& [seed, series] = apps[f[0]][std::stoull(f[1])];
    const int64_t at = std::stoll(f[2]);
    seed.seed = series.seed = std::stoull(f[1]);
    seed.total_steps = std::stoll(f[3]);
    seed.rmse_at[at] = std::stod(f[5]);
    if (absl::StrContains(f[4], "grid")) seed.grid.push_back(at);
    if (absl::StrContains(f[4], "rule:" + plot_rule)) series.rule_step = at;
    series.points.push_back({at, std::stod(f[6]), std::stod(f[first_time]),
                             std::stod(f[first_time + fastest[f[0]]])});
  }
  std::string html = kIndexHead;
  for (const std::string& app : order) {
    std::vector<FrontierSeries> series;
    int64_t total = 0;
    for (auto& [id, run] : apps[app]) {
      auto& [seed, f] = run;
      f.knee = KneeOf(seed, knee_tolerance);
      if (f.rule_step < 0) f.rule_step = seed.total_steps;  // never switched
      total = std::max(total, seed.total_steps);
      series.push_back(f);
    }
    WritePlot(dir, app, series, total, header[first_time + fastest[app]].substr(5), plot_rule,
              &html);
  }
  std::ofstream(dir + "/index.html") << html << "</body>\n";
  return absl::OkStatus();
}

}  // namespace hpt
