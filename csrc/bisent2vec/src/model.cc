#include "model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "parallel.h"

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
                                         uint64_t seed, int threads) {
  // Word w fills entries [ends[w - 1], ends[w]) of the table before the shuffle.
  double z = 0.0;
  for (int64_t c : counts) z += std::sqrt(static_cast<double>(c));
  std::vector<size_t> ends(counts.size());
  size_t n = 0;
  for (size_t w = 0; w < counts.size(); ++w) {
    const double share = std::sqrt(static_cast<double>(counts[w])) * static_cast<double>(size) / z;
    n += static_cast<size_t>(std::ceil(share));
    ends[w] = n;
  }
  // A uniform shuffle in parallel (one Fisher-Yates over the table would be serial, and its
  // swaps miss the caches: 40 MB at the default size). Entry i goes to block label(i), the
  // top bits of draw i of the stream `seed`; each block keeps its entries in order, is then
  // shuffled by Fisher-Yates on a stream of its own, and the blocks are laid end to end.
  // Every arrangement is equally likely: it arises from one labelling per split of the table
  // into B consecutive blocks of sizes n_1..n_B, with probability B^-N / (n_1! ... n_B!), and
  // these sum to 1/N! over the splits (the multinomial theorem). The labels depend on the
  // positions alone, so the table is the same for any number of threads.
  constexpr int kBlockBits = 7;  // blocks of 10M / 128 entries (300 KB) shuffle in L2
  constexpr size_t kBlocks = size_t{1} << kBlockBits;
  const size_t parts = static_cast<size_t>(std::max(threads, 1));
  // Part p's entries, in order, as f(word, block). Run twice, to count and then to place:
  // drawing the labels again costs less than keeping them (a byte an entry, 10 MB).
  auto each_entry = [&](size_t p, auto f) {
    const size_t first = n * p / parts, last = n * (p + 1) / parts;
    Rng rng = Rng::skipped(seed, first);
    auto w = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), first) - ends.begin());
    for (size_t i = first; i < last; ++i) {
      while (ends[w] <= i) ++w;
      f(static_cast<int32_t>(w), static_cast<size_t>(rng.next() >> (64 - kBlockBits)));
    }
  };
  std::vector<std::vector<size_t>> at(parts, std::vector<size_t>(kBlocks, 0));
  parallel_for(parts, threads, [&](size_t p) {
    each_entry(p, [&](int32_t, size_t block) { ++at[p][block]; });
  });
  std::vector<size_t> block_start(kBlocks + 1, 0);
  for (size_t b = 0, next = 0; b < kBlocks; ++b) {  // counts -> where each part writes
    block_start[b] = next;
    for (size_t p = 0; p < parts; ++p) {
      const size_t count = at[p][b];
      at[p][b] = next;
      next += count;
    }
  }
  block_start[kBlocks] = n;
  std::vector<int32_t> table(n);
  parallel_for(parts, threads, [&](size_t p) {
    each_entry(p, [&](int32_t word, size_t block) { table[at[p][block]++] = word; });
  });
  Rng seeds(seed ^ 0x5851F42D4C957F2DULL);  // the blocks' streams, apart from the labels'
  std::vector<uint64_t> block_seed(kBlocks);
  for (uint64_t& s : block_seed) s = seeds.next();
  parallel_for(kBlocks, threads, [&](size_t b) {
    Rng rng(block_seed[b]);
    int32_t* block = table.data() + block_start[b];
    for (size_t i = block_start[b + 1] - block_start[b]; i > 1; --i) {
      std::swap(block[i - 1], block[rng.below(i)]);
    }
  });
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
