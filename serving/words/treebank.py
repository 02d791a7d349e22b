"""Raw text as words by Penn Treebank's conventions, the words of CoNLL-2003
and most English NER data: `U.S.`, `3,000`, `A.` and `Chester-le-Street`
stay whole; `Paris.` at a sentence's end is `Paris` `.`; `Apple's` is
`Apple` `'s`, `don't` is `do` `n't`; `$`, `%`, `(`, quotes and `--` are
words of their own. Each word with its code-point offsets into the text as
sent (end excluded): `word_spans` in Python, `words_of` as TensorFlow ops
(core ops: RE2 rewrites, so stock TF Serving runs them). Both apply the
one list of rewrites below, so they agree on every text.

How: each character becomes a stand-in of the same kind (chars.py): ASCII
stays itself, whitespace becomes " ", other punctuation and CJK ideographs
"\\x02" (each a word, as the original's BasicTokenizer has them), other
capitals "A", digits "0", letters and the rest "a", the right single
quotation mark "'" (an apostrophe, as in `Apple’s`); dropped characters
(controls, U+FFFD) are left out, so they never make or end a word. The
rewrites only insert a marker ("\\x01") where a word ends (and place and
remove marks of their own), so a word's offsets are its stand-ins' places
in the text.

The rewrites follow NLTK's word_tokenize (its Treebank rules with punkt's
sentence split before them), with a simpler sentence rule: a period ending
a token, before closing brackets or quotes and then whitespace or the
text's end, is a word of its own; where more text follows, not after an
initial (`A.`), letters with periods between them (`U.S.`, `e.g.`), an
abbreviation of ABBREVIATIONS or a number of up to three digits (a ranked
list's `1.`), which CoNLL-2003 keeps whole there (punkt often splits them).
Apart from NLTK too: every non-ASCII punctuation mark is a word of its own
(NLTK splits a few), and `’` is an apostrophe (NLTK splits it off).
"""

import functools
import re

import tensorflow as tf

from serving.words import chars

MARKER, CANDIDATE = "\x01", "\x03"  # A word's end; a sentence's end, not yet sure.
ALONE = "\x02"  # The stand-in for non-ASCII punctuation and CJK ideographs.
APOSTROPHE = 0x2019  # RIGHT SINGLE QUOTATION MARK, read as "'".

# Shortenings whose period stays with them (as written here or in capitals),
# before a name, a number or the rest of the sentence: titles, months and
# days, company words, US states as Reuters writes them, and a few of Latin.
ABBREVIATIONS = (
    "Mr", "Mrs", "Ms", "Dr", "Prof", "Rev", "Sr", "Jr", "St", "Mt", "Ft", "Gen", "Gov",
    "Sen", "Rep", "Reps", "Col", "Lt", "Sgt", "Capt", "Maj", "Adm", "Cmdr", "Pres", "Messrs",
    "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec",
    "Mon", "Tue", "Tues", "Wed", "Thu", "Thur", "Thurs", "Fri", "Sat",
    "Inc", "Ltd", "Co", "Corp", "Cos", "Bros", "Cie", "Dept", "Univ", "Assn", "Ave", "Blvd",
    "Ala", "Ariz", "Ark", "Calif", "Colo", "Conn", "Del", "Fla", "Ga", "Ill", "Ind", "Kan",
    "Ky", "La", "Md", "Mass", "Mich", "Minn", "Miss", "Mo", "Mont", "Neb", "Nev", "Okla",
    "Ore", "Pa", "Tenn", "Tex", "Va", "Vt", "Wash", "Wis", "Wyo",
    "vs", "etc", "approx", "cf", "ca", "No", "Nos", "Vol", "pp", "Fig")

_WORD_CHAR = "[A-Za-z0-9_]"
_NOT_WORD_CHAR = "[^A-Za-z0-9_]"
_SEPARATOR = "[ \\x01]"
_CLOSERS = "[\\])}>\"'\\x01\\x02]*"  # What may stand between a sentence's period and its end.
_OPENING = "(^|[ \\x01(\\[{<\"`])"  # What may stand before a token.
_ABBREVIATION = "|".join(sorted(set(ABBREVIATIONS) | {a.upper() for a in ABBREVIATIONS}))
M = MARKER

# (pattern, rewrite) in order, for Python's re and RE2 alike: no lookaround,
# no backreference in a pattern, \\0-\\9 in a rewrite. Each inserts markers
# (or places and removes its own CANDIDATE marks) and never touches a
# character of the text.
REWRITES = (
    # Non-ASCII punctuation and CJK ideographs: a word each.
    ("\\x02", M + "\\0" + M),
    # Opening quotes: runs of backticks, pairs of them, and " or '' at the
    # start or after a space or an opening bracket.
    ("`+", M + "\\0" + M),
    ("``", M + "\\0" + M),
    ("(^|[ \\x01(\\[{<])(\"|'')", "\\1" + M + "\\2" + M),
    # A single quote opening a word ('Hello) is a word, unless what follows
    # is a clitic ('s, 're, 't, ...).
    ("(^|%s)'(%s)" % (_NOT_WORD_CHAR, _WORD_CHAR), "\\1'" + M + "\\2"),
    ("'\\x01((?i:re|ve|ll|m|t|s|d|n))(%s|$)" % _NOT_WORD_CHAR, "'\\1\\2"),
    # Sentence ends: a period ending a token, before closing brackets or
    # quotes and then whitespace or the end, is a candidate; not after an
    # initial, letters with periods between, an abbreviation or a short
    # number, unless it ends the text; the candidates left are words.
    ("([^.])\\.(%s)( |$)" % _CLOSERS, "\\1" + CANDIDATE + ".\\2\\3"),
    ("(^|[ \\x01(\\[{<\"`-])([A-Za-z]|[A-Za-z]{1,4}(?:\\.[A-Za-z]{1,4})+)\\x03\\.", "\\1\\2."),
    ("%s(%s|[0-9]{1,3})\\x03\\." % (_OPENING, _ABBREVIATION), "\\1\\2."),
    ("([^.\\x03])\\.([\\])}>\"' \\x01\\x02]*)$", "\\1" + CANDIDATE + ".\\2"),
    ("\\x03\\.", M + "." + M),
    # Commas and colons not inside a number, runs of periods, symbols, ? !
    ("([:,])([^0-9])", M + "\\1" + M + "\\2"),
    ("([:,])$", M + "\\1" + M),
    ("\\.\\.+", M + "\\0" + M),
    ("[;@#$%&?!]", M + "\\0" + M),
    # A single quote ending a word (the players' union).
    ("([^'])'(%s)" % _SEPARATOR, "\\1" + M + "'\\2"),
    # Asterisks, brackets, double dashes, '' and ".
    ("[*\\]\\[(){}<>]", M + "\\0" + M),
    ("--", M + "\\0" + M),
    ("''", M + "\\0" + M),
    ("\"", M + "\\0" + M),
    # Clitics after a word: 's 'm 'd (or a lone '), 'll 're 've n't.
    ("([^' \\x01])('[sS]|'[mM]|'[dD]|')(%s|$)" % _SEPARATOR, "\\1" + M + "\\2\\3"),
    ("([^' \\x01])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T)(%s|$)" % _SEPARATOR,
     "\\1" + M + "\\2\\3"),
    # Words written as one: cannot, gimme, gonna, ... and 'tis, 'twas.
    ("(?i:\\b(can)(not)\\b)", M + "\\1" + M + "\\2" + M),
    ("(?i:\\b(d)('ye)\\b)", M + "\\1" + M + "\\2" + M),
    ("(?i:\\b(gim)(me)\\b)", M + "\\1" + M + "\\2" + M),
    ("(?i:\\b(gon)(na)\\b)", M + "\\1" + M + "\\2" + M),
    ("(?i:\\b(got)(ta)\\b)", M + "\\1" + M + "\\2" + M),
    ("(?i:\\b(lem)(me)\\b)", M + "\\1" + M + "\\2" + M),
    ("(?i:\\b(more)('n)\\b)", M + "\\1" + M + "\\2" + M),
    ("(?i:\\b(wan)(na))(%s|$)" % _SEPARATOR, M + "\\1" + M + "\\2" + M + "\\3"),
    ("(?i:(^|%s)('t)(is|was)\\b)" % _SEPARATOR, "\\1\\2" + M + "\\3" + M),
)


@functools.lru_cache(maxsize=None)
def _compiled():
  """REWRITES for Python's re (its rewrites say \\g<N>)."""
  return [(re.compile(pattern), re.sub(r"\\(\d)", r"\\g<\1>", rewrite))
          for pattern, rewrite in REWRITES]


_STAND_IN_OF_KIND = {chars.SPACE: " ", chars.PUNCTUATION: ALONE, chars.IDEOGRAPH: ALONE,
                     chars.UPPER: "A", chars.DIGIT: "0", chars.OTHER: "a"}


@functools.lru_cache(maxsize=None)
def _stand_in(char):
  """The character the rewrites read for `char`; None if it is dropped."""
  kind = chars.kind_of(char)
  if kind == chars.DROPPED:
    return None
  if kind == chars.SPACE or ord(char) >= 128:
    return "'" if ord(char) == APOSTROPHE else _STAND_IN_OF_KIND[kind]
  return char


def rewritten(text):
  """(The stand-ins of `text`'s kept characters with the markers
  inserted, each kept character's position in `text`)."""
  positions, stand_ins = [], []
  for position, char in enumerate(text):
    stand_in = _stand_in(char)
    if stand_in is not None:
      positions.append(position)
      stand_ins.append(stand_in)
  out = "".join(stand_ins)
  for pattern, rewrite in _compiled():
    out = pattern.sub(rewrite, out)
  return out, positions


def word_spans(text):
  """[(start, end)] of the words of `text` (a str), in order."""
  out, positions = rewritten(text)
  spans, kept, first = [], 0, None  # kept: the text's characters before out[i].
  for char in out + " ":
    if char in " " + MARKER:
      if first is not None:
        spans.append((positions[first], positions[kept - 1] + 1))
        first = None
      kept += char == " "  # A marker stands for no character of the text.
    else:
      first = kept if first is None else first
      kept += 1
  return spans


def words_of(texts):
  """`word_spans` as TensorFlow ops, on UTF-8 strings [batch] (invalid bytes
  read as U+FFFD, which is dropped): (words [batch, (words)] strings, start
  and end [batch, (words)] int32 code-point offsets, end excluded); a word's
  string is its span of the text."""
  decoded = chars.decode(texts)
  code_points = decoded.flat_values
  kind = chars.kinds_of(code_points)
  stand_in = tf.gather([ord(_STAND_IN_OF_KIND.get(k, " ")) for k in range(7)], kind)
  stand_in = tf.where((code_points < 128) & tf.not_equal(kind, chars.SPACE), code_points,
                      stand_in)
  stand_in = tf.where(tf.equal(code_points, APOSTROPHE), ord("'"), stand_in)
  kept = tf.not_equal(kind, chars.DROPPED)
  rows = tf.boolean_mask(decoded.value_rowids(), kept)
  batch = decoded.nrows()
  positions = tf.RaggedTensor.from_value_rowids(tf.boolean_mask(tf.ragged.range(
      tf.cast(decoded.row_lengths(), tf.int32)).flat_values, kept), rows, nrows=batch)
  out = tf.strings.unicode_encode(tf.RaggedTensor.from_value_rowids(
      tf.boolean_mask(stand_in, kept), rows, nrows=batch), "UTF-8")
  for pattern, rewrite in REWRITES:
    out = tf.strings.regex_replace(out, pattern, rewrite)
  out = tf.strings.unicode_decode(out, "UTF-8")
  # Each character of `out` in its text: how many kept characters come
  # before it (markers are none), and whether it ends or starts a word.
  flat, row = out.flat_values, tf.cast(out.value_rowids(), tf.int32)
  marker = tf.equal(flat, ord(MARKER))
  counted = tf.cast(~marker, tf.int32)
  before = tf.cumsum(counted, exclusive=True)
  row_first = tf.gather(tf.concat([before, [tf.reduce_sum(counted)]], 0), out.row_splits[:-1])
  kept_before = before - tf.gather(row_first, row)
  inside = ~marker & tf.not_equal(flat, ord(" "))
  same_row_before = tf.equal(tf.concat([[-1], row[:-1]], 0), row)
  same_row_after = tf.equal(tf.concat([row[1:], [-1]], 0), row)
  begins = inside & ~(tf.concat([[False], inside[:-1]], 0) & same_row_before)
  finishes = inside & ~(tf.concat([inside[1:], [False]], 0) & same_row_after)
  word_row = tf.boolean_mask(row, begins)
  first_kept = tf.cast(tf.gather(positions.row_splits, word_row), tf.int32)
  starts = tf.gather(positions.flat_values, tf.boolean_mask(kept_before, begins) + first_kept)
  ends = tf.gather(positions.flat_values, tf.boolean_mask(kept_before, finishes) + first_kept) + 1
  return chars.cut_words(decoded, starts, ends, word_row)
