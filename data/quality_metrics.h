// QualityMetrics of a forecast against the truth, in the data's own units:
// RMSE, MAE, NSE (Nash-Sutcliffe efficiency, 1 - SSE / sum (y - mean y)^2,
// as hydrology uses it) and R^2 (the squared Pearson correlation of
// prediction and truth). The means of NSE and R^2 are each station's own
// over the values it was given, so that one station's level against
// another's counts as no skill: for one station they are the usual ones;
// for many, NSE is each station's NSE weighted by its variance. A forecast
// of each station's mean scores NSE 0 however far apart the stations are.
// Accumulates in double; feed it batch by batch.
//
//   QualityAccumulator q;
//   q.Add(predicted, truth, station);
//   QualityMetrics m = q.Finish();
#ifndef HPT_DATA_QUALITY_METRICS_H_
#define HPT_DATA_QUALITY_METRICS_H_

#include <cstdint>
#include <vector>

#include "proto/job_service.pb.h"

namespace hpt {

class QualityAccumulator {
 public:
  // `station`: the series the value belongs to (0 and up).
  void Add(double prediction, double truth, int64_t station = 0);
  // Values of one station.
  void Add(const std::vector<float>& prediction, const std::vector<float>& truth,
           int64_t station = 0);
  // NSE and R^2 are 0 when the truth (or the prediction) is constant
  // within every station.
  QualityMetrics Finish() const;

 private:
  // A station's sums about its first truth and prediction (shift_y,
  // shift_p), so that a level far from 0 costs no precision.
  struct Sums {
    int64_t n = 0;
    double shift_y = 0, shift_p = 0;
    double y = 0, y2 = 0, p = 0, p2 = 0, py = 0;
  };
  int64_t n_ = 0;
  double sum_sq_err_ = 0, sum_abs_err_ = 0;
  std::vector<Sums> stations_;
};

// Forecast skill over a reference: 1 - rmse / reference_rmse (1: perfect,
// 0: no better than the reference, below 0: worse). 0 where the reference
// is perfect itself.
double ForecastSkill(double rmse, double reference_rmse);

}  // namespace hpt

#endif  // HPT_DATA_QUALITY_METRICS_H_
