#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

namespace bisent2vec {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Each stream of random numbers gets its own seed derived from the run's.
uint64_t stream_seed(uint64_t seed, uint64_t stream) {
  Rng mix(seed ^ (0xD1B54A32D192ED03ULL * (stream + 1)));
  return mix.next();
}

void lookup(const Vocabulary& vocab, uint8_t lang, std::string_view side,
            std::vector<int32_t>& ids) {
  ids.clear();
  for_each_token(side, [&](std::string_view token) {
    const int32_t id = vocab.find(lang, token);
    if (id >= 0) ids.push_back(id);
  });
}

}  // namespace

int64_t count_tokens(const std::string& path, const Vocabulary& vocab, const std::string langs[2]) {
  LineReader reader(path);
  std::string_view line, sides[2];
  std::vector<int32_t> ids;
  int64_t n = 0, lineno = 0;
  while (reader.next(line)) {
    ++lineno;
    if (!split_pair(line, sides)) {
      throw InputError(path + ":" + std::to_string(lineno) + ": expected one tab between the " +
                       langs[0] + " and " + langs[1] + " tokens");
    }
    for (uint8_t s = 0; s < 2; ++s) {
      lookup(vocab, s, sides[s], ids);
      n += static_cast<int64_t>(ids.size());
    }
  }
  return n;
}

Trainer::Trainer(Model& model, const Args& args, int64_t ntokens)
    : model_(model), args_(args), ntokens_(ntokens) {
  if (ntokens_ <= 0) {
    throw InputError(args.input + " holds no word of the vocabulary: nothing to train on");
  }
  const Vocabulary& vocab = model.vocab;
  const int64_t total = vocab.ntokens();
  std::vector<int64_t> counts;
  for (const Word& w : vocab.words()) {
    keep_.push_back(static_cast<float>(keep_probability(w.count, total, args.t)));
    counts.push_back(w.count);
  }
  negatives_ = NegativeTable::from_counts(counts, args.negative_table_size,
                                          stream_seed(args.seed, 0), args.threads);
}

void Trainer::report(double progress, double loss, double elapsed) {
  const double wst = processed_.load() / std::max(elapsed, 1e-9) / args_.threads;
  const double lr = args_.lr * (1.0 - progress);
  const int eta = progress > 0 ? static_cast<int>(elapsed / progress * (1.0 - progress)) : 0;
  std::fprintf(stderr,
               "progress %5.1f%%  words/sec/thread %8.0f  lr %.6f  loss %.6f  eta %dh%02dm%02ds\n",
               100.0 * progress, wst, lr, loss, eta / 3600, eta / 60 % 60, eta % 60);
  std::fflush(stderr);
}

void Trainer::thread_main(int id, TrainStats& out) {
  const Args& a = args_;
  const Vocabulary& vocab = model_.vocab;
  const int32_t placeholder = vocab.size();
  const int64_t first_bucket_row = placeholder + 1;
  const auto bucket = static_cast<uint64_t>(a.ngram_rows());
  const int64_t total = static_cast<int64_t>(a.epoch) * ntokens_;
  const float* keep = keep_.data();

  LineReader reader(a.input);
  reader.seek(reader.file_size() * static_cast<uint64_t>(id) / static_cast<uint64_t>(a.threads));
  Worker worker(model_.input, model_.output, negatives_, a.neg, stream_seed(a.seed, id + 1));
  Rng& rng = worker.rng();

  // This thread's counts, in its own stack frame (and heap blocks) until the end: `out` sits
  // beside the other threads' results, and a write there on every update would move that
  // cache line between the cores on every update.
  TrainStats st;
  st.epoch_loss.assign(static_cast<size_t>(a.epoch), 0.0);
  st.epoch_updates.assign(static_cast<size_t>(a.epoch), 0);
  double window_loss = 0;  // thread 0's loss since its last progress line
  int64_t window_updates = 0;
  std::vector<int32_t> ids[2], context;
  std::vector<char> dropped;
  std::string_view line, sides[2];
  int64_t pending = 0;
  int last_percent = 0;
  double last_report = now();

  while (processed_.load(std::memory_order_relaxed) < total) {
    if (!reader.next(line)) {
      reader.seek(0);
      continue;
    }
    if (!split_pair(line, sides)) continue;  // every line was checked before training
    for (uint8_t s = 0; s < 2; ++s) lookup(vocab, s, sides[s], ids[s]);
    const auto n = static_cast<int64_t>(ids[0].size() + ids[1].size());
    const double progress =
        static_cast<double>(processed_.load(std::memory_order_relaxed)) / static_cast<double>(total);
    const auto lr = static_cast<float>(a.lr * (1.0 - progress));
    const auto epoch = static_cast<size_t>(std::min(a.epoch - 1, static_cast<int>(progress * a.epoch)));

    // Loss bookkeeping of one update: per kind (0 monolingual, 1 cross-lingual), per epoch,
    // and for the progress line.
    auto record = [&](int kind, float loss) {
      st.loss[kind] += loss;
      ++st.updates[kind];
      st.epoch_loss[epoch] += loss;
      ++st.epoch_updates[epoch];
      window_loss += loss;
      ++window_updates;
    };
    for (int s = 0; s < 2; ++s) {
      const std::vector<int32_t>& own = ids[s];
      const std::vector<int32_t>& other = ids[1 - s];
      for (size_t i = 0; i < own.size(); ++i) {
        const int32_t target = own[i];
        if (rng.uniform() > keep[target]) continue;
        // Monolingual: the sentence with the target masked (a one-word side: the
        // placeholder alone, as the reference trainer does).
        context = own;
        context[i] = placeholder;
        add_ngrams(context, a.word_ngrams, bucket, first_bucket_row, a.dropout_k, &rng, dropped);
        record(0, worker.update(context.data(), context.size(), target, lr));
        if (!other.empty()) {  // cross-lingual: the whole translation
          context = other;
          add_ngrams(context, a.word_ngrams, bucket, first_bucket_row, a.dropout_k, &rng, dropped);
          record(1, worker.update(context.data(), context.size(), target, lr));
        }
      }
    }

    pending += n;
    st.tokens += n;
    if (pending >= a.lr_update_rate) {
      const int64_t done = processed_.fetch_add(pending) + pending;
      pending = 0;
      if (id == 0 && a.verbose >= 2) {
        // A line every 5 % of the run, or every minute on a long one.
        const double p = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
        const int percent = static_cast<int>(p * 100.0);
        const double t = now();
        if (percent >= last_percent + 5 || t - last_report >= 60.0) {
          last_percent = percent - percent % 5;
          last_report = t;
          report(p, window_updates ? window_loss / window_updates : 0.0, t - start_);
          window_loss = 0;
          window_updates = 0;
        }
      }
    }
  }
  processed_.fetch_add(pending);
  out = std::move(st);
}

TrainStats Trainer::run() {
  std::vector<TrainStats> locals(static_cast<size_t>(args_.threads));
  std::vector<std::exception_ptr> errors(locals.size());
  start_ = now();
  processed_ = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < args_.threads; ++i) {
    threads.emplace_back([this, i, &locals, &errors] {
      try {
        thread_main(i, locals[static_cast<size_t>(i)]);
      } catch (...) {
        errors[static_cast<size_t>(i)] = std::current_exception();
        processed_ = static_cast<int64_t>(args_.epoch) * ntokens_;  // stop the others
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  TrainStats total;
  total.seconds = now() - start_;
  total.epoch_loss.assign(static_cast<size_t>(args_.epoch), 0.0);
  total.epoch_updates.assign(static_cast<size_t>(args_.epoch), 0);
  for (const TrainStats& l : locals) {
    total.tokens += l.tokens;
    for (int k = 0; k < 2; ++k) {
      total.updates[k] += l.updates[k];
      total.loss[k] += l.loss[k];
    }
    for (size_t e = 0; e < l.epoch_loss.size(); ++e) {
      total.epoch_loss[e] += l.epoch_loss[e];
      total.epoch_updates[e] += l.epoch_updates[e];
    }
  }
  return total;
}

}  // namespace bisent2vec
