// Command-line settings of `bisent2vec train`. The command line requires every training
// setting, so they have no defaults here: their one set of defaults is the xlsent config
// schema's (workflow/schemas/config.schema.yaml, `bisent2vec`), which `xlsent bisent2vec-train`
// passes in full. Only the options have defaults (`-verbose`, `-negTableSize`). Code that
// builds an Args itself (a loaded model's, the unit tests') value-initializes it, `Args{}`,
// and sets what it uses.
#pragma once

#include <cstdint>
#include <string>

namespace bisent2vec {

struct Args {
  std::string input;   // the training file (see dictionary.h)
  std::string output;  // the prefix of every output file
  std::string resume;  // a model (.bin) to continue training from, or empty
  std::string lang[2];
  int dim;
  double lr;
  int neg;
  int64_t min_count;
  int dropout_k;
  int epoch;
  int64_t bucket;  // ignored (0 rows) when word_ngrams == 1
  double t;
  int word_ngrams;
  int64_t max_vocab_size;  // 0: no limit
  int threads;
  int lr_update_rate;
  uint64_t seed;
  int verbose = 2;  // 0: errors only, 1: + summary, 2: + progress lines
  int64_t negative_table_size = 10000000;

  // The n-gram bucket rows the input matrix gets: none without n-grams (as fastText does).
  int64_t ngram_rows() const { return word_ngrams > 1 ? bucket : 0; }
};

// Parses `-name value` pairs (argv[first..argc)); throws InputError on an unknown flag, a
// missing setting, a missing or malformed value, or an invalid setting.
Args parse_train_args(int argc, char** argv, int first);
void validate(const Args& args);
std::string train_usage();

}  // namespace bisent2vec
