// What //proto:service_pch precompiles (third_party/pch.bzl): the
// standard library, Abseil, protobuf and gRPC headers most of the service's
// units include, and every generated message and stub, about 170,000
// lines that a unit including a generated message would otherwise parse
// before its own. Loaded precompiled, they cost it a second or two.
//
// Only headers whose meaning does not depend on a macro a unit might
// define belong here: a unit's own includes still come after this one.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/checkpoint.pb.h"
#include "proto/common.pb.h"
#include "proto/health.grpc.pb.h"
#include "proto/health.pb.h"
#include "proto/job_service.grpc.pb.h"
#include "proto/job_service.pb.h"
#include "proto/work.pb.h"
#include "proto/worker_service.grpc.pb.h"
#include "proto/worker_service.pb.h"
