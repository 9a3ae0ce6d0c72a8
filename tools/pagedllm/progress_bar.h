// Progress on stderr: a bar redrawn in place on a terminal (at most 10 times a second), plain
// lines at every tenth of the work otherwise (logs and CI stay readable). Each line ends with the
// wall time so far and, until the end, an estimate of the time left (the rate so far).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace pagedllm::cli {

class ProgressBar {
 public:
  // `enabled` false prints nothing (--quiet); the terminal test is on stderr.
  ProgressBar(std::string label, int64_t total, bool enabled = true);

  // `detail` follows the count ("running 12, waiting 3, t=4.2 s").
  void update(int64_t done, const std::string& detail);
  // The last line: at the total, or at `done` when the work ended short of it (a time limit).
  void finish(const std::string& detail, int64_t done = -1);

 private:
  void draw(int64_t done, const std::string& detail, bool final_line);

  std::string label_;
  int64_t total_;
  bool enabled_;
  bool terminal_;
  int64_t next_line_at_ = 0;  // plain mode: the next count that prints a line
  std::chrono::steady_clock::time_point last_draw_{};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// "42 s", "3m05s", "2h07m": a wall-clock duration for people.
std::string format_duration(double seconds);

}  // namespace pagedllm::cli
