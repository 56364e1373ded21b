// One SGD step of the sent2vec objective: logistic loss with negative sampling.
//
// Given context rows C (words, the placeholder, n-gram buckets) and a target word w:
//   h = mean of the input rows of C
//   for the target (label 1) and `neg` sampled negatives (label 0), each output row u:
//     p = sigmoid(u . h);  alpha = lr * (label - p)
//     g += alpha * u;  u += alpha * h;  loss += -log(p) or -log(1 - p)
//   every input row of C += g / |C|
// The division by |C| is sent2vec's (fastText's CBOW does not divide); output rows are
// updated one after another, as in fastText, so a later negative sees the earlier ones' h
// unchanged but its own row updated once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "matrix.h"
#include "rng.h"

namespace bisent2vec {

// Negatives are drawn from a table in which each word appears in proportion to count^0.5,
// shuffled once; each worker walks it from its own random start.
class NegativeTable {
 public:
  NegativeTable() = default;
  explicit NegativeTable(std::vector<int32_t> table) : table_(std::move(table)) {}
  // The table of about `size` entries for words of these counts, shuffled by `threads`
  // threads: the same table for any number of them.
  static NegativeTable from_counts(const std::vector<int64_t>& counts, int64_t size,
                                   uint64_t seed, int threads);
  size_t size() const { return table_.size(); }
  int32_t operator[](size_t i) const { return table_[i]; }

 private:
  std::vector<int32_t> table_;
};

class Worker {
 public:
  Worker(Matrix& input, Matrix& output, const NegativeTable& negatives, int neg, uint64_t seed);

  // One update; returns the loss of the target and its negatives.
  float update(const int32_t* context, size_t n, int32_t target, float lr);

  Rng& rng() { return rng_; }

 private:
  int32_t negative(int32_t target);
  Matrix& input_;
  Matrix& output_;
  const NegativeTable& negatives_;
  int neg_;
  Rng rng_;
  size_t negpos_ = 0;
  std::vector<float> hidden_, grad_;
};

}  // namespace bisent2vec
