#include "tools/pagedllm/progress_bar.h"

#include <unistd.h>
#include <algorithm>
#include <cstdio>

namespace pagedllm::cli {

namespace {
constexpr int kBarWidth = 30;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(std::max<int64_t>(total, 1)),
      enabled_(enabled),
      terminal_(::isatty(STDERR_FILENO) != 0) {}

void ProgressBar::update(int64_t done, const std::string& detail) {
  if (!enabled_) return;
  if (terminal_) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < kRedrawInterval) return;
    last_draw_ = now;
  } else {
    if (done < next_line_at_) return;
    next_line_at_ = (done * 10 / total_ + 1) * total_ / 10;
  }
  draw(done, detail, false);
}

void ProgressBar::finish(const std::string& detail) {
  if (!enabled_) return;
  draw(total_, detail, true);
}

void ProgressBar::draw(int64_t done, const std::string& detail, bool final_line) {
  const int64_t percent = std::min<int64_t>(100, done * 100 / total_);
  if (terminal_) {
    const auto filled = static_cast<int>(std::min<int64_t>(kBarWidth, done * kBarWidth / total_));
    std::fprintf(stderr, "\r%s [%s%s] %3lld%% %lld/%lld  %s\033[K%s", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kBarWidth - filled, ' ').c_str(), static_cast<long long>(percent),
                 static_cast<long long>(done), static_cast<long long>(total_), detail.c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s: %lld/%lld (%lld%%) %s\n", label_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), static_cast<long long>(percent), detail.c_str());
  }
  std::fflush(stderr);
}

}  // namespace pagedllm::cli
