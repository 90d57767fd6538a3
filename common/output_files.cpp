#include "common/output_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/input_file.h"

namespace samebits {
namespace fs = std::filesystem;

namespace {

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

bool fsync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

int remove_stale_temporaries(const std::string& path) {
  const std::string prefix = fs::path(path).filename().string() + ".tmp.";
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(folder_of(path), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    int64_t pid = 0;
    if (!absl::SimpleAtoi(name.substr(prefix.size()), &pid) || pid <= 0 || pid > INT32_MAX) continue;
    if (pid == ::getpid() || process_alive(pid_t(pid))) continue;
    std::error_code rm;
    if (entry.is_regular_file(rm) && fs::remove(entry.path(), rm)) ++removed;
  }
  return removed;
}

OutputFiles::~OutputFiles() { discard(); }

void OutputFiles::discard() {
  for (const Staged& s : staged_) ::unlink(s.temp.c_str());
  staged_.clear();
}

absl::Status OutputFiles::stage(const std::string& path, const std::string& text) {
  std::error_code ec;
  const fs::path target(path);
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) return absl::InternalError(absl::StrCat(printable(path), ": cannot create its folder: ", ec.message()));
  }
  if (fs::is_directory(target, ec))
    return absl::InvalidArgumentError(absl::StrCat(printable(path), ": is a folder, not a file"));
  remove_stale_temporaries(path);
  const std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat(printable(path), ": cannot write: ", std::strerror(errno)));
  size_t done = 0;
  bool ok = true;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += size_t(n);
  }
  const int write_errno = errno;
  ok = ok && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok) {
    ::unlink(temp.c_str());
    return absl::InternalError(absl::StrCat(printable(path), ": write failed: ", std::strerror(write_errno)));
  }
  staged_.push_back({path, temp});
  return absl::OkStatus();
}

absl::Status OutputFiles::commit() {
  std::set<std::string> folders;
  for (size_t i = 0; i < staged_.size(); ++i) {
    if (::rename(staged_[i].temp.c_str(), staged_[i].target.c_str()) != 0) {
      const int err = errno;
      const std::string failed = staged_[i].target;
      staged_.erase(staged_.begin(), staged_.begin() + ptrdiff_t(i));
      discard();
      return absl::InternalError(absl::StrCat(printable(failed), ": cannot replace: ", std::strerror(err)));
    }
    folders.insert(folder_of(staged_[i].target));
  }
  staged_.clear();
  for (const std::string& folder : folders)
    if (!fsync_folder(folder)) return absl::InternalError(absl::StrCat(printable(folder), ": cannot fsync the folder"));
  return absl::OkStatus();
}

absl::Status write_file_atomically(const std::string& path, const std::string& text) {
  OutputFiles out;
  if (absl::Status s = out.stage(path, text); !s.ok()) return s;
  return out.commit();
}

}  // namespace samebits
