// hpt_worker: one device node of the HpT service.
//
//   hpt_worker --kind=gpu --listen=127.0.0.1:50061
//       --coordinator=127.0.0.1:50051 --metrics=127.0.0.1:9461
//   hpt_worker --kind=reram --reram_adc_bits=6 ...
//   hpt_worker --kind=systolic --flagfile=systolic.flags
//
// Device parameters come from the flags below or, with --flagfile=FILE, from
// a file of the same flags, one per line (absl's flag files).
#include <iostream>

#include "absl/flags/flag.h"
#include "common/tls_flags.h"
#include "absl/flags/parse.h"
#include "common/process_setup.h"
#include "absl/flags/usage.h"
#include "common/metrics.h"
#include "common/server_main.h"
#include "workers/worker_server.h"

ABSL_FLAG(std::string, kind, "gpu", "Device kind: gpu, reram or systolic.");
ABSL_FLAG(std::string, listen, "127.0.0.1:0",
          "host:port for WorkerService; port 0 picks a free port.");
ABSL_FLAG(std::string, advertise, "",
          "host:port the coordinator should dial; default: listen host and "
          "bound port.");
ABSL_FLAG(std::string, coordinator, "",
          "Coordinator host:port to register with (empty: do not register).");
ABSL_FLAG(std::string, name, "", "Worker name shown by the coordinator.");
ABSL_FLAG(std::string, metrics, "127.0.0.1:0",
          "host:port for Prometheus /metrics; empty disables.");
ABSL_FLAG(std::string, device, "auto", "LibTorch device: auto, cpu or cuda:N.");
ABSL_FLAG(int, threads, 0, "LibTorch intra-op threads (0: LibTorch default).");
ABSL_FLAG(std::string, reference_gpu, "v100",
          "gpu: reference GPU of the roofline cost reported beside measured "
          "time (v100, a100, h100).");
// Systolic array (defaults: devices/systolic/systolic_array.h).
ABSL_FLAG(int64_t, systolic_rows, 128, "systolic: PE rows.");
ABSL_FLAG(int64_t, systolic_cols, 128, "systolic: PE columns.");
ABSL_FLAG(std::string, systolic_dataflow, "os", "systolic: os, ws or is.");
ABSL_FLAG(int64_t, systolic_sram_kb, 1024, "systolic: SRAM per operand, KB.");
ABSL_FLAG(double, systolic_dram_bw_words_per_cycle, 0,
          "systolic: DRAM bandwidth (0: unlimited).");
ABSL_FLAG(double, systolic_clock_hz, 1e9, "systolic: clock.");
ABSL_FLAG(bool, systolic_bf16, false, "systolic: bf16 operands, fp32 accumulate.");
// ReRAM (defaults: NeuroSim V1.3, devices/reram/reram_config.h).
ABSL_FLAG(int64_t, reram_crossbar_rows, 128, "reram: crossbar rows.");
ABSL_FLAG(int64_t, reram_crossbar_cols, 128, "reram: crossbar columns.");
ABSL_FLAG(int, reram_cell_bits, 2, "reram: bits per cell.");
ABSL_FLAG(int, reram_weight_bits, 8, "reram: weight bits.");
ABSL_FLAG(int, reram_input_bits, 8, "reram: input bits.");
ABSL_FLAG(int, reram_adc_bits, 5, "reram: ADC bits.");
ABSL_FLAG(int64_t, reram_cols_per_adc, 8, "reram: columns sharing an ADC.");
ABSL_FLAG(std::string, reram_sign_mode, "offset",
          "reram: offset (NeuroSim V1.3's mapping, 4 cells per 8-bit weight) or "
          "differential (two arrays).");
ABSL_FLAG(std::string, reram_numerics, "fast", "reram: fast or exact (bit-exact).");
ABSL_FLAG(double, reram_endurance, 1e6, "reram: writes a cell survives.");
ABSL_FLAG(double, reram_program_noise, 0, "reram: programming noise, levels.");
ABSL_FLAG(double, reram_read_noise, 0, "reram: read noise, levels.");
ABSL_FLAG(uint64_t, reram_seed, 1, "reram: noise seed.");
ABSL_FLAG(std::string, port_file, "",
          "Write 'grpc=PORT metrics=PORT' here once serving (for launchers "
          "and tests that use port 0).");

int main(int argc, char** argv) {
  hpt::UsePassiveThreadWaits(argv);
  absl::SetProgramUsageMessage("HpT worker: runs training tasks for one device.");
  absl::ParseCommandLine(argc, argv);
  hpt::KeepLargeBuffersOnTheHeap();
  // Only the coordinator and other workers (certificates of the cluster's
  // CA) may call a worker.
  if (absl::Status s = hpt::ApplyTlsFlags(/*require_client_certs=*/true); !s.ok()) {
    std::cerr << "hpt_worker: " << s.message() << std::endl;
    return 2;
  }

  std::unique_ptr<hpt::MetricsServer> metrics;
  if (!absl::GetFlag(FLAGS_metrics).empty()) {
    auto started = hpt::MetricsServer::Start(absl::GetFlag(FLAGS_metrics),
                                             "worker-" + absl::GetFlag(FLAGS_kind));
    if (!started.ok()) {
      std::cerr << "hpt_worker: " << started.status().message() << std::endl;
      return 1;
    }
    metrics = std::move(*started);
  }

  hpt::WorkerServer::Options options;
  hpt::SystolicConfig& sys = options.device.systolic;
  sys.rows = absl::GetFlag(FLAGS_systolic_rows);
  sys.cols = absl::GetFlag(FLAGS_systolic_cols);
  auto dataflow = hpt::ParseDataflow(absl::GetFlag(FLAGS_systolic_dataflow));
  if (!dataflow.ok()) {
    std::cerr << "hpt_worker: --systolic_" << dataflow.status().message() << std::endl;
    return 2;
  }
  sys.dataflow = *dataflow;
  sys.ifmap_sram_kb = sys.filter_sram_kb = sys.ofmap_sram_kb =
      absl::GetFlag(FLAGS_systolic_sram_kb);
  sys.dram_bw_words_per_cycle = absl::GetFlag(FLAGS_systolic_dram_bw_words_per_cycle);
  sys.clock_hz = absl::GetFlag(FLAGS_systolic_clock_hz);
  if (absl::GetFlag(FLAGS_systolic_bf16)) sys.precision = hpt::SystolicPrecision::kBf16;
  hpt::ReramConfig& rr = options.device.reram;
  rr.crossbar_rows = absl::GetFlag(FLAGS_reram_crossbar_rows);
  rr.crossbar_cols = absl::GetFlag(FLAGS_reram_crossbar_cols);
  rr.cell_bits = absl::GetFlag(FLAGS_reram_cell_bits);
  rr.weight_bits = absl::GetFlag(FLAGS_reram_weight_bits);
  rr.input_bits = absl::GetFlag(FLAGS_reram_input_bits);
  rr.adc_bits = absl::GetFlag(FLAGS_reram_adc_bits);
  rr.cols_per_adc = absl::GetFlag(FLAGS_reram_cols_per_adc);
  const std::string sign = absl::GetFlag(FLAGS_reram_sign_mode);
  const std::string numerics = absl::GetFlag(FLAGS_reram_numerics);
  if ((sign != "differential" && sign != "offset") ||
      (numerics != "fast" && numerics != "exact")) {
    std::cerr << "hpt_worker: --reram_sign_mode must be differential or offset and "
                 "--reram_numerics fast or exact" << std::endl;
    return 2;
  }
  rr.sign_mode = sign == "offset" ? hpt::SignMode::kOffset : hpt::SignMode::kDifferential;
  rr.numerics = numerics == "exact" ? hpt::ReramNumerics::kBitExact : hpt::ReramNumerics::kFast;
  rr.endurance_writes = absl::GetFlag(FLAGS_reram_endurance);
  rr.program_noise_sigma = absl::GetFlag(FLAGS_reram_program_noise);
  rr.read_noise_sigma = absl::GetFlag(FLAGS_reram_read_noise);
  rr.seed = absl::GetFlag(FLAGS_reram_seed);
  options.kind = absl::GetFlag(FLAGS_kind);
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.advertise_address = absl::GetFlag(FLAGS_advertise);
  options.coordinator_address = absl::GetFlag(FLAGS_coordinator);
  options.name = absl::GetFlag(FLAGS_name);
  options.executor.device = absl::GetFlag(FLAGS_device);
  options.executor.intra_op_threads = absl::GetFlag(FLAGS_threads);
  options.executor.reference_gpu = absl::GetFlag(FLAGS_reference_gpu);
  if (metrics) options.metrics_registry = &metrics->registry();
  auto server = hpt::WorkerServer::Start(options);
  if (!server.ok()) {
    std::cerr << "hpt_worker: " << server.status().message() << std::endl;
    return server.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  auto* running = server->get();
  hpt::ShutdownOnSignals([running] { running->Shutdown(); });
  const int metrics_port = metrics ? metrics->port() : 0;
  std::cout << "hpt_worker kind=" << options.kind << " grpc="
            << (*server)->address() << " metrics_port=" << metrics_port
            << " device=" << (*server)->device() << std::endl;
  if (absl::Status written = hpt::WritePortFile(absl::GetFlag(FLAGS_port_file),
                                                 (*server)->port(), metrics_port);
      !written.ok()) {
    std::cerr << "hpt_worker: " << written.message() << std::endl;
  }
  (*server)->Wait();
  return 0;
}
