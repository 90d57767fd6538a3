// Runs the samebits executable (or any shell command) and captures its exit code, stdout and stderr.
#pragma once
#include <string>

namespace samebits::testing {

// Sets (or, with nullptr, removes) an environment variable for the scope's lifetime; the
// processes run_samebits starts inherit it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, saved_;
  bool had_ = false;
};

struct Outcome {
  int code = -1;
  std::string out, err;
};
// `args` is appended to the executable's path as shell words; the working directory is the
// source tree, so relative scenario paths work.
Outcome run_samebits(const std::string& args);
// `command` run by the shell in the source tree, stdin empty.
Outcome run_command(const std::string& command);
// Whether the shell finds a program of that name (`command -v`): tests of scripts skip without it.
bool have_program(const std::string& name);
std::string temp_path(const std::string& name);  // a fresh path under the temp folder
std::string read_text(const std::string& path);  // the file's bytes; "" when it cannot be read
void write_text(const std::string& path, const std::string& text);  // the file's bytes, replaced
void write_script(const std::string& path, const std::string& text);  // an executable file (mode 0755)
// A stand-in compute-sanitizer for the tests of the GPU scripts on machines without one: like the
// real tool it runs the command after its options, exports the tool's name (FAKE_TOOL) to it,
// ends with both tools' summaries, and gives a child's exit status 9 the real tool's two lines.
void write_stand_in_compute_sanitizer(const std::string& path);
// The text with each run of spaces as one space: for tables whose column widths are not under test.
std::string squeeze(const std::string& text);

}  // namespace samebits::testing
