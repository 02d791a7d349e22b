"""WordPiece tokenization that reproduces the original BERT release token for token.

The public names and their behaviour follow the original `tokenization.py`:
`FullTokenizer` = `BasicTokenizer` (clean, split CJK, lower-case and strip
accents, split punctuation) followed by `WordpieceTokenizer` (greedy
longest-match-first with "##" continuations).

Speed comes from two observations, not from a different algorithm:
  * Cleaning and CJK spacing are per-character substitutions, so one
    `str.translate` with a lazily filled table does them in C.
  * Everything after the whitespace split depends on the word alone, and
    natural text repeats words heavily, so each distinct word is processed
    once and remembered (`_WordCache`).
The result is identical by construction. `tokenize_to_ids_batch`, the bulk
path that returns flat numpy ids for many lines at once, runs compiled code
(data_prep/compiled_tokenization.py) that does every step over code-point
arrays, once there is enough text to repay loading it; this module stays the
reference it is tested against.
"""

import collections
import re
import unicodedata

import numpy as np

from plumbing.errors import UserError
from plumbing import text_io

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"

_LOWER_CASED_MODELS = (
    "uncased_L-24_H-1024_A-16", "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12")
_CASED_MODELS = (
    "cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
    "multi_cased_L-12_H-768_A-12")


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
  """Raises if `do_lower_case` contradicts a released checkpoint's name.

  Casing is not recorded in `bert_config.json`, so, like the original, we can
  only recognise the released model directory names.
  """
  if not init_checkpoint:
    return
  match = re.match("^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", init_checkpoint)
  if match is None:
    return
  model_name = match.group(1)
  if model_name in _LOWER_CASED_MODELS and not do_lower_case:
    flag, kind, wanted = "False", "lowercased", "True"
  elif model_name in _CASED_MODELS and do_lower_case:
    flag, kind, wanted = "True", "cased", "False"
  else:
    return
  raise UserError(
      "You passed in `--do_lower_case=%s` with `--init_checkpoint=%s`. "
      "However, `%s` seems to be a %s model, so you should pass in "
      "`--do_lower_case=%s` so that the fine-tuning matches how the model was "
      "pre-training. If this error is wrong, please just comment out this "
      "check." % (flag, init_checkpoint, model_name, kind, wanted))


def convert_to_unicode(text):
  """Returns `text` as str; bytes are read as UTF-8, dropping invalid bytes."""
  if isinstance(text, str):
    return text
  if isinstance(text, bytes):
    return text.decode("utf-8", "ignore")
  raise ValueError("Unsupported string type: %s" % (type(text)))


# Python 3 only: the printable form is the same str.
printable_text = convert_to_unicode


def load_vocab(vocab_file):
  """Reads a vocabulary (one token per line) into an OrderedDict token -> id.

  As in the original, ids are line numbers; a repeated token keeps its first
  position in the key order but maps to its last line number.
  """
  vocab = collections.OrderedDict()
  for index, (_, line) in enumerate(text_io.iter_text_lines(vocab_file)):
    vocab[line.strip()] = index
  return vocab


def convert_by_vocab(vocab, items):
  """Maps each item through `vocab` (tokens to ids, or ids to tokens)."""
  return [vocab[item] for item in items]


def convert_tokens_to_ids(vocab, tokens):
  return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
  return convert_by_vocab(inv_vocab, ids)


def whitespace_tokenize(text):
  """Splits on any Unicode whitespace, dropping empty pieces."""
  return text.split()


def is_whitespace(char):
  # Tab, newline and carriage return are control characters to Unicode but
  # whitespace to us.
  if char in " \t\n\r":
    return True
  return unicodedata.category(char) == "Zs"


def is_control(char):
  if char in "\t\n\r":
    return False
  return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
  # Every ASCII character that is not a letter or digit counts, so "$", "^",
  # "`" (Unicode symbols, not punctuation) are split off too.
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


# An ASCII word's pieces: each punctuation character (the ranges above) alone,
# and each run of other characters.
_ASCII_PIECES = re.compile(r"[!-/:-@\[-`{-~]|[^!-/:-@\[-`{-~]+")


def is_chinese_char(cp):
  """True for code points of the CJK Unified Ideograph blocks.

  Hangul, Hiragana and Katakana are not included: those scripts separate
  words with spaces and are handled like any other language.
  """
  return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or
          0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F or
          0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or
          0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


# The original module's names of the predicates, for code written against it.
_is_whitespace, _is_control, _is_punctuation, _is_chinese_char = (
    is_whitespace, is_control, is_punctuation, is_chinese_char)


class _CleanAndSpaceTable(dict):
  """`str.translate` table for cleaning and CJK spacing, filled on demand.

  Maps NUL, U+FFFD and control characters to nothing, whitespace to a space,
  CJK ideographs to the ideograph between spaces; other characters to
  themselves.
  """

  def __missing__(self, cp):
    char = chr(cp)
    if cp == 0 or cp == 0xFFFD or is_control(char):
      value = ""
    elif is_whitespace(char):
      value = " "
    elif is_chinese_char(cp):
      value = " " + char + " "
    else:
      value = char
    self[cp] = value
    return value


_CLEAN_AND_SPACE = _CleanAndSpaceTable()


class BasicTokenizer(object):
  """Cleans text, splits CJK characters and punctuation, optionally lower-cases."""

  def __init__(self, do_lower_case=True):
    self.do_lower_case = do_lower_case

  def tokenize(self, text):
    words = self._clean_and_split(text)
    output = []
    for word in words:
      output.extend(self._split_word(word))
    return output

  def _clean_and_split(self, text):
    return convert_to_unicode(text).translate(_CLEAN_AND_SPACE).split()

  def _split_word(self, word):
    """The tokens one whitespace-delimited word becomes."""
    if self.do_lower_case:
      word = self._run_strip_accents(word.lower())
    if word.isalnum():  # Letters and digits are never punctuation: nothing to split.
      return [word]
    if word.isascii():  # No whitespace either: the word came from str.split().
      return _ASCII_PIECES.findall(word)
    # Joining with spaces and splitting again matches the original exactly even
    # if lower-casing or decomposition ever produced whitespace.
    return " ".join(self._run_split_on_punc(word)).split()

  def _run_strip_accents(self, text):
    """Drops combining marks (category Mn) after canonical decomposition."""
    if text.isascii():
      return text
    text = unicodedata.normalize("NFD", text)
    return "".join(c for c in text if unicodedata.category(c) != "Mn")

  def _run_split_on_punc(self, text):
    """Makes every punctuation character a token of its own."""
    pieces = []
    start_new_word = True
    for char in text:
      if is_punctuation(char):
        pieces.append(char)
        start_new_word = True
      else:
        if start_new_word:
          pieces.append("")
        start_new_word = False
        pieces[-1] += char
    return pieces

  def is_chinese_char(self, cp):
    return is_chinese_char(cp)


class WordpieceTokenizer(object):
  """Greedy longest-match-first WordPiece; unknown or over-long words -> [UNK]."""

  def __init__(self, vocab, unk_token=UNK_TOKEN, max_input_chars_per_word=200):
    self.vocab = vocab
    self.unk_token = unk_token
    self.max_input_chars_per_word = max_input_chars_per_word

  def tokenize(self, text):
    output = []
    for word in whitespace_tokenize(convert_to_unicode(text)):
      output.extend(self._tokenize_word(word))
    return output

  def _tokenize_word(self, word):
    if len(word) > self.max_input_chars_per_word:
      return [self.unk_token]
    vocab = self.vocab
    pieces = []
    start = 0
    while start < len(word):
      end = len(word)
      while start < end:
        piece = word[start:end] if start == 0 else "##" + word[start:end]
        if piece in vocab:
          break
        end -= 1
      else:
        return [self.unk_token]  # No prefix of the rest is in the vocabulary.
      pieces.append(piece)
      start = end
    return pieces


class _WordCache(dict):
  """Remembers what each distinct word becomes (tokens and ids).

  Bounded: cleared when it grows past `max_entries`, which keeps memory flat on
  corpora with unbounded vocabularies (URLs, numbers) at a small cost in speed.
  """

  def __init__(self, compute, max_entries=2_000_000):
    super().__init__()
    self._compute = compute
    self._max_entries = max_entries

  def __missing__(self, word):
    if len(self) >= self._max_entries:
      self.clear()
    value = self._compute(word)
    self[word] = value
    return value


class FullTokenizer(object):
  """Basic tokenization followed by WordPiece, with the original's API."""

  # `tokenize_to_ids_batch` stays in Python until this many characters have
  # gone through it: loading the compiled code costs what the Python path
  # (its word cache) spends on millions of characters of GLUE or SQuAD text,
  # so a dev set never waits for it.
  compile_after_characters = 1_000_000

  def __init__(self, vocab_file, do_lower_case=True):
    self.vocab = load_vocab(vocab_file)
    self.inv_vocab = {v: k for k, v in self.vocab.items()}
    self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
    self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
    self._tokens_of_word = _WordCache(self._word_to_tokens)
    self._ids_of_word = _WordCache(self._word_to_ids)
    self._characters = 0

  @property
  def do_lower_case(self):
    return self.basic_tokenizer.do_lower_case

  def tokenize(self, text):
    tokens = []
    cache = self._tokens_of_word
    for word in self.basic_tokenizer._clean_and_split(text):
      tokens.extend(cache[word])
    return tokens

  def tokenize_to_ids(self, text):
    """Same as convert_tokens_to_ids(tokenize(text)), without building strings."""
    ids = []
    cache = self._ids_of_word
    for word in self.basic_tokenizer._clean_and_split(text):
      ids.extend(cache[word])
    return ids

  def tokenize_to_ids_batch(self, texts, num_threads=1):
    """Bulk path: returns (flat int32 ids, int64 row splits) for many texts.

    Row i's ids are flat[splits[i]:splits[i + 1]], as in a RaggedTensor. Once
    the tokenizer has seen `compile_after_characters`, the work is done by
    compiled code (data_prep/compiled_tokenization.py), identical to
    `tokenize_to_ids` for every input; `num_threads` > 1 then splits a large
    batch over threads.
    """
    texts = [t if isinstance(t, str) else convert_to_unicode(t) for t in texts]
    self._characters += sum(map(len, texts))
    if self._characters > self.compile_after_characters:
      compiled = self._compiled_tokenizer()
      if compiled is not None:
        return compiled.tokenize_to_ids_batch(texts, num_threads=num_threads)
    return self._tokenize_to_ids_batch_in_python(texts)

  def _compiled_tokenizer(self):
    """Made on first use, from the settings as they are then; None when the
    vocabulary has no unknown token (the Python path raises the original's
    KeyError if one is needed)."""
    wordpiece = self.wordpiece_tokenizer
    key = (id(self.vocab), len(self.vocab), self.basic_tokenizer.do_lower_case,
           wordpiece.unk_token, wordpiece.max_input_chars_per_word)
    if getattr(self, "_compiled_key", None) != key:
      from data_prep import compiled_tokenization  # pylint: disable=g-import-not-at-top
      self._compiled = None
      if wordpiece.unk_token in self.vocab:
        self._compiled = compiled_tokenization.CompiledTokenizer(
            self.vocab, self.basic_tokenizer.do_lower_case, wordpiece.unk_token,
            wordpiece.max_input_chars_per_word)
      self._compiled_key = key
    return self._compiled

  def _tokenize_to_ids_batch_in_python(self, texts):
    """The reference for the compiled path (the per-word cache over texts)."""
    cache = self._ids_of_word
    clean_and_split = self.basic_tokenizer._clean_and_split
    flat = []
    lengths = np.empty(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
      before = len(flat)
      for word in clean_and_split(text):
        flat.extend(cache[word])
      lengths[i] = len(flat) - before
    splits = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=splits[1:])
    return np.asarray(flat, dtype=np.int32), splits

  def convert_tokens_to_ids(self, tokens):
    return convert_by_vocab(self.vocab, tokens)

  def convert_ids_to_tokens(self, ids):
    return convert_by_vocab(self.inv_vocab, ids)

  def _word_to_tokens(self, word):
    tokens = []
    for basic_token in self.basic_tokenizer._split_word(word):
      tokens.extend(self.wordpiece_tokenizer._tokenize_word(basic_token))
    return tuple(tokens)

  def _word_to_ids(self, word):
    return tuple(self.vocab[t] for t in self._tokens_of_word[word])
