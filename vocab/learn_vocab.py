"""Learns a vocabulary that `data_prep.tokenization.FullTokenizer` can use as
is: the learners of the learn_vocab.py command, with plain arguments.

The original release shipped vocabularies but no way to make one. Words are
BasicTokenizer's tokens (made by the tokenizer's compiled code, which gives
the same), so the vocabulary sees text exactly as the tokenizer will later
present it (same cleaning, casing, accent stripping, punctuation and CJK
splitting). Two learners:
  wordpiece      tensorflow-text's WordPiece learner on the word counts;
  sentencepiece  a SentencePiece model on the same words, its pieces
                 converted to WordPiece form ("▁x" -> "x", "x" -> "##x").
                 The .model file is kept next to the vocabulary.
The file starts like the released ones: [PAD], then `num_unused` [unusedN]
slots, then [UNK] [CLS] [SEP] [MASK], then the learned tokens.

`count_words_beam` counts the words with an Apache Beam pipeline instead
(each input file counted by a worker, the counts summed by the runner), for
corpora too large for one process; the counts, and so the vocabulary, are
those of word_counts.count_words.
"""

import collections
import os
import tempfile
import time

from absl import logging

from plumbing import files
from vocab import word_counts

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")


def reserved_tokens(num_unused):
  return (["[PAD]"] + ["[unused%d]" % i for i in range(num_unused)] +
          list(SPECIAL_TOKENS))


def count_words_beam(input_files, do_lower_case, pipeline_args):
  """word_counts.count_words as a distributed word count: each file counted by a worker,
  the counts summed per word by the runner; the same Counter."""
  import apache_beam as beam
  import tensorflow as tf
  from plumbing import beam_options
  options = beam_options.local_by_default(pipeline_args)
  # The counts go where every worker and this process can reach: the
  # pipeline's temp_location (e.g. gs://) if given, else a local directory.
  temp_root = options.get_all_options().get("temp_location")
  counts_dir = os.path.join(temp_root or tempfile.mkdtemp(), "word_counts-%d" % os.getpid())
  start = time.time()
  with beam.Pipeline(options=options) as pipeline:
    _ = (pipeline
         | "InputFiles" >> beam.Create(input_files)
         | "OneFilePerWorker" >> beam.Reshuffle()
         | "CountFile" >> beam.FlatMap(word_counts.file_token_counts, do_lower_case)
         | "SumTokens" >> beam.CombinePerKey(sum)
         | "Format" >> beam.MapTuple(lambda token, count: "%s\t%d" % (token, count))
         | "Write" >> beam.io.WriteToText(os.path.join(counts_dir, "counts")))
  counts = collections.Counter()
  for path in tf.io.gfile.glob(os.path.join(counts_dir, "counts*")):
    with tf.io.gfile.GFile(path, "r") as f:
      for line in f:
        token, count = line.rstrip("\n").rsplit("\t", 1)
        counts[token] += int(count)
  tf.io.gfile.rmtree(counts_dir)
  logging.info("%d distinct words counted by Beam in %.1fs.", len(counts), time.time() - start)
  return counts


def learn_wordpiece(counts, vocab_size, reserved, max_unique_chars,
                    max_token_length):
  from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner
  # include_joiner_token=True is what makes the learner emit "##" pieces.
  # Sorted: the learner breaks ties in input order, and the counts of the
  # two counting modes come in different orders.
  tokens = learner.learn(
      sorted(counts.items()), vocab_size=vocab_size, reserved_tokens=reserved,
      max_unique_chars=max_unique_chars, max_token_length=max_token_length,
      lower_thresh=2, include_joiner_token=True, joiner="##")
  return [t for t in tokens if t != "##"]


def learn_sentencepiece(counts, vocab_size, reserved, model_prefix):
  import sentencepiece as spm
  with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False,
                                   encoding="utf-8") as f:
    # One word per line with its count: SentencePiece's TSV input.
    for word, count in sorted(counts.items()):  # The same file in either counting mode.
      f.write("%s\t%d\n" % (word, count))
    words_file = f.name
  try:
    spm.SentencePieceTrainer.train(
        input=words_file, input_format="tsv", model_prefix=model_prefix,
        vocab_size=vocab_size - len(reserved), model_type="unigram",
        character_coverage=1.0, split_by_whitespace=True,
        normalization_rule_name="identity", add_dummy_prefix=True,
        unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1, minloglevel=2,
        hard_vocab_limit=False)
  finally:
    os.remove(words_file)
  processor = spm.SentencePieceProcessor(model_file=model_prefix + ".model")
  tokens = list(reserved)
  seen = set(tokens)
  for i in range(processor.get_piece_size()):
    if processor.is_unknown(i) or processor.is_control(i):
      continue
    piece = processor.id_to_piece(i)
    token = piece[1:] if piece.startswith("\u2581") else "##" + piece
    if token and token != "##" and token not in seen:
      seen.add(token)
      tokens.append(token)
  # A piece seen only inside words ("##x") may still start one: make every
  # character available in both positions so no word of the corpus is [UNK].
  chars = sorted({c for word in counts for c in word})
  for token in chars + ["##" + c for c in chars]:
    if token not in seen:
      seen.add(token)
      tokens.append(token)
  return tokens


def write_vocab(tokens, output_file):
  files.write_text(output_file, "".join(token + "\n" for token in tokens))
