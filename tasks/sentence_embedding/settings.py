"""How embed.py makes a model's sentence vectors: decided once, from the
flags, else the model's sentence-transformers files, else our defaults, with
one log line per setting naming where it came from.

A model saved by sentence-transformers (all-MiniLM-L6-v2 and most sentence
models on the Hugging Face Hub) describes its vectors in files beside the
BERT's:
  * `modules.json`: the modules run in order; we compute a Transformer
    (the BERT), a Pooling and an optional Normalize (L2), nothing else;
  * `<pooling module's path>/config.json`: the pooling (`pooling_mode`, or
    the older `pooling_mode_*_tokens` switches);
  * `sentence_bert_config.json` (in the Transformer's path): the
    `max_seq_length` texts are cut to, and `do_lower_case`, a lower-casing
    of its own before the tokenizer;
  * `tokenizer_config.json`: the tokenizer's casing (data_prep/casing.py).
"""

import dataclasses
import json
import os

from absl import logging

from data_prep import casing
from modeling import pooling
from plumbing.errors import UserError

MODULES_FILE = "modules.json"
MODEL_CONFIG_FILE = "sentence_bert_config.json"
DEFAULTS = {"pooling": "mean", "normalize": False, "max_seq_length": 128}
# sentence-transformers' older switches, one per pooling mode.
_POOLING_SWITCHES = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                     "pooling_mode_mean_tokens": "mean",
                     "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                     "pooling_mode_weightedmean_tokens": "weightedmean",
                     "pooling_mode_lasttoken": "lasttoken"}
_MODULE_ORDERS = (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"])


@dataclasses.dataclass(frozen=True)
class Settings:
  """What a sentence vector is: the pooling (modeling.pooling.POOLINGS),
  whether it is L2-normalised, the tokens a text is cut to ([CLS] and
  [SEP] included) and the tokenizer's casing."""
  pooling: str
  normalize: bool
  max_seq_length: int
  do_lower_case: bool


def _read_json(path):
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except ValueError as e:
    raise UserError("%s: not valid JSON (%s)." % (path, e)) from None


def holds_files(directory):
  """Whether `directory` holds a sentence-transformers model's files."""
  return bool(directory) and os.path.exists(os.path.join(directory, MODULES_FILE))


def find_directory(given, vocab_file):
  """The directory of sentence-transformers files to read: `given` (which
  must hold them), else --vocab_file's directory when it does, else None."""
  if given:
    if not holds_files(given):
      raise UserError("--sentence_transformers_dir=%s holds no %s: give the Hugging Face "
                      "directory of a sentence-transformers model." % (given, MODULES_FILE))
    return given
  beside = os.path.dirname(vocab_file or "") or "."
  return beside if holds_files(beside) else None


def _modules(directory):
  """{kind: the module's folder} from modules.json, checked for kinds we compute."""
  path = os.path.join(directory, MODULES_FILE)
  modules = _read_json(path)
  if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
    raise UserError("%s: expected a list of modules." % path)
  kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
  if kinds not in _MODULE_ORDERS:
    raise UserError("%s: the model's modules are %s; embed.py computes a Transformer, a "
                    "Pooling and an optional Normalize, in that order, and nothing else."
                    % (path, ", ".join(kinds) or "none"))
  return {kind: os.path.join(directory, m.get("path") or "") for kind, m in zip(kinds, modules)}


def _pooling_mode(path):
  config = _read_json(path)
  mode = config.get("pooling_mode")
  if mode is None:  # The older switches; none set means the mean, as sentence-transformers reads them.
    modes = [m for key, m in _POOLING_SWITCHES.items() if config.get(key)] or ["mean"]
  else:
    modes = [mode] if isinstance(mode, str) else list(mode)
  if len(modes) != 1 or modes[0] not in pooling.POOLINGS:
    raise UserError("%s: pooling %s; embed.py pools by one of %s." % (
        path, " and ".join(map(str, modes)), ", ".join(pooling.POOLINGS)))
  return modes[0]


def read_files(directory):
  """{setting: (value, the file it came from)} of what `directory`'s
  sentence-transformers files say, and the Transformer module's folder
  (where its tokenizer_config.json is)."""
  modules = _modules(directory)
  pooling_file = os.path.join(modules["Pooling"], "config.json")
  if not os.path.exists(pooling_file):
    raise UserError("%s is missing: the model's Pooling module has no config." % pooling_file)
  found = {"pooling": (_pooling_mode(pooling_file), pooling_file),
           "normalize": ("Normalize" in modules, os.path.join(directory, MODULES_FILE))}
  config_file = os.path.join(modules["Transformer"], MODEL_CONFIG_FILE)
  if os.path.exists(config_file):
    config = _read_json(config_file)
    if config.get("max_seq_length") is not None:
      found["max_seq_length"] = (int(config["max_seq_length"]), config_file)
    if config.get("do_lower_case"):
      found["lower_case_input"] = (True, config_file)
  return found, modules["Transformer"]


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
  found, transformer_dir = read_files(directory) if directory else ({}, None)
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
