"""`tokenization.FullTokenizer` as TensorFlow ops, for serving.

A SavedModel that takes raw text has to tokenize inside the graph, with ops
stock TF Serving knows: TensorFlow core plus the classic tensorflow_text ops.
`GraphTokenizer` gives the same ids as `FullTokenizer` for any text. TF's own
Unicode data (ICU, RE2) differs from Python's in places, so nothing here asks
TF what a character is: every per-character decision is made in Python, with
the predicates of `tokenization` and `unicodedata`, when the tokenizer is
built, and stored as tables.

How the Python steps become table lookups:
  * Cleaning, CJK spacing, lower-casing, NFD with Mn marks dropped, the
    punctuation split and the splits on `str.isspace` characters are all
    per-character, so each code point maps to a fixed string in which word
    boundaries are plain spaces ("É" -> "e", "," -> " , ", U+2028 -> " ",
    a Hangul syllable -> its Jamo). The text is then split on spaces.
  * `str.lower()` has one context rule, Final_Sigma: U+03A3 becomes U+03C2
    when the nearest non-case-ignorable character before it is cased and the
    nearest after it is not (or there is none). A regex rewrites those sigmas
    first, with character classes derived from what `str.lower()` does.
  * NFD sorts runs of combining characters by combining class. Dropping Mn
    makes that invisible except for the few non-Mn characters with a non-zero
    class (some viramas, Hangul tone marks, musical symbols); texts holding
    one take a slower exact branch that sorts like NFD.
  * WordPiece is tensorflow_text's classic `WordpieceTokenizer` (same greedy
    longest-match-first). It limits words in bytes, the original in code
    points, so words over 200 code points are replaced by "[UNK]" first.
Invalid UTF-8 is dropped as `bytes.decode("utf-8", "ignore")` does: both
decoders skip each maximal ill-formed subsequence, Unicode's recommended
practice; the tests check random mixes of truncated, overlong, surrogate and
out-of-range sequences.
"""

import functools
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from data_prep import tokenization

_NUM_CODE_POINTS = 0x110000
_SPACE = 0x20
_SIGMA = "\u03a3"
_FINAL_SIGMA = "\u03c2"
# WordpieceTokenizer.max_input_chars_per_word of the original.
_MAX_WORD_CHARS = 200

# A code point's kind in a _CharMap table, and the table's flag bit.
_IDENTITY, _SPACED, _ENTRY, _FLAG = 0, 1, 2, 4


# ----------------------------------------------------------------------------
# What each code point becomes, computed with Python's Unicode data.


def _code_points():
  """Every code point UTF-8 decoding can produce (no surrogates)."""
  return (cp for cp in range(_NUM_CODE_POINTS) if not 0xD800 <= cp <= 0xDFFF)


def _apply_each(function, texts):
  """[function(t) for t in texts] in one call, for lower() and NFD.

  Both act on "\\n"-separated texts as on each text alone: "\\n" is neither
  cased nor case-ignorable (so it ends a Final_Sigma context like the end of
  a string does) and is a starter (so NFD never reorders across it).
  """
  joinable = [t for t in texts if "\n" not in t]
  results = iter(function("\n".join(joinable)).split("\n"))
  out = [function(t) if "\n" in t else next(results) for t in texts]
  assert next(results, None) is None
  return out


def _is_dropped(char):
  return char in "\x00\ufffd" or tokenization.is_control(char)


@functools.lru_cache(maxsize=None)
def _special_code_points():
  """Code points that cleaning or `_split_word` may change, in either casing.

  Any other code point is its own output whatever the casing.
  """
  cps = list(_code_points())
  chars = [chr(cp) for cp in cps]
  lowered = _apply_each(
      lambda text: unicodedata.normalize("NFD", text.lower()), chars)
  return tuple(
      cp for cp, char, low in zip(cps, chars, lowered)
      if low != char or _is_dropped(char) or tokenization.is_whitespace(char)
      or char.isspace() or tokenization.is_chinese_char(cp)
      or tokenization.is_punctuation(char)
      or unicodedata.category(char) == "Mn")


def _split_punctuation_and_space(chars):
  """The punctuation split and the final whitespace split, as spacing."""
  out = []
  for char in chars:
    if tokenization.is_punctuation(char):
      out.append(" " + char + " ")
    elif char.isspace():
      out.append(" ")
    else:
      out.append(char)
  return "".join(out)


def _char_output(cp, do_lower_case, keep_marks):
  """What one code point of the input becomes, spaces marking word breaks.

  Mirrors `_CleanAndSpaceTable`, `str.split()` (which also splits on U+2028
  and U+2029, characters cleaning keeps) and `_split_word`; with keep_marks,
  Mn marks are not dropped.
  """
  char = chr(cp)
  if _is_dropped(char):
    return ""
  if tokenization.is_whitespace(char) or char.isspace():
    return " "
  word = char
  if do_lower_case:
    word = unicodedata.normalize("NFD", word.lower())
    if not keep_marks:
      word = "".join(c for c in word if unicodedata.category(c) != "Mn")
  out = _split_punctuation_and_space(word)
  if tokenization.is_chinese_char(cp):
    out = " " + out + " "
  return out


@functools.lru_cache(maxsize=None)
def _changed_outputs(do_lower_case, keep_marks=False):
  """Code point -> output, for the code points whose output is not themselves."""
  changed = {}
  for cp in _special_code_points():
    out = _char_output(cp, do_lower_case, keep_marks)
    if out != chr(cp):
      changed[cp] = out
  return changed


@functools.lru_cache(maxsize=None)
def _sigma_context_classes():
  """(cased, ignorable): code point sets of Python's Final_Sigma rule.

  `cased` holds the cased characters that are not case-ignorable, `ignorable`
  the case-ignorable ones. Both are read off `str.lower()` itself: "AΣx"
  keeps σ exactly when x is in `cased`; "AxΣ" gives ς exactly when x is cased
  or case-ignorable.
  """
  cps = list(_code_points())
  chars = [chr(cp) for cp in cps]
  after = _apply_each(str.lower, ["A" + _SIGMA + c for c in chars])
  before = _apply_each(str.lower, ["A" + c + _SIGMA for c in chars])
  cased = {cp for cp, low in zip(cps, after) if low[1] != _FINAL_SIGMA}
  either = {cp for cp, low in zip(cps, before) if low[-1] == _FINAL_SIGMA}
  return frozenset(cased), frozenset(either - cased)


@functools.lru_cache(maxsize=None)
def _final_sigma_regex():
  """(pattern, rewrite) turning each final capital sigma into ς.

  Applied to the decoded text before cleaning. Characters cleaning drops
  cannot end a context there, so they count as ignorable; the ones it turns
  into spaces, like the space itself, are neither cased nor ignorable
  (checked). RE2 has no lookaround, so a match consumes its context: from
  the cased character before Σ to the first character after it that is
  neither cased nor ignorable. That hides no other final Σ, because the
  cased character a final Σ needs can neither end an earlier match nor lie
  inside one.
  """
  cased, ignorable = _sigma_context_classes()
  dropped = frozenset(
      cp for cp in _special_code_points() if _is_dropped(chr(cp)))
  assert not dropped & cased
  for cp in cased | ignorable:
    char = chr(cp)
    assert not (tokenization.is_whitespace(char) or char.isspace() or
                tokenization.is_chinese_char(cp)), hex(cp)
  ignorable |= dropped
  ignorable_class = _regex_class(ignorable)
  pattern = "(%s%s*)\\x{3a3}(%s*)($|%s)" % (
      _regex_class(cased), ignorable_class, ignorable_class,
      _regex_class(cased | ignorable, negate=True))
  return pattern, "\\1" + _FINAL_SIGMA + "\\2\\3"


def _ranges(code_points):
  """Code points -> sorted inclusive [first, last] ranges."""
  ranges = []
  for cp in sorted(code_points):
    if ranges and ranges[-1][1] == cp - 1:
      ranges[-1][1] = cp
    else:
      ranges.append([cp, cp])
  return ranges


def _regex_class(code_points, negate=False):
  parts = ["\\x{%x}" % first if first == last else
           "\\x{%x}-\\x{%x}" % (first, last)
           for first, last in _ranges(code_points)]
  return "[%s%s]" % ("^" if negate else "", "".join(parts))


@functools.lru_cache(maxsize=None)
def _combining_info():
  """Code point -> 2 * combining class + (1 if category Mn), where non-zero."""
  info = {}
  for cp in _code_points():
    char = chr(cp)
    value = 2 * unicodedata.combining(char) + (
        unicodedata.category(char) == "Mn")
    if value:
      info[cp] = value
  return info


@functools.lru_cache(maxsize=None)
def _reordering_sources():
  """Code points whose lowered NFD holds a combining character that isn't Mn.

  Only texts with one of these can differ between whole-word NFD (which
  sorts combining characters by class) and per-character NFD once the Mn
  marks are gone. There are a few dozen: some viramas, Hangul tone marks,
  musical symbols.
  """
  info = _combining_info()
  kept = {cp for cp, value in info.items() if value % 2 == 0}
  marked = _changed_outputs(True, keep_marks=True)
  sources = {cp for cp, out in marked.items()
             if any(ord(c) in kept for c in out)}
  return frozenset(sources | (kept - set(marked)))


# ----------------------------------------------------------------------------
# Tables as constants, and the ops that apply them.


def _two_level(values):
  """Values of all code points -> (block starts, blocks) of a _CodePointTable."""
  blocks, block_index = np.unique(
      values.reshape(-1, 256), axis=0, return_inverse=True)
  return (block_index.reshape(-1).astype(np.int32) * 256,
          blocks.reshape(-1).astype(np.int32))


def _code_point_values(values_of):
  """dict code point -> value, as a numpy array over all code points."""
  values = np.zeros(_NUM_CODE_POINTS, np.int32)
  values[list(values_of)] = list(values_of.values())
  return values


class _CodePointTable(object):
  """An int32 value per code point, as a two-level table.

  The first level maps each block of 256 code points to one of the distinct
  blocks of values (most of Unicode is a handful of alike blocks), so a
  lookup is two gathers.
  """

  def __init__(self, two_level):
    block_starts, values = two_level
    self._block_starts = tf.constant(block_starts)
    self._values = tf.constant(values)

  def __call__(self, code_points):
    block_start = tf.gather(
        self._block_starts, tf.bitwise.right_shift(code_points, 8))
    return tf.gather(
        self._values, block_start + tf.bitwise.bitwise_and(code_points, 255))


@functools.lru_cache(maxsize=None)
def _combining_table():
  return _two_level(_code_point_values(_combining_info()))


@functools.lru_cache(maxsize=None)
def _char_map_arrays(do_lower_case, keep_marks):
  """(two-level table, entry offsets, entry lengths, entry chars) of a _CharMap."""
  entries, chars, info = {}, [], {}
  for cp, out in _changed_outputs(do_lower_case, keep_marks).items():
    if out == " " + chr(cp) + " ":
      info[cp] = _SPACED
      continue
    if out not in entries:
      entries[out] = (len(entries), len(chars))
      chars.extend(ord(c) for c in out)
    info[cp] = _ENTRY | entries[out][0] << 3
  if do_lower_case and not keep_marks:
    for cp in _reordering_sources():
      info[cp] = info.get(cp, _IDENTITY) | _FLAG
  # Dicts keep insertion order, which is entry order. A last dummy entry
  # keeps the arrays non-empty.
  offsets = [offset for _, offset in entries.values()] + [0]
  lengths = [len(out) for out in entries] + [0]
  return (_two_level(_code_point_values(info)), np.array(offsets, np.int32),
          np.array(lengths, np.int32), np.array(chars, np.int32))


class _CharMap(object):
  """Replaces every code point of a ragged batch by a string of code points.

  Per code point, a table holds its kind in 2 bits: unchanged (_IDENTITY),
  wrapped in spaces (_SPACED: CJK ideographs, punctuation), or replaced
  (_ENTRY) by the string whose index is in bits 3 and up. Bit 2 flags the
  code points that need the exact NFD path (see _reordering_sources).
  Positions are int32: a batch may hold up to about 700M code points.
  """

  def __init__(self, do_lower_case, keep_marks=False):
    table, offsets, lengths, chars = _char_map_arrays(do_lower_case, keep_marks)
    self._info = _CodePointTable(table)
    self._entry_offsets = tf.constant(offsets)
    self._entry_lengths = tf.constant(lengths)
    self._entry_chars = tf.constant(chars, tf.int32, shape=[len(chars)])

  def lookup(self, values):
    """The table value (kind, flag, entry) of each code point."""
    return self._info(values)

  @staticmethod
  def flagged(info):
    return tf.not_equal(tf.bitwise.bitwise_and(info, _FLAG), 0)

  def __call__(self, values, row_splits, info=None):
    """(flat code points, row splits) -> the same for the mapped text."""
    if info is None:
      info = self.lookup(values)
    kind = tf.bitwise.bitwise_and(info, 3)
    is_entry = tf.equal(kind, _ENTRY)
    entry = tf.bitwise.right_shift(info, 3)
    # Unchanged and spaced code points are read from " c " triples placed
    # after the entry strings.
    spaces = tf.fill(tf.shape(values), _SPACE)
    source = tf.concat([self._entry_chars, tf.reshape(
        tf.stack([spaces, values, spaces], axis=1), [-1])], axis=0)
    triple = tf.size(self._entry_chars) + 3 * tf.range(tf.size(values))
    is_identity = tf.equal(kind, _IDENTITY)
    start = tf.where(is_entry, tf.gather(self._entry_offsets, entry),
                     tf.where(is_identity, triple + 1, triple))
    length = tf.where(is_entry, tf.gather(self._entry_lengths, entry),
                      tf.where(is_identity, 1, 3))
    out = tf.gather(source, tf.ragged.range(start, start + length).flat_values)
    ends = tf.cast(tf.concat([[0], tf.cumsum(length)], axis=0), tf.int64)
    return out, tf.gather(ends, row_splits)


class GraphTokenizer(tf.Module):
  """`FullTokenizer(vocab_file, do_lower_case)` as TF ops; same ids, any text.

  `tokenize_to_ids` and `tokenize` build ops, so call them inside a
  `tf.function` (eager calls work but are slow). The tables are constants and
  a `tf.lookup.StaticHashTable` tracked by this module, so a SavedModel that
  holds the tokenizer needs only tensorflow and tensorflow_text to run, and
  keeps the Unicode version of the Python that built it. Building scans all
  of Unicode in Python: a few seconds, once per process and casing.

  The vocabulary must hold [UNK] (FullTokenizer would fail on the first
  unknown word); `cls_id` and `sep_id` are None if it lacks those tokens.
  """

  def __init__(self, vocab_file, do_lower_case=True, name=None):
    super().__init__(name=name)
    # As FullTokenizer reads it: a repeated token has its last line's id.
    vocab = tokenization.load_vocab(vocab_file)
    if tokenization.UNK_TOKEN not in vocab:
      raise ValueError("%s has no %s token." % (vocab_file, tokenization.UNK_TOKEN))
    self.do_lower_case = do_lower_case
    # Ids are line numbers, so this is the number of lines even with repeats.
    self.vocab_size = max(vocab.values()) + 1
    self.unk_id = vocab[tokenization.UNK_TOKEN]
    self.cls_id = vocab.get(tokenization.CLS_TOKEN)
    self.sep_id = vocab.get(tokenization.SEP_TOKEN)
    tokens = list(vocab)
    # Id -> token; a repeated token's earlier lines are ids no lookup gives.
    id_to_token = [""] * self.vocab_size
    for token, index in vocab.items():
      id_to_token[index] = token
    self.id_to_token = tf.constant(id_to_token, tf.string)
    self._vocab_table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(tokens, tf.string),
            tf.constant([vocab[t] for t in tokens], tf.int64)),
        default_value=-1)
    self._vocab_chars = _CodePointTable(_two_level(_code_point_values(
        {ord(c): 1 for token in tokens for c in token})))
    # Longest piece worth looking up; longer ones can't be in the vocabulary.
    longest = max(len(t) for t in tokens)
    self._wordpiece = tf_text.WordpieceTokenizer(
        self._vocab_table, suffix_indicator="##",
        max_bytes_per_word=4 * _MAX_WORD_CHARS, max_chars_per_token=longest,
        token_out_type=tf.string, unknown_token=tokenization.UNK_TOKEN)
    self._char_map = _CharMap(do_lower_case)
    if do_lower_case:
      self._sigma_pattern, self._sigma_rewrite = _final_sigma_regex()
      self._marked_char_map = _CharMap(True, keep_marks=True)
      self._combining = _CodePointTable(_combining_table())

  def tokenize(self, texts):
    """tf.string [batch] -> tf.RaggedTensor tf.string [batch, (tokens)]."""
    return self._word_pieces(self.basic_tokenize(texts))

  def tokenize_to_ids(self, texts):
    """tf.string [batch] -> tf.RaggedTensor int32 [batch, (tokens)]."""
    pieces = self.tokenize(texts)
    ids = tf.cast(self._vocab_table.lookup(pieces.flat_values), tf.int32)
    return pieces.with_flat_values(ids)

  def basic_tokenize(self, texts):
    """What `BasicTokenizer.tokenize` returns, as a [batch, (words)] RaggedTensor."""
    texts = tf.convert_to_tensor(texts, tf.string)
    code_points = tf.strings.unicode_decode(texts, "UTF-8", errors="ignore")
    values, row_splits = code_points.flat_values, code_points.row_splits
    if self.do_lower_case:
      values, row_splits = tf.cond(
          tf.reduce_any(tf.equal(values, ord(_SIGMA))),
          lambda: self._rewrite_final_sigmas(values, row_splits),
          lambda: (values, row_splits))
      info = self._char_map.lookup(values)
      values, row_splits = tf.cond(
          tf.reduce_any(self._char_map.flagged(info)),
          lambda: self._map_with_reordering(values, row_splits),
          lambda: self._char_map(values, row_splits, info))
    else:
      values, row_splits = self._char_map(values, row_splits)
    # Words are now separated by spaces, the only ASCII whitespace left.
    return tf.strings.split(tf.strings.unicode_encode(
        tf.RaggedTensor.from_row_splits(values, row_splits, validate=False),
        "UTF-8"))

  def _word_pieces(self, words):
    """WordPiece of each word, for the distinct words only (text repeats).

    Words that must become [UNK] are replaced by "[UNK]" first: the ones over
    200 code points, and (only to save time) the ones with a character that
    is in no vocabulary entry, which no segmentation can cover. Flat values
    and row splits throughout: ragged reductions and gathers would add tens
    of shape checks to every served request.
    """
    distinct, index = tf.unique(words.flat_values)
    chars = tf.strings.unicode_decode(distinct, "UTF-8")
    splits = chars.row_splits
    unknown_chars = tf.cumsum(tf.cast(
        tf.equal(self._vocab_chars(chars.flat_values), 0), tf.int64))
    unknown_chars = tf.concat([[0], unknown_chars], axis=0)
    unknown = (splits[1:] - splits[:-1] > _MAX_WORD_CHARS) | (
        tf.gather(unknown_chars, splits[1:]) > tf.gather(unknown_chars, splits[:-1]))
    distinct = tf.where(unknown, tokenization.UNK_TOKEN, distinct)
    pieces = self._wordpiece.tokenize(distinct)
    # Each word's pieces, read from its distinct word's run.
    starts = tf.gather(pieces.row_splits[:-1], index)
    counts = tf.gather(pieces.row_splits[1:], index) - starts
    flat = tf.gather(pieces.flat_values, tf.ragged.range(starts, starts + counts).flat_values)
    text_ends = tf.concat([[0], tf.cumsum(counts)], axis=0)
    return tf.RaggedTensor.from_row_splits(
        flat, tf.gather(text_ends, words.row_splits), validate=False)

  def _rewrite_final_sigmas(self, values, row_splits):
    texts = tf.strings.unicode_encode(
        tf.RaggedTensor.from_row_splits(values, row_splits, validate=False),
        "UTF-8")
    texts = tf.strings.regex_replace(
        texts, self._sigma_pattern, self._sigma_rewrite)
    code_points = tf.strings.unicode_decode(texts, "UTF-8")
    return code_points.flat_values, code_points.row_splits

  def _map_with_reordering(self, values, row_splits):
    """Exact path: per-character NFD with marks kept, NFD's sort, then drop Mn."""
    values, row_splits = self._marked_char_map(values, row_splits)
    info = self._combining(values)
    ccc, is_mn = info // 2, tf.equal(info % 2, 1)
    text = tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)
    position = tf.range(tf.size(values, out_type=tf.int64))
    row_start = tf.equal(position, tf.gather(row_splits, text.value_rowids()))
    previous_ccc = tf.roll(ccc, shift=1, axis=0)  # Unused at row starts.
    # A group is one starter or one run of non-starters within a row; NFD
    # sorts each run by class, keeping the order of equal classes.
    new_group = tf.equal(ccc, 0) | tf.equal(previous_ccc, 0) | row_start
    group = tf.cumsum(tf.cast(new_group, tf.int64))
    order = tf.argsort(group * 256 + tf.cast(ccc, tf.int64), stable=True)
    text = text.with_flat_values(tf.gather(values, order))
    keep = text.with_flat_values(tf.logical_not(tf.gather(is_mn, order)))
    text = tf.ragged.boolean_mask(text, keep)
    return text.flat_values, text.row_splits

