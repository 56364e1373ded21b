// Hogwild training of Bi-Sent2vec over the training file.
//
// Every thread reads its own part of the file (it starts at byte id * size / threads and
// wraps around at the end) and updates the shared matrices without locks, as fastText does.
// For each pair (S, T) and each word w of S kept by subsampling:
//   - a monolingual update predicts w from S with w replaced by the placeholder row, plus
//     S's word n-grams (under n-gram dropout); when S is w alone, from the placeholder row
//     alone (the reference trainer's `context[i] = 0` on a one-word side);
//   - a cross-lingual update predicts w from the whole of T plus T's n-grams (dropout too);
//     skipped when T is empty (the reference's update of an empty context does nothing);
// then the same for every word of T. Words outside the vocabulary are dropped before the
// n-grams are formed. The learning rate decays linearly from -lr to 0 over epoch x the
// in-vocabulary tokens of the file; a thread publishes its token count every -lrUpdateRate
// tokens. One thread and a fixed seed give the same bits on every run.
//
// Threads share the matrices (Hogwild) and nothing else they write often: each keeps its
// counts and losses in its own stack frame until it ends, and the one shared counter, written
// every -lrUpdateRate tokens, has a cache line to itself. A write to a line another core
// holds costs a transfer of the line; at every update (as the loss bookkeeping once was, in
// adjacent per-thread structs) that serialised the threads (docs/results.md, benchmarks).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "args.h"
#include "model.h"
#include "model_io.h"

namespace bisent2vec {

struct TrainStats {
  double seconds = 0;
  int64_t tokens = 0;           // in-vocabulary tokens processed (all epochs, both sides)
  int64_t updates[2] = {0, 0};  // monolingual, cross-lingual
  double loss[2] = {0, 0};      // summed
  std::vector<double> epoch_loss;      // summed per epoch (both kinds)
  std::vector<int64_t> epoch_updates;  // per epoch

  double mean_loss(int kind) const { return updates[kind] ? loss[kind] / updates[kind] : 0.0; }
  double mean_loss() const {
    const int64_t n = updates[0] + updates[1];
    return n ? (loss[0] + loss[1]) / n : 0.0;
  }
  double words_per_sec_per_thread(int threads) const {
    return seconds > 0 ? tokens / seconds / threads : 0.0;
  }
};

// The in-vocabulary tokens of `path` (checking every line, as build_vocabulary does).
int64_t count_tokens(const std::string& path, const Vocabulary& vocab, const std::string langs[2]);

class Trainer {
 public:
  // `ntokens`: the in-vocabulary tokens of one pass over args.input.
  Trainer(Model& model, const Args& args, int64_t ntokens);
  TrainStats run();

  // The keep probability of each word (exposed for the tests).
  const std::vector<float>& keep() const { return keep_; }

 private:
  void thread_main(int id, TrainStats& out);
  void report(double progress, double loss, double elapsed);

  // Read by every thread on every token: never on the counter's cache line.
  Model& model_;
  const Args& args_;
  int64_t ntokens_;
  std::vector<float> keep_;
  NegativeTable negatives_;
  double start_ = 0;
  // In-vocabulary tokens done by all threads (the learning-rate schedule's clock). Last and
  // aligned to 64 bytes: alone on its cache line (the class's size rounds up to 64).
  alignas(64) std::atomic<int64_t> processed_{0};
};

}  // namespace bisent2vec
