#include "coordinator/training/checkpoint_codec.h"

#include "absl/strings/str_cat.h"
#include "common/training_phase.h"

namespace hpt {
namespace {

void EncodeController(const PhaseController::State& s, PhaseControllerState* out) {
  out->set_phase(s.phase);
  out->set_window_loss_sum(s.window_loss_sum);
  out->set_window_count(s.window_count);
  for (double v : s.window_losses) out->add_window_losses(v);
  for (double v : s.distances) out->add_distances(v);
  for (double v : s.trial_full) out->add_trial_full(v);
  for (double v : s.trial_lora) out->add_trial_lora(v);
  out->set_switch_iteration(s.switch_step);
  out->set_passes_in_a_row(s.passes_in_a_row);
  out->set_window_loss_square_sum(s.window_loss_square_sum);
  for (double v : s.window_variances) out->add_window_variances(v);
  for (const std::vector<double>& layer : s.layer_distances) {
    out->add_layer_distances()->mutable_values()->Add(layer.begin(), layer.end());
  }
  for (int64_t v : s.layer_switch_steps) out->add_layer_switch_steps(v);
}

PhaseController::State DecodeController(const PhaseControllerState& in) {
  PhaseController::State s;
  s.phase = PhaseOrFull(in.phase());
  s.window_loss_sum = in.window_loss_sum();
  s.window_count = in.window_count();
  s.window_losses.assign(in.window_losses().begin(), in.window_losses().end());
  s.distances.assign(in.distances().begin(), in.distances().end());
  s.trial_full.assign(in.trial_full().begin(), in.trial_full().end());
  s.trial_lora.assign(in.trial_lora().begin(), in.trial_lora().end());
  s.switch_step = in.switch_iteration();
  s.passes_in_a_row = in.passes_in_a_row();
  s.window_loss_square_sum = in.window_loss_square_sum();
  s.window_variances.assign(in.window_variances().begin(), in.window_variances().end());
  for (const LayerDistances& layer : in.layer_distances()) {
    s.layer_distances.emplace_back(layer.values().begin(), layer.values().end());
  }
  s.layer_switch_steps.assign(in.layer_switch_steps().begin(), in.layer_switch_steps().end());
  return s;
}

}  // namespace

CheckpointHeader EncodeCheckpointHeader(const CheckpointIdentity& identity,
                                        const TrainerUpdate& state, const TrainerCursor& cursor,
                                        const PhaseController* controller,
                                        const CostLedger& ledger) {
  CheckpointHeader h;
  h.set_job_id(identity.job_id);
  h.set_step(identity.step);
  h.set_time_unix_ms(identity.time_unix_ms);
  h.set_cause(identity.cause);
  h.set_reason(identity.reason);
  h.set_phase(PhaseOrFull(state.hpt.phase()));
  *h.mutable_model() = identity.model;
  h.set_steps_per_epoch(cursor.steps_per_epoch);
  *h.mutable_progress() = state.progress;
  for (double l : state.epoch_losses) h.add_epoch_losses(l);
  *h.mutable_history() = state.history->ToProto();
  *h.mutable_test_metrics() = state.test_metrics;
  *h.mutable_hpt() = state.hpt;
  h.set_epoch_loss_sum(cursor.epoch_loss_sum);
  h.set_samples(cursor.samples);
  if (controller != nullptr) EncodeController(controller->state(), h.mutable_controller());
  for (float w : cursor.last_weights) h.add_last_weights(w);
  h.set_trial_active(cursor.trial_active);
  h.set_main_updates(cursor.main_updates);
  h.set_trial_updates(cursor.trial_updates);
  ledger.SaveTo(&h);
  h.set_elapsed_s(identity.elapsed_s);
  return h;
}

absl::Status DecodeCheckpointHeader(const CheckpointHeader& h, CheckpointIdentity* identity,
                                    TrainerUpdate* state, TrainerCursor* cursor,
                                    PhaseController* controller, CostLedger* ledger) {
  if (h.job_id() != identity->job_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the checkpoint is job ", h.job_id(), "'s, not ", identity->job_id, "'s"));
  }
  if (h.steps_per_epoch() != cursor->steps_per_epoch) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the checkpoint at step ", h.step(), " was made with ", h.steps_per_epoch(),
        " steps per epoch; the job now has ", cursor->steps_per_epoch,
        " (its data or batch size changed)"));
  }
  identity->step = h.step();
  identity->model = h.model();
  identity->elapsed_s = h.elapsed_s();
  state->progress = h.progress();
  state->epoch_losses.assign(h.epoch_losses().begin(), h.epoch_losses().end());
  state->history = StepHistory::FromProto(h.history(), h.step());
  state->test_metrics = h.test_metrics();
  state->hpt = h.hpt();
  cursor->epoch_loss_sum = h.epoch_loss_sum();
  cursor->samples = h.samples();
  cursor->last_weights.assign(h.last_weights().begin(), h.last_weights().end());
  cursor->trial_active = h.trial_active();
  cursor->main_updates = h.main_updates();
  cursor->trial_updates = h.trial_updates();
  cursor->lora_phase = h.phase() == TrainingPhase::lora;
  ledger->RestoreFrom(h);
  if (controller != nullptr) controller->Restore(DecodeController(h.controller()));
  return absl::OkStatus();
}

PhaseEvent ToPhaseEvent(const ControllerEvent& e, int64_t time_unix_ms) {
  PhaseEvent out;
  out.set_iteration(e.step);
  out.set_time_unix_ms(time_unix_ms);
  out.set_reason(e.reason);
  switch (e.kind) {
    case ControllerEvent::Kind::kCheck:
      out.set_kind(PhaseEvent::CHECK);
      for (double l : e.losses) out.add_window_losses(l);
      for (double d : e.distances) out.add_weight_distances(d);
      out.set_loss_passed(e.loss_passed);
      out.set_weight_passed(e.weight_passed);
      out.set_loss_margin(e.loss_margin);
      out.set_weight_margin(e.weight_margin);
      out.set_loss_detail(e.loss_detail);
      out.set_weight_detail(e.weight_detail);
      out.set_loss_rising(e.loss_rising);
      for (int l : e.switched_layers) out.add_switched_layers(l);
      break;
    case ControllerEvent::Kind::kTrialStart:
      out.set_kind(PhaseEvent::TRIAL_START);
      break;
    case ControllerEvent::Kind::kTrialEnd:
      out.set_kind(PhaseEvent::TRIAL_END);
      out.set_t(e.t_test.t);
      out.set_p(e.t_test.p_value);
      out.set_dof(e.t_test.degrees_of_freedom);
      out.set_mean_full(e.t_test.mean_a);
      out.set_mean_lora(e.t_test.mean_b);
      out.set_significant(e.significant);
      out.set_trial_margin(e.trial_margin);
      out.set_trial_detail(e.trial_detail);
      break;
    case ControllerEvent::Kind::kSwitch:
      out.set_kind(PhaseEvent::SWITCH);
      break;
  }
  return out;
}

}  // namespace hpt
