#include "tests/cli/subprocess.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace samebits::testing {

std::string temp_path(const std::string& name) {
  static int counter = 0;
  auto p = std::filesystem::temp_directory_path() /
           ("samebits_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + name);
  std::filesystem::remove_all(p);
  return p.string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void write_script(const std::string& path, const std::string& text) {
  write_text(path, text);
  ::chmod(path.c_str(), 0755);
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) {
    had_ = true;
    saved_ = old;
  }
  if (value != nullptr) {
    ::setenv(name, value, 1);
  } else {
    ::unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (had_) {
    ::setenv(name_.c_str(), saved_.c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

Outcome run_samebits(const std::string& args) { return run_command(std::string("'") + SAMEBITS_EXE + "' " + args); }

Outcome run_command(const std::string& command) {
  const std::string out = temp_path("stdout"), err = temp_path("stderr");
  const std::string cmd = std::string("cd '") + SAMEBITS_SOURCE_DIR + "' && { " + command + "; } >'" + out + "' 2>'" +
                          err + "' </dev/null";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = read_text(out);
  o.err = read_text(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return o;
}

bool have_program(const std::string& name) { return run_command("command -v '" + name + "'").code == 0; }

void write_stand_in_compute_sanitizer(const std::string& path) {
  write_script(path, R"sh(#!/bin/bash
while [[ $1 == --* ]]; do case $1 in --tool) export FAKE_TOOL=$2; shift 2;; --leak-check|--error-exitcode) shift 2;; *) shift;; esac; done
echo "========= COMPUTE-SANITIZER"
"$@"; rc=$?
if ((rc == 9)); then echo "========= Error: process didn't terminate successfully"; echo "========= Target application returned an error"; fi
echo "========= ERROR SUMMARY: 0 errors"
echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
exit $rc
)sh");
}

std::string squeeze(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch != ' ' || out.empty() || out.back() != ' ') out += ch;
  }
  return out;
}

}  // namespace samebits::testing
