// All-or-nothing output: a command stages every file it will write (each a temporary beside its
// target, written and fsynced), and only when the whole command has succeeded renames them over
// their targets, in staging order (stage the golden last), then fsyncs each folder so the renames
// survive a power cut. A command that fails, or is killed, leaves the targets as they were; the
// temporaries a killed process left ("<name>.tmp.<pid>" of a process no longer running) are
// removed the next time that target is written.
#pragma once
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace samebits {

class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  ~OutputFiles();  // removes whatever was staged and not committed

  // Writes `text` to a temporary beside `path` (creating its folder). On error nothing is left.
  absl::Status stage(const std::string& path, const std::string& text);
  // Renames every staged file over its target, then fsyncs their folders.
  absl::Status commit();
  // Removes the staged temporaries.
  void discard();

 private:
  struct Staged {
    std::string target, temp;
  };
  std::vector<Staged> staged_;
};

// One file on its own: stage + commit.
absl::Status write_file_atomically(const std::string& path, const std::string& text);

// Removes "<path>.tmp.<pid>" files whose process is gone (a writer killed between write and
// rename). Returns how many were removed.
int remove_stale_temporaries(const std::string& path);

}  // namespace samebits
