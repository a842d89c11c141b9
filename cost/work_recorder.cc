#include "cost/work_recorder.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace hpt {
namespace {

// Deterministic bytes of a message (map fields in key order).
std::string Key(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

RecordedPhase* PhaseOf(WorkRecord* record, CostPhase::Name phase) {
  for (RecordedPhase& p : *record->mutable_phases()) {
    if (p.phase() == phase) return &p;
  }
  RecordedPhase* p = record->add_phases();
  p->set_phase(phase);
  p->set_first_step(-1);
  p->set_last_step(-1);
  return p;
}

// One board's measured energy among a step's tasks: what they say, and the
// distinct counter intervals it came from.
struct BoardEnergy {
  double said_j = 0;
  std::set<std::pair<double, double>> intervals;
};

// The energy of a board's tasks, the board counted once. Workers sharing a
// board read one counter over spans that overlap, so their tasks' energy
// adds the overlap twice. The counter is monotone, so the union of the
// intervals its readings span is its energy over the union of the spans:
// what the tasks say is scaled by that union over the sum of the distinct
// intervals (1 where none overlap; a run's tasks carry its interval and a
// share of its energy, and the share carries over).
double OnceEach(const BoardEnergy& b) {
  double sum = 0, joined = 0, start = 0, end = -1;
  for (const auto& [from, to] : b.intervals) {  // by start
    sum += to - from;
    if (from > end) {
      joined += std::max(0.0, end - start);
      start = from;
    }
    end = std::max(end, to);
  }
  joined += std::max(0.0, end - start);
  return sum > 0 ? b.said_j * joined / sum : b.said_j;
}

// The GPU tasks among `tasks` as measured: the slowest worker's time (data-
// parallel ranks run side by side) and their energy, each board once.
struct GpuMeasured {
  double s = 0, j = 0;
  bool any = false;
};
GpuMeasured MeasuredGpu(const std::vector<const FinishedTask*>& tasks) {
  std::map<std::string, double> by_worker;
  std::map<std::string, BoardEnergy> boards;
  GpuMeasured m;
  for (const FinishedTask* t : tasks) {
    if (t->kind != DeviceKind::gpu) continue;
    by_worker[t->worker] += t->cost.measured_s();
    m.any = true;
    const CostReport& c = t->cost;
    if (c.board().empty() || !(c.counter_end_j() > c.counter_start_j())) {
      m.j += c.measured_j();
      continue;
    }
    BoardEnergy& b = boards[c.board()];
    b.said_j += c.measured_j();
    b.intervals.insert({c.counter_start_j(), c.counter_end_j()});
  }
  for (const auto& [worker, seconds] : by_worker) m.s = std::max(m.s, seconds);
  for (const auto& [board, energy] : boards) m.j += OnceEach(energy);
  return m;
}

std::vector<const FinishedTask*> Pointers(const std::vector<FinishedTask>& a,
                                          const std::vector<FinishedTask>& b = {}) {
  std::vector<const FinishedTask*> out;
  for (const FinishedTask& t : a) out.push_back(&t);
  for (const FinishedTask& t : b) out.push_back(&t);
  return out;
}

}  // namespace

WorkRecorder::WorkRecorder() {
  record_.set_format_version(1);
  record_.set_switch_step(-1);
}

int WorkRecorder::DeviceIndex(const FinishedTask& task) {
  const std::string& address = task.worker;
  auto [it, fresh] = device_index_.try_emplace(address, record_.devices_size());
  if (fresh) {
    RecordedDevice* d = record_.add_devices();
    d->set_worker(address);
    d->set_kind(task.kind);
  }
  RecordedDevice* d = record_.mutable_devices(it->second);
  if (d->device().empty()) d->set_device(task.cost.device());
  if (d->device_name().empty()) d->set_device_name(task.cost.device_name());
  if (d->measured_by().empty()) d->set_measured_by(task.cost.measured_by());
  if (d->settings().empty() && !task.cost.work().settings().empty()) {
    *d->mutable_settings() = task.cost.work().settings();
  }
  return it->second;
}

RecordedTask WorkRecorder::ToRecorded(const FinishedTask& task) {
  RecordedTask r;
  r.set_device(DeviceIndex(task));
  r.set_type(task.type);
  r.set_resource(task.resource);
  r.set_samples(task.samples);
  r.set_bytes_in(task.bytes_in);
  r.set_bytes_out(task.bytes_out);
  *r.mutable_work() = task.cost.work();
  r.mutable_work()->clear_settings();
  return r;
}

void WorkRecorder::Measure(const FinishedTask& task) {
  RecordedDevice* d = record_.mutable_devices(DeviceIndex(task));
  d->set_tasks(d->tasks() + 1);
  d->set_measured_s(d->measured_s() + task.cost.measured_s());
  d->set_measured_j(d->measured_j() + task.cost.measured_j());
}

WorkRecorder::StepTally WorkRecorder::AddStep(CostPhase::Name phase,
                                              const std::vector<FinishedTask>& main,
                                              const std::vector<FinishedTask>& trial,
                                              int data_parallel_ranks, int64_t step,
                                              double wall_s) {
  StepShape shape;
  shape.set_phase(phase);
  shape.set_data_parallel_ranks(data_parallel_ranks);
  for (const FinishedTask& t : main) *shape.add_main() = ToRecorded(t);
  for (const FinishedTask& t : trial) *shape.add_trial() = ToRecorded(t);
  auto [it, fresh] = shape_index_.try_emplace(Key(shape), record_.shapes_size());
  if (fresh) *record_.add_shapes() = std::move(shape);
  StepTally tally;
  tally.shape = it->second;
  if (phase != CostPhase::off_step) {
    const GpuMeasured main_gpu = MeasuredGpu(Pointers(main));
    const GpuMeasured trial_gpu = MeasuredGpu(Pointers(trial));
    tally.gpu = main_gpu.any || trial_gpu.any;
    tally.main_s = main_gpu.s;
    tally.main_j = main_gpu.j;
    tally.trial_s = trial_gpu.s;
    // A trial runs on the main chain's first worker: its board too.
    if (tally.gpu) tally.all_j = MeasuredGpu(Pointers(main, trial)).j;
  }
  RepeatStep(tally, step, wall_s);
  return tally;
}

void WorkRecorder::RepeatStep(const StepTally& tally, int64_t step, double wall_s) {
  StepShape& s = *record_.mutable_shapes(tally.shape);
  s.set_count(s.count() + 1);
  const int runs = s.run_last_size();
  if (runs > 0 && s.run_last(runs - 1) + 1 == step) {
    s.set_run_last(runs - 1, step);
  } else if (runs == 0 || s.run_last(runs - 1) != step) {
    s.add_run_first(step);
    s.add_run_last(step);
  }
  if (s.phase() == CostPhase::off_step) return;
  RecordedPhase* p = PhaseOf(&record_, s.phase());
  if (p->steps() == 0) p->set_first_step(step);
  p->set_last_step(step);
  p->set_steps(p->steps() + 1);
  p->set_wall_s(p->wall_s() + wall_s);
  if (tally.gpu) {
    p->set_gpu_steps(p->gpu_steps() + 1);
    p->set_gpu_main_s(p->gpu_main_s() + tally.main_s);
    p->set_gpu_main_j(p->gpu_main_j() + tally.main_j);
    p->set_gpu_all_s(p->gpu_all_s() + tally.main_s + tally.trial_s);
    p->set_gpu_all_j(p->gpu_all_j() + tally.all_j);
  }
}

void WorkRecorder::Restore(const WorkRecord& record) {
  record_ = record;
  device_index_.clear();
  shape_index_.clear();
  for (int i = 0; i < record_.devices_size(); ++i) {
    device_index_[record_.devices(i).worker()] = i;
  }
  for (int i = 0; i < record_.shapes_size(); ++i) {
    StepShape key = record_.shapes(i);
    key.clear_count();
    key.clear_run_first();
    key.clear_run_last();
    shape_index_[Key(key)] = i;
  }
}

}  // namespace hpt
