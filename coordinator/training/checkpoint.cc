#include "coordinator/training/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/stored_enums.h"
#include "common/tensor_codec.h"

namespace hpt {
namespace {

constexpr char kMagic[] = "HPTCKPT1";
constexpr size_t kMagicBytes = 8;
constexpr int64_t kChunkBytes = 4 << 20;
// No header or chunk comes near this; a larger length is a damaged file.
constexpr uint64_t kMaxRecordBytes = uint64_t{64} << 20;

std::string FileName(int64_t step) { return absl::StrFormat("step-%012d.ckpt", step); }

// The step in a file name, or -1 when it is not a checkpoint's.
int64_t StepOf(const std::string& name) {
  if (!absl::StartsWith(name, "step-") || !absl::EndsWith(name, ".ckpt")) return -1;
  int64_t step = -1;
  if (!absl::SimpleAtoi(name.substr(5, name.size() - 10), &step)) return -1;
  return step;
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status MakeDirs(const std::string& dir) {
  std::string path;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      path = dir.substr(0, i);
      if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return Errno("mkdir", path);
    }
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Errno("write", path);
    p += w;
    n -= size_t(w);
  }
  return absl::OkStatus();
}

absl::Status WriteRecord(int fd, const std::string& bytes, const std::string& path) {
  uint8_t length[8];
  uint64_t n = bytes.size();
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(n >> (8 * i));
  RETURN_IF_ERROR(WriteAll(fd, length, 8, path));
  return WriteAll(fd, bytes.data(), bytes.size(), path);
}

// A record's 8-byte little-endian length.
uint64_t LoadLength(const char* p) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(p[i])) << (8 * i);
  return n;
}

// Reads records from a whole file held in memory.
class RecordReader {
 public:
  RecordReader(const std::string& data, const std::string& path) : data_(data), path_(path) {}
  absl::StatusOr<std::string_view> Next() {
    if (data_.size() - pos_ < 8) return Damaged("ends inside a record length");
    const uint64_t n = LoadLength(data_.data() + pos_);
    pos_ += 8;
    if (n > kMaxRecordBytes || n > data_.size() - pos_) return Damaged("has a record past its end");
    std::string_view record(data_.data() + pos_, n);
    pos_ += n;
    return record;
  }
  bool AtEnd() const { return pos_ == data_.size(); }
  absl::Status Damaged(const std::string& what) const {
    return absl::DataLossError(absl::StrCat("checkpoint ", path_, " ", what));
  }

 private:
  const std::string& data_;
  const std::string& path_;
  size_t pos_ = kMagicBytes;
};

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < kMagicBytes || data.compare(0, kMagicBytes, kMagic) != 0) {
    return absl::DataLossError(absl::StrCat(path, " is not a checkpoint"));
  }
  return data;
}

// The cause of a checkpoint written before causes were kept, from its
// reason: the words CheckpointReason gave that cause then.
CheckpointCause::Name CauseOfReason(const std::string& reason) {
  if (absl::StartsWith(reason, "every ")) return CheckpointCause::periodic;
  for (CheckpointCause::Name cause :
       {CheckpointCause::phase_switch, CheckpointCause::placement_back,
        CheckpointCause::trained_model}) {
    if (reason == CheckpointReason(cause, 0)) return cause;
  }
  return CheckpointCause::CHECKPOINT_CAUSE_UNSPECIFIED;
}

absl::StatusOr<CheckpointHeader> ParseHeader(RecordReader& reader) {
  ASSIGN_OR_RETURN(std::string_view bytes, reader.Next());
  CheckpointHeader header;
  if (!header.ParseFromArray(bytes.data(), int(bytes.size())) || header.format_version() != 1) {
    return reader.Damaged("has no readable header");
  }
  UpgradeStoredEnums(&header);
  if (header.cause() == CheckpointCause::CHECKPOINT_CAUSE_UNSPECIFIED) {
    header.set_cause(CauseOfReason(header.reason()));
  }
  return header;
}

// The header of the checkpoint at `path`, reading no more of the file;
// `bytes` gets the file's size.
absl::StatusOr<CheckpointHeader> ReadHeader(const std::string& path, int64_t* bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  *bytes = int64_t(in.tellg());
  in.seekg(0);
  std::string data(kMagicBytes + 8, '\0');
  if (!in.read(data.data(), std::streamsize(data.size())) ||
      data.compare(0, kMagicBytes, kMagic) != 0) {
    return absl::DataLossError(absl::StrCat(path, " is not a checkpoint"));
  }
  // RecordReader checks the length against what was read.
  const uint64_t n = std::min(LoadLength(data.data() + kMagicBytes), kMaxRecordBytes);
  data.resize(data.size() + n);
  in.read(data.data() + kMagicBytes + 8, std::streamsize(n));
  data.resize(kMagicBytes + 8 + size_t(in.gcount()));
  RecordReader reader(data, path);
  return ParseHeader(reader);
}

// The steps of the checkpoint files in `dir`, ascending.
std::vector<int64_t> Steps(const std::string& dir) {
  std::vector<int64_t> steps;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return steps;
  while (dirent* e = ::readdir(d)) {
    const int64_t step = StepOf(e->d_name);
    if (step >= 0) steps.push_back(step);
  }
  ::closedir(d);
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

std::map<std::string, HostTensor> TensorsUnder(const Checkpoint& checkpoint,
                                               const std::string& prefix) {
  std::map<std::string, HostTensor> out;
  for (auto it = checkpoint.tensors.lower_bound(prefix);
       it != checkpoint.tensors.end() && absl::StartsWith(it->first, prefix); ++it) {
    out[it->first.substr(prefix.size())] = it->second;
  }
  return out;
}

std::string CheckpointReason(CheckpointCause::Name cause, int64_t every_steps) {
  switch (cause) {
    case CheckpointCause::periodic:
      return absl::StrCat("every ", every_steps, " steps");
    case CheckpointCause::phase_switch:
      return "phase switch";
    case CheckpointCause::placement_back:
      return "the planned placement's workers are back";
    case CheckpointCause::trained_model:
      return "trained model";
    default:
      return "";
  }
}

CheckpointInfo InfoOf(const CheckpointHeader& header, int64_t bytes) {
  CheckpointInfo info;
  info.set_step(header.step());
  info.set_epoch(header.progress().epoch());
  info.set_phase(header.phase());
  info.set_cause(header.cause());
  info.set_reason(header.reason());
  info.set_time_unix_ms(header.time_unix_ms());
  info.set_bytes(bytes);
  info.set_loss(header.progress().loss());
  return info;
}

std::string CheckpointDir(const std::string& state_dir, const std::string& job_id) {
  return absl::StrCat(state_dir, "/checkpoints/", job_id);
}

absl::StatusOr<CheckpointInfo> WriteCheckpoint(const std::string& dir,
                                               const Checkpoint& checkpoint, int keep) {
  RETURN_IF_ERROR(MakeDirs(dir));
  const std::vector<TensorChunk> chunks = SplitTensors(checkpoint.tensors, kChunkBytes);
  CheckpointHeader header = checkpoint.header;
  header.set_format_version(1);
  header.set_tensors(int64_t(chunks.size()));
  const std::string path = absl::StrCat(dir, "/", FileName(header.step()));
  const std::string temp = absl::StrCat(path, ".tmp");
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("create", temp);
  absl::Status status = WriteAll(fd, kMagic, kMagicBytes, temp);
  int64_t bytes = kMagicBytes;
  auto write = [&](const std::string& record) {
    if (!status.ok()) return;
    status = WriteRecord(fd, record, temp);
    bytes += 8 + int64_t(record.size());
  };
  write(header.SerializeAsString());
  for (const TensorChunk& c : chunks) write(c.SerializeAsString());
  write(std::string());
  if (status.ok() && ::fsync(fd) != 0) status = Errno("fsync", temp);
  ::close(fd);
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) status = Errno("rename", temp);
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  if (const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  const std::vector<int64_t> steps = Steps(dir);
  for (size_t i = 0; i + size_t(std::max(keep, 1)) < steps.size(); ++i) {
    ::unlink(absl::StrCat(dir, "/", FileName(steps[i])).c_str());
  }
  return InfoOf(header, bytes);
}

void RemoveCheckpoints(const std::string& dir) {
  for (int64_t step : Steps(dir)) ::unlink(absl::StrCat(dir, "/", FileName(step)).c_str());
  ::rmdir(dir.c_str());
}

std::vector<CheckpointInfo> ListCheckpoints(const std::string& dir) {
  std::vector<CheckpointInfo> out;
  for (int64_t step : Steps(dir)) {
    const std::string path = absl::StrCat(dir, "/", FileName(step));
    int64_t bytes = 0;
    absl::StatusOr<CheckpointHeader> header = ReadHeader(path, &bytes);
    if (!header.ok()) {
      std::fprintf(stderr, "hpt_coordinator: skipping %s\n",
                   std::string(header.status().message()).c_str());
      continue;
    }
    out.push_back(InfoOf(*header, bytes));
  }
  return out;
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& dir, int64_t step) {
  const std::vector<int64_t> steps = Steps(dir);
  if (steps.empty()) return absl::NotFoundError("the job has no checkpoint");
  if (step == 0) step = steps.back();
  if (std::find(steps.begin(), steps.end(), step) == steps.end()) {
    return absl::NotFoundError(absl::StrCat("the job has no checkpoint at step ", step,
                                            " (it has ", steps.size(), ", newest at step ",
                                            steps.back(), ")"));
  }
  const std::string path = absl::StrCat(dir, "/", FileName(step));
  ASSIGN_OR_RETURN(std::string data, ReadWhole(path));
  RecordReader reader(data, path);
  Checkpoint checkpoint;
  ASSIGN_OR_RETURN(checkpoint.header, ParseHeader(reader));
  ChunkAssembler assembler;
  for (int64_t i = 0; i < checkpoint.header.tensors(); ++i) {
    ASSIGN_OR_RETURN(std::string_view bytes, reader.Next());
    TensorChunk chunk;
    if (!chunk.ParseFromArray(bytes.data(), int(bytes.size()))) {
      return reader.Damaged(absl::StrCat("has an unreadable tensor record ", i));
    }
    if (absl::Status s = assembler.Add(chunk); !s.ok()) return reader.Damaged(s.ToString());
  }
  ASSIGN_OR_RETURN(std::string_view end, reader.Next());
  if (!end.empty() || !reader.AtEnd()) return reader.Damaged("does not end where it should");
  absl::StatusOr<std::map<std::string, HostTensor>> tensors = assembler.Finish();
  if (!tensors.ok()) return reader.Damaged(tensors.status().ToString());
  checkpoint.tensors = std::move(*tensors);
  return checkpoint;
}

}  // namespace hpt
