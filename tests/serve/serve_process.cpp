#include "tests/serve/serve_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "httplib.h"

namespace samebits::testing {

ServeProcess::ServeProcess(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return;
  std::vector<std::string> argv_s = {SAMEBITS_EXE, "serve", "--port", "0", "--threads", "1"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    if (chdir(SAMEBITS_SOURCE_DIR) != 0) _exit(127);
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  out_fd_ = fds[0];
  // The banner: "samebits serve: listening on http://127.0.0.1:PORT/v1 (...)\n".
  char c;
  while (read(out_fd_, &c, 1) == 1 && c != '\n') banner_.push_back(c);
  const size_t at = banner_.find("127.0.0.1:");
  if (at != std::string::npos) port_ = std::atoi(banner_.c_str() + at + std::strlen("127.0.0.1:"));
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) stop();
}

int ServeProcess::stop(std::string* output) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  std::string rest;
  char buf[4096];
  ssize_t n;
  while ((n = read(out_fd_, buf, sizeof buf)) > 0) rest.append(buf, size_t(n));
  close(out_fd_);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  if (output) *output = rest;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

nlohmann::json HttpReply::json() const { return nlohmann::json::parse(body, nullptr, false); }

namespace {
HttpReply reply_of(const httplib::Result& r) {
  HttpReply out;
  if (r) out.status = r->status, out.body = r->body;
  return out;
}
}  // namespace

HttpReply http_get(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120);
  return reply_of(c.Get(path));
}

HttpReply http_post(int port, const std::string& path, const std::string& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120);
  return reply_of(c.Post(path, body, "application/json"));
}

}  // namespace samebits::testing
