"""Raw text as words, split where the original's BasicTokenizer splits it,
each word with its code-point offsets into the text as sent (end excluded):
`word_spans` in Python (run_ner.py --predict_file), `words_of` as TensorFlow
ops (the NER export). Both read one table of character kinds, made from the
original's own predicates (data_prep/tokenization.py), so they agree on
every text.

Each character is one of:
  * DROPPED: NUL, U+FFFD and control characters, which the original's
    cleaning deletes: they neither end a word nor make one ("a\\u200bb" is
    one word, and its span holds the U+200B);
  * SPACE: the original's whitespace, and what `str.split()` splits on;
  * ALONE: punctuation (ASCII's characters that are neither letters nor
    digits, and Unicode's P* categories) and CJK ideographs, a word each;
  * PART of a word: any other character.
Casing plays no part: lower-casing and accent stripping act inside a word,
when it becomes WordPieces (on the rare character they turn into
punctuation, U+1FEF becoming "`", the pieces still make one word).
"""

import functools
import re

import tensorflow as tf

from data_prep import tokenization

PART, SPACE, DROPPED, ALONE = 0, 1, 2, 3
_NUM_CODE_POINTS = 0x110000


def kind_of(char):
  """The kind of one character (see the module docstring)."""
  # pylint: disable=protected-access  (the original's predicates, private there)
  cp = ord(char)
  if cp in (0, 0xFFFD) or tokenization._is_control(char):
    return DROPPED
  if tokenization._is_whitespace(char) or char.isspace():
    return SPACE
  if tokenization._is_chinese_char(cp) or tokenization._is_punctuation(char):
    return ALONE
  return PART


@functools.lru_cache(maxsize=None)
def kind_runs():
  """((first code point, kind), ...): each run of code points of one kind,
  ascending (a few hundred runs cover Unicode)."""
  runs = []
  for cp in range(_NUM_CODE_POINTS):
    kind = kind_of(chr(cp))
    if not runs or runs[-1][1] != kind:
      runs.append((cp, kind))
  return tuple(runs)


@functools.lru_cache(maxsize=None)
def _word_pattern():
  """A word: one ALONE character, or PART characters with DROPPED ones
  between them (never at its ends)."""
  ranges = {PART: [], DROPPED: [], ALONE: [], SPACE: []}
  runs = kind_runs()
  for (first, kind), (following, _) in zip(runs, runs[1:] + ((_NUM_CODE_POINTS, None),)):
    ranges[kind].append("\\U%08x-\\U%08x" % (first, following - 1))
  part, dropped, alone = ("[%s]" % "".join(ranges[k]) for k in (PART, DROPPED, ALONE))
  return re.compile("%s|%s(?:%s*%s)*" % (alone, part, dropped, part))


def word_spans(text):
  """[(start, end)] of the words of `text` (a str), in order."""
  return [match.span() for match in _word_pattern().finditer(text)]


def words_of(texts):
  """`word_spans` as TensorFlow ops, on UTF-8 strings [batch] (invalid bytes
  read as U+FFFD, which is DROPPED): (words [batch, (words)] strings, start
  and end [batch, (words)] int32 code-point offsets, end excluded); a word's
  string is its span of the text."""
  firsts, kinds = zip(*kind_runs())
  chars = tf.strings.unicode_decode(texts, "UTF-8", errors="replace")
  flat = chars.flat_values
  kind = tf.gather(tf.constant(kinds, tf.int32),
                   tf.searchsorted(tf.constant(firsts, tf.int32), flat, side="right") - 1)
  position = tf.ragged.range(tf.cast(chars.row_lengths(), tf.int32)).flat_values
  row = tf.cast(chars.value_rowids(), tf.int32)
  # The characters that count, each beside its neighbours of the same text.
  kept = tf.not_equal(kind, DROPPED)
  kind, position, row = (tf.boolean_mask(v, kept) for v in (kind, position, row))
  part, alone = tf.equal(kind, PART), tf.equal(kind, ALONE)
  part_before = tf.concat([[False], part], 0)[:-1] & tf.equal(
      tf.concat([[-1], row], 0)[:-1], row)
  part_after = tf.concat([part, [False]], 0)[1:] & tf.equal(tf.concat([row, [-1]], 0)[1:], row)
  begins, finishes = alone | (part & ~part_before), alone | (part & ~part_after)
  starts, ends = tf.boolean_mask(position, begins), tf.boolean_mask(position + 1, finishes)
  word_row = tf.boolean_mask(row, begins)
  batch = tf.shape(texts, out_type=tf.int64)[0]
  rows = tf.cast(word_row, tf.int64)  # Row splits as the tokenizer's, int64.
  start = tf.RaggedTensor.from_value_rowids(starts, rows, nrows=batch)
  end = tf.RaggedTensor.from_value_rowids(ends, rows, nrows=batch)
  offsets = tf.gather(tf.cast(chars.row_splits, tf.int32), word_row)
  words = tf.strings.unicode_encode(tf.gather(flat, tf.ragged.range(starts + offsets,
                                                                    ends + offsets)), "UTF-8")
  return start.with_flat_values(words), start, end
