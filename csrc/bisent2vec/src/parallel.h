// Work split over threads for the steps around training (counting the vocabulary, shuffling
// the negative table, writing the files), so that they take less of a many-thread run's
// wall time.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace bisent2vec {

// Call task(0), ..., task(n - 1), each once, on up to `threads` threads (the caller's among
// them), in no fixed order. Once all have ended, rethrows the error of the lowest index
// that failed.
template <class Task>
void parallel_for(size_t n, int threads, const Task& task) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;  // the caller works too: one thread fewer
  const size_t used = std::min(n, static_cast<size_t>(std::max(threads, 1)));
  for (size_t t = 1; t < used; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& h : helpers) h.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace bisent2vec
