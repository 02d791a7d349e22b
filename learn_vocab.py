"""Learns a vocabulary that `data_prep.tokenization.FullTokenizer` can use as is.

  python learn_vocab.py --input_file=corpus.txt --output_file=vocab.txt \\
      --vocab_size=30000 [--do_lower_case=True] [--algorithm=wordpiece]

The learners (wordpiece: tensorflow-text's; sentencepiece: converted to
WordPiece form, its .model file kept next to the vocabulary) and the file's
layout are vocab/learn_vocab.py's. --beam counts the words with an Apache
Beam pipeline instead (arguments this tool does not know are Beam's pipeline
options), for corpora too large for one process; the vocabulary is the
in-memory mode's.
"""

import logging as py_logging
import os
import time

from absl import app
from absl import flags
from absl import logging

from plumbing import cli
from plumbing.errors import UserError
from plumbing import text_io
from vocab import learn_vocab
from vocab import word_counts

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
flags.DEFINE_bool("beam", False,
                  "Count the words with an Apache Beam pipeline (one input file per "
                  "unit of work); arguments this tool does not know are Beam's "
                  "pipeline options, e.g. --runner=DataflowRunner.")


def main(argv):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  if len(argv) > 1 and not FLAGS.beam:
    raise app.UsageError("Unknown arguments %s (Beam pipeline options need --beam)." %
                         " ".join(argv[1:]))
  input_files = text_io.expand_globs(FLAGS.input_file)
  reserved = learn_vocab.reserved_tokens(FLAGS.num_unused)
  if FLAGS.vocab_size <= len(reserved):
    raise app.UsageError("--vocab_size must exceed the %d reserved tokens." %
                         len(reserved))
  if FLAGS.beam:
    counts = learn_vocab.count_words_beam(input_files, FLAGS.do_lower_case, argv[1:])
  else:
    counts = word_counts.count_words(input_files, FLAGS.do_lower_case)
  if not counts:
    raise UserError("No words found in %s." % FLAGS.input_file)
  start = time.time()
  if FLAGS.algorithm == "wordpiece":
    tokens = learn_vocab.learn_wordpiece(counts, FLAGS.vocab_size, reserved,
                                         FLAGS.max_unique_chars, FLAGS.max_token_length)
  else:
    prefix = os.path.splitext(FLAGS.output_file)[0] + ".sentencepiece"
    tokens = learn_vocab.learn_sentencepiece(counts, FLAGS.vocab_size, reserved, prefix)
  learn_vocab.write_vocab(tokens, FLAGS.output_file)
  logging.info("Wrote %d tokens to %s (learned in %.1fs).", len(tokens),
               FLAGS.output_file, time.time() - start)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("output_file")
  cli.run(main, flags_parser=cli.parse_known_flags)


if __name__ == "__main__":
  cli_main()
