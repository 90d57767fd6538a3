// kernel_bench's main: runs the registered benchmarks with the console reporter, then prints one
// row per case with the default and invariant times and their ratio. A case is a benchmark name
// with its mode component ("default" / "invariant", anywhere in the '/'-separated name) removed.
// --ratio_clock=cpu builds the table from CPU time instead of wall time: with OMP_NUM_THREADS=1 on
// a machine shared with other work, CPU time is the cost that does not depend on the others.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct CaseTimes {
  double default_s = -1, invariant_s = -1;
};

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  explicit RatioReporter(bool cpu_clock) : cpu_clock_(cpu_clock) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      std::string key, mode;
      split_mode(run.benchmark_name(), &key, &mode);
      if (mode.empty()) continue;
      const double adjusted = cpu_clock_ ? run.GetAdjustedCPUTime() : run.GetAdjustedRealTime();
      const double seconds = adjusted / benchmark::GetTimeUnitMultiplier(run.time_unit);
      if (cases_.find(key) == cases_.end()) order_.push_back(key);
      (mode == "default" ? cases_[key].default_s : cases_[key].invariant_s) = seconds;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintTable() const {
    std::printf("\n%s time per call\n", cpu_clock_ ? "CPU" : "wall");
    std::printf("%-58s %14s %14s %10s\n", "case", "default [us]", "invariant [us]", "inv/def");
    std::map<std::string, std::pair<double, int>> by_op;  // log-ratio sum, count
    double log_sum = 0;
    int count = 0;
    for (const std::string& key : order_) {
      const CaseTimes& t = cases_.at(key);
      if (t.default_s <= 0 || t.invariant_s <= 0) continue;
      const double ratio = t.invariant_s / t.default_s;
      std::printf("%-58s %14.2f %14.2f %10.3f\n", key.c_str(), t.default_s * 1e6, t.invariant_s * 1e6, ratio);
      const std::string op = key.substr(0, key.find('/'));
      by_op[op].first += std::log(ratio);
      by_op[op].second += 1;
      log_sum += std::log(ratio);
      ++count;
    }
    if (count == 0) return;
    std::printf("\ngeometric mean of invariant/default per op:\n");
    for (const auto& [op, v] : by_op) {
      std::printf("  %-24s %6.3f  (%d cases)\n", op.c_str(), std::exp(v.first / v.second), v.second);
    }
    std::printf("  %-24s %6.3f  (%d cases)\n", "all", std::exp(log_sum / count), count);
  }

 private:
  static void split_mode(const std::string& name, std::string* key, std::string* mode) {
    std::stringstream in(name);
    std::string part;
    while (std::getline(in, part, '/')) {
      if (part == "real_time") continue;  // UseRealTime()'s suffix: the same for both modes
      if (part == "default" || part == "invariant") {
        *mode = part;
        continue;
      }
      if (!key->empty()) *key += "/";
      *key += part;
    }
  }

  bool cpu_clock_;
  std::map<std::string, CaseTimes> cases_;
  std::vector<std::string> order_;
};

}  // namespace

int main(int argc, char** argv) {
  bool cpu_clock = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ratio_clock=cpu" || arg == "--ratio_clock=real") {
      cpu_clock = arg == "--ratio_clock=cpu";
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter(cpu_clock);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintTable();
  benchmark::Shutdown();
  return 0;
}
