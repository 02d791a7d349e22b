"""The one table of character kinds both word splits read (basic.py,
treebank.py), in Python and as TensorFlow ops, made from the original's own
predicates (data_prep/tokenization.py) so that both treat a character as
its BasicTokenizer does; and the ops that cut words out of decoded text.

Each character is one of:
  * DROPPED: NUL, U+FFFD and control characters, which the original's
    cleaning deletes: they neither end a word nor make one ("a\\u200bb" is
    one word, and its span holds the U+200B);
  * SPACE: the original's whitespace, and what `str.split()` splits on;
  * PUNCTUATION: ASCII's characters that are neither letters nor digits,
    and Unicode's P* categories;
  * IDEOGRAPH: CJK ideographs;
  * UPPER (categories Lu, Lt), DIGIT (Nd) or OTHER: parts of words, told
    apart for the Treebank split's sentence and number rules.
"""

import functools
import unicodedata

import tensorflow as tf

from data_prep import tokenization

OTHER, SPACE, DROPPED, PUNCTUATION, IDEOGRAPH, UPPER, DIGIT = range(7)
PARTS = (OTHER, UPPER, DIGIT)  # Kinds that belong to a word with their neighbours.
NUM_CODE_POINTS = 0x110000


def kind_of(char):
  """The kind of one character (see the module docstring)."""
  cp = ord(char)
  if cp in (0, 0xFFFD) or tokenization.is_control(char):
    return DROPPED
  if tokenization.is_whitespace(char) or char.isspace():
    return SPACE
  if tokenization.is_chinese_char(cp):
    return IDEOGRAPH
  if tokenization.is_punctuation(char):
    return PUNCTUATION
  category = unicodedata.category(char)
  if category in ("Lu", "Lt"):
    return UPPER
  return DIGIT if category == "Nd" else OTHER


@functools.lru_cache(maxsize=None)
def kind_runs():
  """((first code point, kind), ...): each run of code points of one kind,
  ascending (a few thousand runs cover Unicode)."""
  runs = []
  for cp in range(NUM_CODE_POINTS):
    kind = kind_of(chr(cp))
    if not runs or runs[-1][1] != kind:
      runs.append((cp, kind))
  return tuple(runs)


def code_point_ranges(kinds):
  """The code points of `kinds` as a regular-expression class body
  (\\Uxxxxxxxx-\\Uxxxxxxxx ranges, for Python's re)."""
  runs = kind_runs()
  ends = [first for first, _ in runs[1:]] + [NUM_CODE_POINTS]
  return "".join("\\U%08x-\\U%08x" % (first, end - 1)
                 for (first, kind), end in zip(runs, ends) if kind in kinds)


def is_punctuation_only(word):
  """True if `word` has punctuation and nothing else that counts (dropped
  characters aside): no entity begins or ends with such a word."""
  kinds = [kind_of(c) for c in word]
  return PUNCTUATION in kinds and all(k in (PUNCTUATION, DROPPED) for k in kinds)


def kinds_of(code_points):
  """kind_of as TensorFlow ops, on int32 code points of any shape."""
  firsts, kinds = zip(*kind_runs())
  return tf.gather(tf.constant(kinds, tf.int32),
                   tf.searchsorted(tf.constant(firsts, tf.int32), code_points, side="right") - 1)


def punctuation_only(words):
  """is_punctuation_only as TensorFlow ops, on UTF-8 strings [words]."""
  decoded = tf.strings.unicode_decode(words, "UTF-8", errors="replace")
  kinds = tf.ragged.map_flat_values(kinds_of, decoded)
  punctuation = tf.equal(kinds, PUNCTUATION)
  return (tf.reduce_any(punctuation, axis=-1) &
          tf.reduce_all(punctuation | tf.equal(kinds, DROPPED), axis=-1))


def decode(texts):
  """UTF-8 strings [batch] as code points [batch, (chars)] (invalid bytes
  read as U+FFFD, which is DROPPED)."""
  return tf.strings.unicode_decode(texts, "UTF-8", errors="replace")


def cut_words(chars, starts, ends, word_row):
  """Words from code-point spans: `chars` [batch, (chars)] as `decode`
  gives them, each word's int32 `starts`, `ends` (end excluded) and text
  (`word_row`) in order. Returns (words [batch, (words)] strings, start and
  end [batch, (words)] int32)."""
  batch = chars.nrows(out_type=tf.int64)
  rows = tf.cast(word_row, tf.int64)  # Row splits as the tokenizer's, int64.
  start = tf.RaggedTensor.from_value_rowids(starts, rows, nrows=batch)
  end = tf.RaggedTensor.from_value_rowids(ends, rows, nrows=batch)
  offsets = tf.gather(tf.cast(chars.row_splits, tf.int32), word_row)
  words = tf.strings.unicode_encode(tf.gather(chars.flat_values, tf.ragged.range(
      starts + offsets, ends + offsets)), "UTF-8")
  return start.with_flat_values(words), start, end
