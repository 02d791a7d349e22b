"""Raw text as words, split where the original's BasicTokenizer splits it:
at whitespace, and every punctuation mark and CJK ideograph a word of its
own (chars.py says which character is which); each word with its
code-point offsets into the text as sent (end excluded): `word_spans` in
Python, `words_of` as TensorFlow ops. The split of training words that
followed it, such as Chinese data of a character a line.

Casing plays no part: lower-casing and accent stripping act inside a word,
when it becomes WordPieces (on the rare character they turn into
punctuation, U+1FEF becoming "`", the pieces still make one word).
"""

import functools
import re

import tensorflow as tf

from serving.words import chars


@functools.lru_cache(maxsize=None)
def _word_pattern():
  """A word: one punctuation mark or ideograph, or word parts with dropped
  characters between them (never at its ends)."""
  part, dropped, alone = ("[%s]" % chars.code_point_ranges(kinds) for kinds in (
      chars.PARTS, (chars.DROPPED,), (chars.PUNCTUATION, chars.IDEOGRAPH)))
  return re.compile("%s|%s(?:%s*%s)*" % (alone, part, dropped, part))


def word_spans(text):
  """[(start, end)] of the words of `text` (a str), in order."""
  return [match.span() for match in _word_pattern().finditer(text)]


def words_of(texts):
  """`word_spans` as TensorFlow ops, on UTF-8 strings [batch]: (words
  [batch, (words)] strings, start and end [batch, (words)] int32 code-point
  offsets, end excluded); a word's string is its span of the text."""
  decoded = chars.decode(texts)
  kind = chars.kinds_of(decoded.flat_values)
  position = tf.ragged.range(tf.cast(decoded.row_lengths(), tf.int32)).flat_values
  row = tf.cast(decoded.value_rowids(), tf.int32)
  # The characters that count, each beside its neighbours of the same text.
  kept = tf.not_equal(kind, chars.DROPPED)
  kind, position, row = (tf.boolean_mask(v, kept) for v in (kind, position, row))
  alone = tf.equal(kind, chars.PUNCTUATION) | tf.equal(kind, chars.IDEOGRAPH)
  part = tf.reduce_any(tf.equal(kind[:, None], list(chars.PARTS)), axis=1)
  part_before = tf.concat([[False], part], 0)[:-1] & tf.equal(
      tf.concat([[-1], row], 0)[:-1], row)
  part_after = tf.concat([part, [False]], 0)[1:] & tf.equal(tf.concat([row, [-1]], 0)[1:], row)
  begins, finishes = alone | (part & ~part_before), alone | (part & ~part_after)
  return chars.cut_words(decoded, tf.boolean_mask(position, begins),
                         tf.boolean_mask(position + 1, finishes), tf.boolean_mask(row, begins))
