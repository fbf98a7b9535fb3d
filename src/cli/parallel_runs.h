// Independent simulations run on several threads: compare's runs and reproduce's.
//
// Each simulation owns its kernel, workload and random generator (no global mutable state),
// so a run's figures do not depend on which thread ran it or on how many ran at once; the
// caller combines the results in index order, so the output is byte-identical whatever `jobs`.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <type_traits>
#include <vector>

namespace schedtwin::cli {

// The default of --jobs: the host's hardware threads (1 if it does not say).
inline int default_jobs() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(std::min(n, 1024u));
}

// Calls run(i) for i = 0 .. n-1 on up to `jobs` threads (the calling thread is one) and returns
// the results in index order. Indices are handed out in increasing order and none is started
// after a run has thrown, so every index below a failed one has run: the exception rethrown,
// the lowest index's, is the same whatever `jobs`.
template <class Run>
auto parallel_runs(std::size_t n, int jobs, Run run) {
  using R = std::invoke_result_t<Run&, std::size_t>;
  std::vector<R> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n || failed.load()) return;
      try {
        results[i] = run(i);
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
    }
  };
  const std::size_t nthreads = std::min(static_cast<std::size_t>(std::max(jobs, 1)), n);
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < nthreads; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return results;
}

}  // namespace schedtwin::cli
