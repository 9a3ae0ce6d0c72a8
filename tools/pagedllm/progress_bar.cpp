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
    if (done < next_line_at_ || done >= total_) return;  // the last line is finish()'s
    // The first count in the next tenth: rounded up, or a total that is not a multiple of 10
    // printed one line per update until the count moved on (3,993 requests: 399 printed many).
    next_line_at_ = ((done * 10 / total_ + 1) * total_ + 9) / 10;
  }
  draw(done, detail, false);
}

void ProgressBar::finish(const std::string& detail, int64_t done) {
  if (!enabled_) return;
  draw(done < 0 ? total_ : done, detail, true);
}

std::string format_duration(double seconds) {
  const auto whole = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  char text[32];
  if (whole < 60) {
    std::snprintf(text, sizeof(text), "%lld s", whole);
  } else if (whole < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", whole / 60, whole % 60);
  } else {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", whole / 3600, whole / 60 % 60);
  }
  return text;
}

void ProgressBar::draw(int64_t done, const std::string& detail_in, bool final_line) {
  const int64_t percent = std::min<int64_t>(100, done * 100 / total_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string detail = detail_in + (detail_in.empty() ? "" : "; ") + format_duration(elapsed) + " elapsed";
  if (!final_line && done > 0 && done < total_) {
    detail += ", ETA " + format_duration(elapsed * static_cast<double>(total_ - done) / static_cast<double>(done));
  }
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
