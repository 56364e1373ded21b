// Model files: the binary model (PREFIX.bin), the text vectors per language (PREFIX.CODE.vec)
// and the n-gram rows (PREFIX.ngrams.bin). All integers and floats are little-endian.
//
// PREFIX.bin, format version 1:
//   char[8]  "BIS2VEC1"
//   u32      dim, word_ngrams, neg, dropout_k, epoch, threads
//   u64      ngram_rows (bucket rows in the input matrix; 0 when word_ngrams == 1)
//   u64      nwords, min_count, max_vocab_size (0: none), seed
//   f64      lr, t
//   2 x      { u32 length; bytes } the language codes (side 1, side 2)
//   nwords x { u8 language (0 or 1); u32 length; bytes; u64 count }   in id order
//   zero bytes up to the next multiple of 64 of the file offset
//   f32      input matrix, (nwords + 1 + ngram_rows) x dim, row-major:
//              rows [0, nwords) the words, row nwords the placeholder of the masked word,
//              rows nwords + 1 + b the n-gram bucket b (see ngram_hash in dictionary.h)
//   f32      output matrix, nwords x dim
//
// PREFIX.ngrams.bin (only with word_ngrams > 1):
//   char[8]  "BIS2NGR1"
//   u32      dim, word_ngrams
//   u64      ngram_rows, first_row (= nwords + 1: where bucket 0 sits in the input matrix)
//   zero bytes up to offset 64
//   f32      ngram_rows x dim
//
// PREFIX.CODE.vec: fastText's text format, "count dim" then "word v1 .. vdim" per word of
// that language, in id order (most frequent first), values with 6 significant digits.
#pragma once

#include <string>

#include "args.h"
#include "dictionary.h"
#include "matrix.h"

namespace bisent2vec {

struct Model {
  Args args{};  // the shape and the settings it was trained with
  Vocabulary vocab;
  Matrix input, output;
};

void save_model(const std::string& path, const Model& model);
// Throws InputError when the file is missing, not a model, or cut short.
Model load_model(const std::string& path);
void save_vectors(const std::string& path, const Model& model, uint8_t lang);
void save_ngrams(const std::string& path, const Model& model);

}  // namespace bisent2vec
