// `samebits serve`: the built-in engine behind an OpenAI-compatible HTTP server (cpp-httplib).
// Routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health. Errors are
// OpenAI error objects: 400 bad JSON or field, 404 unknown model or route, 413 body too large, 429
// queue full, 503 shutting down, 504 time limit. A streamed request whose client goes away is
// cancelled and its KV blocks freed; SIGINT/SIGTERM stop accepting, let every request in flight
// finish, and exit 0.
#pragma once
#include <string>

#include "harness/serve/service.h"
#include "kernels/mode.h"

namespace samebits::serve {

struct ServeOptions {
  std::string model = "builtin";
  std::string backend = "cpu";
  Mode mode = Mode::kInvariant;
  std::string host = "127.0.0.1";
  int port = 8000;                 // 0 = any free port (printed on stdout)
  std::string served_model_name;   // "" = derived from the model spec
  int threads = 0;                 // CPU backend threads; 0 = OpenMP default
  int http_threads = 128;          // concurrent connections served
  size_t max_body_bytes = 1 << 20;
  int max_n = 8;
  EngineConfig engine;             // mode and threads are set from the fields above
  ServiceLimits limits;
};

// The model name clients give: served_model_name, else "samebits-builtin" or the spec with every
// character outside [A-Za-z0-9._-] made '-'.
std::string served_name(const ServeOptions& options);
// Runs until SIGINT/SIGTERM; returns the process exit code (0 after a clean drain, 2 on bad
// options or a port that cannot be bound).
int run_serve(const ServeOptions& options);

}  // namespace samebits::serve
