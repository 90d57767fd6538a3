// A `samebits serve` child process on a free loopback port (--port 0; the port is read from the
// line it prints), stopped with SIGTERM. For the `serve` tests.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace samebits::testing {

class ServeProcess {
 public:
  // Starts `samebits serve --port 0 --threads 1 <args>`; check ok() before use.
  explicit ServeProcess(const std::vector<std::string>& args);
  ~ServeProcess();
  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  const std::string& banner() const { return banner_; }
  // SIGTERM, then waits; the exit code (-1 when killed by a signal) and what it printed after the banner.
  int stop(std::string* output = nullptr);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = -1;
  std::string banner_;
};

struct HttpReply {
  int status = -1;  // -1: no answer
  std::string body;
  nlohmann::json json() const;
};
HttpReply http_get(int port, const std::string& path);
HttpReply http_post(int port, const std::string& path, const std::string& body);

}  // namespace samebits::testing
