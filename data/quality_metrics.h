// QualityMetrics of a forecast against the truth, in the data's own units:
// RMSE, MAE, NSE (Nash-Sutcliffe efficiency, 1 - SSE / sum (y - mean y)^2,
// as hydrology uses it for SWE) and R^2 (the squared Pearson correlation of
// prediction and truth). Accumulates in double; feed it batch by batch.
//
//   QualityAccumulator q;
//   q.Add(prediction.data, truth.data);
//   QualityMetrics m = q.Finish();
#ifndef HPT_DATA_QUALITY_METRICS_H_
#define HPT_DATA_QUALITY_METRICS_H_

#include <cstdint>
#include <vector>

#include "proto/job_service.pb.h"

namespace hpt {

class QualityAccumulator {
 public:
  void Add(double prediction, double truth);
  void Add(const std::vector<float>& prediction, const std::vector<float>& truth);
  // NSE and R^2 are 0 when the truth (or the prediction) is constant.
  QualityMetrics Finish() const;

 private:
  int64_t n_ = 0;
  double sum_sq_err_ = 0, sum_abs_err_ = 0;
  double sum_y_ = 0, sum_y2_ = 0, sum_p_ = 0, sum_p2_ = 0, sum_py_ = 0;
};

// Forecast skill over a reference: 1 - rmse / reference_rmse (1: perfect,
// 0: no better than the reference, below 0: worse). 0 where the reference
// is perfect itself.
double ForecastSkill(double rmse, double reference_rmse);

}  // namespace hpt

#endif  // HPT_DATA_QUALITY_METRICS_H_
