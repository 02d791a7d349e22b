"""A tokenizer's casing, recorded beside its vocabulary.

The released checkpoints record no casing: the original checks
--do_lower_case against their directory names only. A Hugging Face model
records it in `tokenizer_config.json` (or in `tokenizer.json`'s normalizer),
and so do the directories this project writes: a Hugging Face model
converted to the released layout, and a fine-tuning run's --output_dir.
The same keys as transformers' BertTokenizer reads, so each such directory
stays loadable there too.

    lower = casing.resolve(flag_value, flag_given, [vocab_dir], output_dir)

gives the model's recorded casing when the flag was not given, one error
line when a given flag contradicts it, and the flag's value where nothing
is recorded. A run's own record (--output_dir) stands in for the default.
"""

import dataclasses
import json
import os

from absl import logging

from plumbing.errors import UserError
from plumbing import files

FILE_NAME = "tokenizer_config.json"
_FAST_TOKENIZER = "tokenizer.json"


@dataclasses.dataclass(frozen=True)
class Casing(object):
  """Whether a tokenizer lower-cases (and so strips accents, as the
  original's always does with it), and the file that says so."""
  do_lower_case: bool
  source: str

  def describe(self):
    return "%s records %s" % (self.source, "an uncased (lower-casing) tokenizer"
                              if self.do_lower_case else "a cased tokenizer")


def _read_json(path):
  value = files.read_json(path)
  if not isinstance(value, dict):
    raise UserError("%s: expected a JSON object of tokenizer settings." % path)
  return value


def _settings(directory):
  """(settings in BertTokenizer's keys, the file they came from), or
  (None, None) where the directory records none."""
  path = os.path.join(directory, FILE_NAME)
  if files.exists(path):
    return _read_json(path), path
  path = os.path.join(directory, _FAST_TOKENIZER)
  if files.exists(path):
    normalizer = _read_json(path).get("normalizer") or {}
    if normalizer.get("type") == "BertNormalizer":
      return {"do_lower_case": normalizer.get("lowercase", True),
              "strip_accents": normalizer.get("strip_accents"),
              "tokenize_chinese_chars": normalizer.get("handle_chinese_chars", True)}, path
  return None, None


def read(directory):
  """The Casing `directory` records, or None. One error line for settings
  the original's tokenizer cannot follow."""
  if not directory:
    return None
  settings, source = _settings(directory)
  if settings is None:
    return None
  lower = settings.get("do_lower_case", True)  # transformers' BertTokenizer default.
  if not isinstance(lower, bool):
    raise UserError("%s: \"do_lower_case\" must be true or false, got %r." % (source, lower))
  accents = settings.get("strip_accents")
  if accents is not None and accents != lower:
    raise UserError("%s: \"strip_accents\": %s with \"do_lower_case\": %s: the original's "
                    "tokenizer strips accents exactly when it lower-cases." %
                    (source, json.dumps(accents), json.dumps(lower)))
  if settings.get("tokenize_chinese_chars", True) is False:
    raise UserError("%s: \"tokenize_chinese_chars\": false: the original's tokenizer always "
                    "splits CJK characters." % source)
  return Casing(lower, source)


def settings(do_lower_case):
  """The keys a record holds (BertTokenizer's names; accents follow the
  casing and CJK characters are split, as in the original's tokenizer)."""
  return {"do_lower_case": bool(do_lower_case), "strip_accents": None,
          "tokenize_chinese_chars": True}


def write(directory, do_lower_case):
  """Records the casing in `directory` (keeping any other keys a
  tokenizer_config.json there already has)."""
  path = os.path.join(directory, FILE_NAME)
  existing = _read_json(path) if files.exists(path) else {}
  wanted = dict(existing, **settings(do_lower_case))
  if wanted != existing:
    files.write_json(path, wanted)


def resolve(value, given, model_dirs, run_dir=None, flag="--do_lower_case"):
  """The casing to tokenize with. A model's record (the first found in
  `model_dirs`; None entries are skipped) wins over the flag's default, and
  a given flag that contradicts it is an error. A run's record (`run_dir`,
  what an earlier run there tokenized with) only replaces the default: a
  given flag overrides it. Without either, the flag's `value`."""
  for directory in model_dirs:
    recorded = read(directory)
    if recorded is None:
      continue
    if given and bool(value) != recorded.do_lower_case:
      raise UserError("%s=%s contradicts %s: leave the flag out to follow the model, or "
                      "correct that file if it is wrong." % (flag, bool(value),
                                                             recorded.describe()))
    break
  else:
    recorded = None if given else read(run_dir)
  if recorded is None:
    return bool(value)
  if bool(value) != recorded.do_lower_case:
    logging.info("Tokenizing with %s=%s: %s.", flag, recorded.do_lower_case,
                 recorded.describe())
  return recorded.do_lower_case
