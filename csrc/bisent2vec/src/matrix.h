// A dense row-major float32 matrix: the input (words, placeholder, n-gram buckets) and output
// (words) embeddings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rng.h"

namespace bisent2vec {

struct Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> data;

  Matrix() = default;
  Matrix(int64_t r, int64_t c) : rows(r), cols(c), data(static_cast<size_t>(r * c), 0.0f) {}

  float* row(int64_t i) { return data.data() + i * cols; }
  const float* row(int64_t i) const { return data.data() + i * cols; }

  // Every entry uniform in [-a, a), drawn row by row from one generator (reproducible).
  void uniform(float a, Rng& rng) {
    for (float& x : data) x = rng.uniform(-a, a);
  }
};

}  // namespace bisent2vec
