"""How a model's sentence vectors are made (embed.py, and the embedding
fine-tuning run's start): decided once, from the flags, else the model's
sentence-transformers files (modules.json, the Pooling config,
sentence_bert_config.json: modeling/checkpoints/sentence_transformers.py
reads them), else our defaults, with one log line per setting naming where
it came from. The tokenizer's casing is decided as every command decides
it, from tokenizer_config.json (data_prep/casing.py).
"""

import dataclasses
import os

from absl import logging

from data_prep import casing
from modeling.checkpoints import sentence_transformers
from plumbing.errors import UserError

DEFAULTS = {"pooling": "mean", "normalize": False, "max_seq_length": 128}


@dataclasses.dataclass(frozen=True)
class Settings:
  """What a sentence vector is: the pooling (modeling.pooling.POOLINGS),
  whether it is L2-normalised, the tokens a text is cut to ([CLS] and
  [SEP] included) and the tokenizer's casing."""
  pooling: str
  normalize: bool
  max_seq_length: int
  do_lower_case: bool


def find_directory(given, vocab_file):
  """The directory of sentence-transformers files to read: `given` (which
  must hold them), else --vocab_file's directory when it does, else None."""
  if given:
    if not sentence_transformers.holds_files(given):
      raise UserError("--sentence_transformers_dir=%s holds no %s: give the Hugging Face "
                      "directory of a sentence-transformers model." % (
                          given, sentence_transformers.MODULES_FILE))
    return given
  beside = os.path.dirname(vocab_file or "") or "."
  return beside if sentence_transformers.holds_files(beside) else None


def _casing(do_lower_case, given, model_dirs):
  """The tokenizer's casing as every command decides it (data_prep/casing.py),
  and where it came from."""
  lower = casing.resolve(do_lower_case, given, model_dirs)
  if given:
    return lower, "given"
  recorded = next((r for r in map(casing.read, model_dirs) if r is not None), None)
  return lower, recorded.source if recorded else "the default: no tokenizer_config.json"


def resolve(directory, vocab_file, pooling=None, normalize=None, max_seq_length=None,
            do_lower_case=True, casing_given=False):
  """The Settings: each value given (not None) wins, else what the
  sentence-transformers files in `directory` (None: there are none) say,
  else DEFAULTS; the casing as data_prep/casing.py decides it, from the
  records beside `vocab_file` and in `directory`. Logs one line per setting."""
  found, transformer_dir = (sentence_transformers.read_files(directory) if directory
                            else ({}, None))
  given = {"pooling": pooling, "normalize": normalize, "max_seq_length": max_seq_length}
  chosen = {}
  for name, value in given.items():
    if value is not None:
      chosen[name], source = value, "given"
    elif name in found:
      chosen[name], source = found[name]
    else:
      chosen[name] = DEFAULTS[name]
      source = "the default: no sentence-transformers files" if directory is None else (
          "the default: not in the sentence-transformers files")
    logging.info("--%s=%s (%s).", name, chosen[name], source)
  model_dirs = [os.path.dirname(vocab_file or "") or "."] + (
      [transformer_dir] if transformer_dir else [])
  lower, source = _casing(do_lower_case, casing_given, model_dirs)
  logging.info("--do_lower_case=%s (%s).", lower, source)
  if "lower_case_input" in found and not lower:
    raise UserError("%s lower-cases texts before a cased tokenizer, which keeps accents: "
                    "the original's tokenizer cannot do that (it strips accents when it "
                    "lower-cases)." % found["lower_case_input"][1])
  return Settings(pooling=chosen["pooling"], normalize=bool(chosen["normalize"]),
                  max_seq_length=int(chosen["max_seq_length"]), do_lower_case=lower)
