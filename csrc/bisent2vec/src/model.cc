#include "model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace bisent2vec {

namespace {

// The loss of a probability, kept finite as fastText does (log of p + 1e-5).
inline float neg_log(float p) { return -std::log(p + 1e-5f); }

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// A dot product summed in eight interleaved partial sums, then those in a fixed order: the
// order never depends on the compiler (so results are reproducible), and the independent
// sums let it use vector instructions without -ffast-math.
inline float dot(const float* a, const float* b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[k + j] * b[k + j];
  }
  for (; k < n; ++k) s[0] += a[k] * b[k];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

NegativeTable NegativeTable::from_counts(const std::vector<int64_t>& counts, int64_t size,
                                         Rng& rng) {
  double z = 0.0;
  for (int64_t c : counts) z += std::sqrt(static_cast<double>(c));
  std::vector<int32_t> table;
  table.reserve(static_cast<size_t>(size) + counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    const double share = std::sqrt(static_cast<double>(counts[i])) * static_cast<double>(size) / z;
    const auto copies = static_cast<int64_t>(std::ceil(share));
    for (int64_t j = 0; j < copies; ++j) table.push_back(static_cast<int32_t>(i));
  }
  // Fisher-Yates, swapping table[i - 1] with table[below(i)] for i = size, ..., 2. The table
  // (40 MB at the default size) is far larger than the caches and the draws do not depend on
  // it, so they are drawn a block ahead and their cache lines fetched before the swaps, which
  // stay in the same order: the same permutation in a third of the time.
  constexpr size_t kAhead = 32;
  size_t partner[kAhead];
  for (size_t i = table.size(); i > 1;) {
    const size_t n = std::min(kAhead, i - 1);
    for (size_t k = 0; k < n; ++k) {
      partner[k] = static_cast<size_t>(rng.below(i - k));
      __builtin_prefetch(&table[partner[k]], 1);
    }
    for (size_t k = 0; k < n; ++k) std::swap(table[i - 1 - k], table[partner[k]]);
    i -= n;
  }
  return NegativeTable(std::move(table));
}

Worker::Worker(Matrix& input, Matrix& output, const NegativeTable& negatives, int neg,
               uint64_t seed)
    : input_(input),
      output_(output),
      negatives_(negatives),
      neg_(neg),
      rng_(seed),
      hidden_(static_cast<size_t>(input.cols)),
      grad_(static_cast<size_t>(input.cols)) {
  if (negatives_.size() == 0 && neg_ > 0) throw std::logic_error("empty negative table");
  if (negatives_.size() > 0) negpos_ = static_cast<size_t>(rng_.below(negatives_.size()));
}

int32_t Worker::negative(int32_t target) {
  int32_t w;
  size_t tries = 0;
  do {
    w = negatives_[negpos_];
    negpos_ = (negpos_ + 1) % negatives_.size();
    // A table holding nothing but the target (a one-word vocabulary) would loop forever.
  } while (w == target && ++tries < negatives_.size());
  return w;
}

float Worker::update(const int32_t* context, size_t n, int32_t target, float lr) {
  if (n == 0) return 0.0f;
  const int64_t dim = input_.cols;
  float* h = hidden_.data();
  float* g = grad_.data();
  for (int64_t k = 0; k < dim; ++k) h[k] = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float* r = input_.row(context[i]);
    for (int64_t k = 0; k < dim; ++k) h[k] += r[k];
  }
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int64_t k = 0; k < dim; ++k) {
    h[k] *= inv_n;
    g[k] = 0.0f;
  }
  float loss = 0.0f;
  for (int s = 0; s <= neg_; ++s) {
    const bool positive = s == 0;
    const int32_t w = positive ? target : negative(target);
    float* u = output_.row(w);
    const float p = sigmoid(dot(u, h, dim));
    const float alpha = lr * ((positive ? 1.0f : 0.0f) - p);
    for (int64_t k = 0; k < dim; ++k) {
      g[k] += alpha * u[k];
      u[k] += alpha * h[k];
    }
    loss += positive ? neg_log(p) : neg_log(1.0f - p);
  }
  for (int64_t k = 0; k < dim; ++k) g[k] *= inv_n;
  for (size_t i = 0; i < n; ++i) {
    float* r = input_.row(context[i]);
    for (int64_t k = 0; k < dim; ++k) r[k] += g[k];
  }
  return loss;
}

}  // namespace bisent2vec
