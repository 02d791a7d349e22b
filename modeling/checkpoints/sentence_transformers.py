"""A sentence-transformers model's own files, read and written here only.

A model saved by sentence-transformers (all-MiniLM-L6-v2 and most sentence
models on the Hugging Face Hub) describes its vectors in files beside the
BERT's:
  * `modules.json`: the modules run in order; we compute a Transformer
    (the BERT), a Pooling and an optional Normalize (L2), nothing else;
  * `<pooling module's path>/config.json`: the pooling (`pooling_mode`, or
    the older `pooling_mode_*_tokens` switches);
  * `sentence_bert_config.json` (in the Transformer's path): the
    `max_seq_length` texts are cut to, and `do_lower_case`, a lower-casing
    of its own before the tokenizer.

`read_files` reads what they say (embed.py's settings, the conversion of a
run that recorded them); `contents` writes them as sentence-transformers
2.x wrote them, which every later version still loads (the embedding
fine-tuning run's record of its vectors, a Hugging Face directory made from
that run, a keras-hub embedder's conversion).
"""

import json
import os

from modeling import pooling as pooling_lib
from plumbing import files
from plumbing.errors import UserError

MODULES_FILE = "modules.json"
MODEL_CONFIG_FILE = "sentence_bert_config.json"
# The files `contents` writes, by the module kinds we compute.
_FOLDERS = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize"}
# sentence-transformers' older switches, one per pooling mode.
_POOLING_SWITCHES = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                     "pooling_mode_mean_tokens": "mean",
                     "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                     "pooling_mode_weightedmean_tokens": "weightedmean",
                     "pooling_mode_lasttoken": "lasttoken"}
_MODULE_ORDERS = (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"])


def holds_files(directory):
  """Whether `directory` holds a sentence-transformers model's files."""
  return bool(directory) and files.exists(os.path.join(directory, MODULES_FILE))


def _modules(directory):
  """{kind: the module's folder} from modules.json, checked for kinds we compute."""
  path = os.path.join(directory, MODULES_FILE)
  modules = files.read_json(path)
  if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
    raise UserError("%s: expected a list of modules." % path)
  kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
  if kinds not in _MODULE_ORDERS:
    raise UserError("%s: the model's modules are %s; we compute a Transformer, a "
                    "Pooling and an optional Normalize, in that order, and nothing else."
                    % (path, ", ".join(kinds) or "none"))
  return {kind: os.path.join(directory, m.get("path") or "") for kind, m in zip(kinds, modules)}


def _pooling_mode(path):
  config = files.read_json(path)
  mode = config.get("pooling_mode")
  if mode is None:  # The older switches; none set means the mean, as sentence-transformers reads them.
    modes = [m for key, m in _POOLING_SWITCHES.items() if config.get(key)] or ["mean"]
  else:
    modes = [mode] if isinstance(mode, str) else list(mode)
  if len(modes) != 1 or modes[0] not in pooling_lib.POOLINGS:
    raise UserError("%s: pooling %s; we pool by one of %s." % (
        path, " and ".join(map(str, modes)), ", ".join(pooling_lib.POOLINGS)))
  return modes[0]


def read_files(directory):
  """{setting: (value, the file it came from)} of what `directory`'s
  sentence-transformers files say (pooling, normalize, max_seq_length,
  lower_case_input), and the Transformer module's folder (where its
  tokenizer_config.json is)."""
  modules = _modules(directory)
  pooling_file = os.path.join(modules["Pooling"], "config.json")
  if not files.exists(pooling_file):
    raise UserError("%s is missing: the model's Pooling module has no config." % pooling_file)
  found = {"pooling": (_pooling_mode(pooling_file), pooling_file),
           "normalize": ("Normalize" in modules, os.path.join(directory, MODULES_FILE))}
  config_file = os.path.join(modules["Transformer"], MODEL_CONFIG_FILE)
  if files.exists(config_file):
    config = files.read_json(config_file)
    if config.get("max_seq_length") is not None:
      found["max_seq_length"] = (int(config["max_seq_length"]), config_file)
    if config.get("do_lower_case"):
      found["lower_case_input"] = (True, config_file)
  return found, modules["Transformer"]


def contents(hidden_size, pooling, normalize, max_seq_length):
  """{path relative to the model's directory: text} of the files that
  describe vectors of `hidden_size` pooled by `pooling` (pooling.POOLINGS),
  L2-normalised if `normalize`, of texts cut to `max_seq_length` tokens."""
  kinds = ["Transformer", "Pooling"] + (["Normalize"] if normalize else [])
  as_json = lambda value: json.dumps(value, indent=2) + "\n"
  written = {
      MODULES_FILE: as_json([{"idx": i, "name": str(i), "path": _FOLDERS[kind],
                              "type": "sentence_transformers.models." + kind}
                             for i, kind in enumerate(kinds)]),
      os.path.join(_FOLDERS["Pooling"], "config.json"): as_json({
          "word_embedding_dimension": hidden_size,
          "pooling_mode_cls_token": pooling == "cls",
          "pooling_mode_mean_tokens": pooling == "mean",
          "pooling_mode_max_tokens": pooling == "max",
          "pooling_mode_mean_sqrt_len_tokens": False}),
      # The tokenizer's own casing applies; no lower-casing before it.
      MODEL_CONFIG_FILE: as_json({"max_seq_length": max_seq_length, "do_lower_case": False}),
  }
  if normalize:  # No settings: every version makes its default Normalize of it.
    written[os.path.join(_FOLDERS["Normalize"], "config.json")] = as_json({})
  return written
