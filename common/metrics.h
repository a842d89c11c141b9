// MetricsServer: serves a prometheus-cpp Registry at /metrics over HTTP and
// registers hpt_build_info. Each component builds its own metric families
// from the Registry it is given (see workers/worker_metrics.h).
//
// Why not prometheus::Exposer: it runs civetweb, whose threads get a small
// fixed stack; in a process that also loads OpenBLAS and LibTorch (about
// 100 KB of static TLS) pthread_create fails and civetweb reports "null
// context". So the text exposition comes from prometheus-cpp's serializer
// and a minimal HTTP/1.1 listener here answers GET /metrics.
//
//   ASSIGN_OR_RETURN(auto metrics, MetricsServer::Start("127.0.0.1:9100", "coordinator"));
//   WorkerMetrics m(metrics->registry());
#ifndef HPT_COMMON_METRICS_H_
#define HPT_COMMON_METRICS_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"

namespace hpt {

// Version reported by hpt_build_info and GetInfo.
inline constexpr char kHptVersion[] = "0.1.0";

class MetricsServer {
 public:
  // `address` is host:port; port 0 picks a free one (see port()).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& address, const std::string& component);
  ~MetricsServer();  // stops listening

  // The exposition text a scrape gets.
  std::string Render() const;

  prometheus::Registry& registry() { return *registry_; }
  std::shared_ptr<prometheus::Registry> shared_registry() { return registry_; }
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  void ServeLoop();
  void Answer(int connection);

  std::shared_ptr<prometheus::Registry> registry_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Adds hpt_build_info{component, version} = 1 to `registry`.
void RegisterBuildInfo(prometheus::Registry& registry,
                       const std::string& component);

}  // namespace hpt

#endif  // HPT_COMMON_METRICS_H_
