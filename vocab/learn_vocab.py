"""Learns a vocabulary that `data_prep.tokenization.FullTokenizer` can use as is.

  python -m vocab.learn_vocab --input_file=corpus.txt --output_file=vocab.txt \\
      --vocab_size=30000 [--do_lower_case=True] [--algorithm=wordpiece]

The original release shipped vocabularies but no way to make one. Words are
produced by our own BasicTokenizer, so the vocabulary sees text exactly as the
tokenizer will later present it (same cleaning, casing, accent stripping,
punctuation and CJK splitting). Two learners:
  wordpiece      tensorflow-text's WordPiece learner on the word counts;
  sentencepiece  a SentencePiece model on the same words, its pieces
                 converted to WordPiece form ("▁x" -> "x", "x" -> "##x").
                 The .model file is kept next to the vocabulary.
The file starts like the released ones: [PAD], then --num_unused [unusedN]
slots, then [UNK] [CLS] [SEP] [MASK], then the learned tokens.
"""

import collections
import logging as py_logging
import os
import sys
import tempfile
import time

if __package__ in (None, ""):  # Run as a file path: make the repo importable.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app
from absl import flags
from absl import logging

from data_prep import cli
from data_prep import text_io
from data_prep import tokenization
from data_prep.errors import UserError

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Text file(s): comma-separated globs.")
flags.DEFINE_string("output_file", None, "Where to write vocab.txt.")
flags.DEFINE_integer("vocab_size", 30522, "Target size, special tokens included.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents first.")
flags.DEFINE_enum("algorithm", "wordpiece", ["wordpiece", "sentencepiece"],
                  "Which learner to use.")
flags.DEFINE_integer("num_unused", 0, "How many [unusedN] slots to reserve.")
flags.DEFINE_integer("max_unique_chars", 1000,
                     "Alphabet size limit (rarer characters become [UNK]).")
flags.DEFINE_integer("max_token_length", 50, "Longest word considered.")

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")


def reserved_tokens(num_unused):
  return (["[PAD]"] + ["[unused%d]" % i for i in range(num_unused)] +
          list(SPECIAL_TOKENS))


def count_words(input_files, do_lower_case, log_every_seconds=10.0):
  """Counts the basic tokens of the corpus (what WordPiece will be applied to)."""
  basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
  raw_counts = collections.Counter()
  start = last_log = time.time()
  size = 0
  for path in input_files:
    for _, line in text_io.iter_text_lines(path, errors="ignore"):
      size += len(line) + 1
      raw_counts.update(basic._clean_and_split(line))
      if time.time() - last_log > log_every_seconds:
        logging.info("Counted %.1f MB (%.1f MB/s).", size / 1e6,
                     size / 1e6 / (time.time() - start))
        last_log = time.time()
  counts = collections.Counter()
  for word, count in raw_counts.items():
    for token in basic._split_word(word):
      counts[token] += count
  logging.info("%d distinct words in %.1f MB.", len(counts), size / 1e6)
  return counts


def learn_wordpiece(counts, vocab_size, reserved, max_unique_chars,
                    max_token_length):
  from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner
  # include_joiner_token=True is what makes the learner emit "##" pieces.
  tokens = learner.learn(
      list(counts.items()), vocab_size=vocab_size, reserved_tokens=reserved,
      max_unique_chars=max_unique_chars, max_token_length=max_token_length,
      lower_thresh=2, include_joiner_token=True, joiner="##")
  return [t for t in tokens if t != "##"]


def learn_sentencepiece(counts, vocab_size, reserved, model_prefix):
  import sentencepiece as spm
  with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False,
                                   encoding="utf-8") as f:
    # One word per line with its count: SentencePiece's TSV input.
    for word, count in counts.items():
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
  tmp = output_file + ".tmp-%d" % os.getpid()
  with open(tmp, "w", encoding="utf-8") as f:
    for token in tokens:
      f.write(token + "\n")
  os.replace(tmp, output_file)


def main(_):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  input_files = text_io.expand_globs(FLAGS.input_file)
  reserved = reserved_tokens(FLAGS.num_unused)
  if FLAGS.vocab_size <= len(reserved):
    raise app.UsageError("--vocab_size must exceed the %d reserved tokens." %
                         len(reserved))
  counts = count_words(input_files, FLAGS.do_lower_case)
  if not counts:
    raise UserError("No words found in %s." % FLAGS.input_file)
  start = time.time()
  if FLAGS.algorithm == "wordpiece":
    tokens = learn_wordpiece(counts, FLAGS.vocab_size, reserved,
                             FLAGS.max_unique_chars, FLAGS.max_token_length)
  else:
    prefix = os.path.splitext(FLAGS.output_file)[0] + ".sentencepiece"
    tokens = learn_sentencepiece(counts, FLAGS.vocab_size, reserved, prefix)
  write_vocab(tokens, FLAGS.output_file)
  logging.info("Wrote %d tokens to %s (learned in %.1fs).", len(tokens),
               FLAGS.output_file, time.time() - start)


if __name__ == "__main__":
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("output_file")
  cli.run(main)
