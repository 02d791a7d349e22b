"""Named-entity files in the CoNLL format, and their tag schemes.

One token a line, its tag in the last column (CoNLL-2003's files have four:
word, part of speech, chunk, entity tag), a blank line between sentences and
`-DOCSTART-` lines between documents; CRLF line ends are read as LF. The
tags are O or a prefix and a type (`B-PER`): IOB1 (the shared task's own
files: I- everywhere, B- only where an entity follows one of the same type),
IOB2 (B- starts every entity) or BIOES (B-, I-, E-, and S- for one-token
entities). Reading finds the scheme; the model learns IOB2 (every scheme
holds the same entities); predictions are written back in the scheme read.
"""

import collections
import os

from plumbing.errors import UserError
from plumbing import files

Sentence = collections.namedtuple("Sentence", ["words", "tags", "source"])

# The names each split's file goes by: the usual ones, then the shared task's.
SPLIT_FILES = {"train": ("train.txt", "eng.train"),
               "dev": ("dev.txt", "valid.txt", "eng.testa"),
               "test": ("test.txt", "eng.testb")}
SCHEMES = ("IOB1", "IOB2", "BIOES")
_PREFIXES = ("B", "I", "E", "S")
DOCUMENT_START = "-DOCSTART-"


def split_tag(tag):
  """("B", "PER") of "B-PER"; ("O", "") of "O"."""
  if tag == "O":
    return "O", ""
  prefix, _, kind = tag.partition("-")
  return prefix, kind


def is_tag(tag):
  """Whether `tag` is O or a known prefix and a type."""
  prefix, kind = split_tag(tag)
  return tag == "O" or (prefix in _PREFIXES and bool(kind))


def _check_tag(tag, where):
  if not is_tag(tag):
    raise UserError("%s: tag %r is neither O nor B-, I-, E- or S- and a type (the tag is the "
                    "line's last column)." % (where, tag))


def read_sentences(path):
  """The sentences of a CoNLL file, each with its words, tags and first
  line; an error naming the file and line for a line without a tag or a
  tag of no known form."""
  lines = files.read_text(path).splitlines()
  sentences = []
  words, tags, start = [], [], None

  def flush():
    if words:
      sentences.append(Sentence(list(words), list(tags), "%s:%d" % (path, start)))
    words.clear()
    tags.clear()

  for number, line in enumerate(lines, 1):
    fields = line.split()
    if not fields or fields[0] == DOCUMENT_START:
      flush()
      continue
    where = "%s:%d" % (path, number)
    if len(fields) < 2:
      raise UserError("%s: expected a word and its tag, separated by a space or tab; got %r."
                      % (where, line))
    _check_tag(fields[-1], where)
    if not words:
      start = number
    words.append(fields[0])
    tags.append(fields[-1])
  flush()
  return sentences


def split_file(data_dir, split):
  """The file of `split` ("train", "dev", "test") in `data_dir`."""
  for name in SPLIT_FILES[split]:
    path = os.path.join(data_dir, name)
    if files.exists(path):
      return path
  raise UserError("%s has no %s file (%s)." % (data_dir, split, " or ".join(SPLIT_FILES[split])))


def starts_entity(previous, tag):
  """Whether `tag` begins an entity after `previous` (both as read, any
  scheme)."""
  prefix, kind = split_tag(tag)
  if prefix == "O":
    return False
  last_prefix, last_kind = split_tag(previous) if previous else ("O", "")
  return prefix in ("B", "S") or last_prefix in ("O", "E", "S") or last_kind != kind


def scheme_of(sentences):
  """The scheme the tags are in: BIOES if any E- or S-, else IOB1 if an I-
  tag begins an entity, else IOB2."""
  found = "IOB2"
  for sentence in sentences:
    previous = None
    for tag in sentence.tags:
      prefix = split_tag(tag)[0]
      if prefix in ("E", "S"):
        return "BIOES"
      if prefix == "I" and starts_entity(previous, tag):
        found = "IOB1"
      previous = tag
  return found


def to_iob2(tags):
  """Tags of any scheme as IOB2: B- where an entity begins, I- inside."""
  out, previous = [], None
  for tag in tags:
    prefix, kind = split_tag(tag)
    out.append("O" if prefix == "O" else
               ("B-" if starts_entity(previous, tag) else "I-") + kind)
    previous = tag
  return out


def from_iob2(tags, scheme):
  """IOB2 tags in `scheme`."""
  if scheme == "IOB2":
    return list(tags)
  out = []
  for i, tag in enumerate(tags):
    prefix, kind = split_tag(tag)
    if prefix == "O":
      out.append(tag)
      continue
    following = tags[i + 1] if i + 1 < len(tags) else "O"
    continues = split_tag(following) == ("I", kind)
    if scheme == "IOB1":
      # B- only where an entity of the same type ends just before.
      after_same = i > 0 and split_tag(tags[i - 1])[1] == kind and split_tag(
          tags[i - 1])[0] != "O"
      out.append(("B-" if prefix == "B" and after_same else "I-") + kind)
    elif prefix == "B":
      out.append(("B-" if continues else "S-") + kind)
    else:
      out.append(("I-" if continues else "E-") + kind)
  return out


def write_predictions(path, sentences, predicted):
  """predictions.txt: `word gold predicted` lines, a blank line after each
  sentence, as the CoNLL scorer reads them; written whole or not at all."""
  with files.atomic_output(path) as f:
    for sentence, tags in zip(sentences, predicted):
      for word, gold, guess in zip(sentence.words, sentence.tags, tags):
        f.write("%s %s %s\n" % (word, gold, guess))
      f.write("\n")
