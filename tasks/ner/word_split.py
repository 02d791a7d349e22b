"""Which split of raw text into words (serving/words' SPLITS) a tagger
reads: the convention its training words followed, kept with the run so
that its export and `run_ner.py --predict_file` cut raw text as training
cut its sentences. A tagger learns one label per training word, read at the
word's first WordPiece; raw text cut otherwise is read at pieces training
never labelled (`U.S.` as `U` `.` `S` `.`).

Decided in one place, `choose`, with one log line saying why: the flag
(--raw_text_words) if given; else the run's record (RECORD_FILE in its
output directory); else the training words: words that hold punctuation
beside letters or digits (`U.S.`, `3,000`, `Chester-le-Street`, `'s`)
mean Penn Treebank's conventions, and data where every punctuation mark is
a word of its own (Chinese data of a character a line, text the original's
BasicTokenizer split) keeps the basic split; a run from before the record
whose training file is not at hand reads Treebank's, the convention of
CoNLL-2003 and most English NER data.
"""

import collections
import os

from absl import logging
import tensorflow as tf

from plumbing.errors import UserError
from plumbing import files
from serving import words
from serving.words import chars

RECORD_FILE = "raw_text_words.txt"  # In output_dir, beside labels.txt.
TREEBANK, BASIC = "treebank", "basic"
SPLITS = tuple(words.SPLITS)
# The least share of training words holding punctuation beside letters or
# digits that means Treebank's words (CoNLL-2003's train file: 5.6%).
TREEBANK_SHARE = 0.001


def joins_punctuation(word):
  """True if `word` holds punctuation beside a letter or digit, which the
  basic split would cut apart (`U.S.`, `3,000`, `'s`)."""
  kinds = {chars.kind_of(c) for c in word}
  return chars.PUNCTUATION in kinds and bool(kinds & set(chars.PARTS))


def detect(sentences):
  """(split, why) from the training sentences' words."""
  counts = collections.Counter(w for sentence in sentences for w in sentence.words)
  total = sum(counts.values())
  joined = {w: n for w, n in counts.items() if joins_punctuation(w)}
  found = sum(joined.values())
  examples = ", ".join(sorted(joined, key=lambda w: (-joined[w], w))[:3])
  if total and found >= TREEBANK_SHARE * total:
    return TREEBANK, ("%d of the %d training words hold punctuation beside letters or digits "
                      "(%s), as Penn Treebank's words do" % (found, total, examples))
  return BASIC, ("%d of the %d training words hold punctuation beside letters or digits%s: "
                 "each punctuation mark is a word of its own, as the original's BasicTokenizer "
                 "splits" % (found, total, " (%s)" % examples if found else ""))


def read_record(output_dir):
  """The split recorded in output_dir, or None."""
  path = os.path.join(output_dir, RECORD_FILE)
  if not files.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    recorded = f.read().strip()
  if recorded not in SPLITS:
    raise UserError("%s holds %r; expected one of %s (or remove the file)."
                    % (path, recorded, ", ".join(SPLITS)))
  return recorded


def choose(output_dir, chosen=None, training_sentences=None, training=False):
  """The split this run reads raw text with, logged with its reason.

  Args:
    output_dir: the run's directory, which holds the record.
    chosen: the split the user named (--raw_text_words), or None.
    training_sentences: a function returning the training sentences, or
      None when no training file is at hand.
    training: whether this run trains: a split it chose is recorded.
  """
  path = os.path.join(output_dir, RECORD_FILE)
  recorded = read_record(output_dir)
  if chosen:
    if chosen not in SPLITS:
      raise UserError("--raw_text_words=%s: expected one of %s." % (chosen, ", ".join(SPLITS)))
    if training or not recorded:
      files.write_text(path, chosen + "\n")
    split, why = chosen, "--raw_text_words" + (
        "; the run's record says %s" % recorded if recorded not in (None, chosen) and
        not training else "")
  elif recorded:
    split, why = recorded, "as this run's training words, recorded in " + path
  elif training_sentences is not None:
    split, why = detect(training_sentences())
    files.write_text(path, split + "\n")
  else:
    split, why = TREEBANK, ("%s records no split (a run from before the record) and no "
                            "training file is at hand: Penn Treebank's, as CoNLL-2003's words; "
                            "--raw_text_words=basic if its words split every punctuation mark"
                            % output_dir)
  logging.info("Raw text is cut into words by the %s split (%s).", split, why)
  return split
