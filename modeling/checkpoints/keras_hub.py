"""keras-hub BERT presets, read into the original's names and written back.

A preset is the directory keras-hub's `save_to_preset` writes and
`from_preset` reads: `config.json` (the BertBackbone's constructor
arguments, as Keras serializes a layer), `model.weights.h5`,
`metadata.json`, `tokenizer.json` (the BertTokenizer's arguments) with its
vocabulary in `assets/tokenizer/vocabulary.txt`; a task adds `task.json`
(the task's arguments, the backbone's and the preprocessor's inside),
`task.weights.h5` and `preprocessor.json`. Three BERT tasks hold what our
heads hold: BertTextClassifier (dropout and a dense layer on the pooled
output: our classifier head), BertMaskedLM (a transform and the word
embeddings: our masked-LM head, but see below) and BertTextEmbedder (mean,
first-token or max pooling of the last layer, then L2 normalisation: no
weights of its own).

What keras-hub computes differently, in its own source (0.32): BertBackbone
always runs the tanh GELU (`gelu_approximate`), which is the original's
"gelu" and not our "gelu_exact"; BertMaskedLM's head runs the exact GELU and
a layer-norm epsilon of 1e-5 (`MaskedLMHead` defaults), where the
original's runs its config's activation (tanh GELU) and 1e-12. Those cases
are `inexact` reasons; the caller stops on them unless asked for the
nearest preset. Nothing here imports keras_hub: the files are JSON and
HDF5 (keras_hub_weights.py).

Our layout has no place for some of a preset's settings (a task's pooling,
the preprocessor's sequence length, a classifier's activation); importing
keeps them in `keras_hub_task.json` beside the checkpoint, and exporting
the same task from there reads them back.
"""

import datetime
import json
import os

import keras

from modeling import heads
from modeling.checkpoints import keras_hub_weights as weights
from modeling.checkpoints import sentence_transformers
from plumbing import files
from plumbing.errors import UserError

# --keras_hub_task's values -> keras-hub's classes (None: the backbone alone).
TASKS = {"backbone": None, "text_classifier": "BertTextClassifier",
         "text_embedder": "BertTextEmbedder", "masked_lm": "BertMaskedLM"}
_TASK_NAMES = {cls: name for name, cls in TASKS.items() if cls}
# The keras-hub release whose files these are (metadata.json's keras_hub_version).
FORMAT_VERSION = "0.32.0"
RECORD = "keras_hub_task.json"
VOCABULARY = os.path.join("assets", "tokenizer", "vocabulary.txt")
POOLING_MODES = ("mean", "cls", "max")
# What BertTokenizer requires in a vocabulary.
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")
_BACKBONE = "keras_hub>BertBackbone"
_PREPROCESSORS = {  # task -> (module and layer name, class, its own defaults)
    "text_classifier": ("bert_text_classifier_preprocessor", "BertTextClassifierPreprocessor",
                        {}),
    "text_embedder": ("bert_text_embedder_preprocessor", "BertTextEmbedderPreprocessor", {}),
    "masked_lm": ("bert_masked_lm_preprocessor", "BertMaskedLMPreprocessor",
                  {"mask_selection_rate": 0.15, "mask_selection_length": 96,
                   "mask_token_rate": 0.8, "random_token_rate": 0.1}),
}
_TASK_MODULES = {"text_classifier": "bert_text_classifier",
                 "text_embedder": "bert_text_embedder", "masked_lm": "bert_masked_lm"}
_FLOAT_POLICIES = ("float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16",
                   "float64")
# keras-hub's layer-norm epsilon and activation in its masked-LM head.
MASKED_LM_EPSILON = 1e-5
MASKED_LM_ACTIVATION = "gelu_exact"


def inexact(config, task):
  """Why keras-hub cannot compute `task` of a model of `config` (bert_config
  fields) as ours does, or None."""
  if config.get("hidden_act", "gelu").lower() == "gelu_exact":
    return ("its BertBackbone runs the tanh GELU only, and this model was trained with the "
            "exact GELU (\"hidden_act\": \"gelu_exact\")")
  if task == "masked_lm":
    return ("its BertMaskedLM head runs the exact GELU and a layer-norm epsilon of 1e-5, "
            "the original's masked-LM head its config's activation (%s) and 1e-12" %
            config.get("hidden_act", "gelu"))
  return None


# ---------------------------------------------------------------- writing


def _dtype(name):
  return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name},
          "registered_name": None}


def _serialized(module, class_name, config):
  """A layer as Keras' serialize_keras_object gives it."""
  return {"module": "keras_hub.src.models.bert." + module, "class_name": class_name,
          "config": config, "registered_name": "keras_hub>" + class_name}


def backbone_config(config):
  """config.json: a BertBackbone for `config` (bert_config fields). Its one
  dropout rate is the hidden layers' (only training reads it)."""
  return _serialized("bert_backbone", "BertBackbone", {
      "name": "bert_backbone", "trainable": True, "dtype": _dtype("float32"),
      "vocabulary_size": config["vocab_size"], "num_layers": config["num_hidden_layers"],
      "num_heads": config["num_attention_heads"], "hidden_dim": config["hidden_size"],
      "intermediate_dim": config["intermediate_size"],
      "dropout": config["hidden_dropout_prob"],
      "max_sequence_length": config["max_position_embeddings"],
      "num_segments": config["type_vocab_size"]})


def tokenizer_config(do_lower_case):
  """tokenizer.json: a BertTokenizer splitting as the original's does, which
  strips accents exactly when it lower-cases."""
  return _serialized("bert_tokenizer", "BertTokenizer", {
      "name": "bert_tokenizer", "trainable": True, "dtype": _dtype("int32"),
      "config_file": "tokenizer.json", "vocabulary": None, "sequence_length": None,
      "lowercase": bool(do_lower_case), "strip_accents": bool(do_lower_case), "split": True,
      "suffix_indicator": "##", "oov_token": "[UNK]", "special_tokens": None,
      "special_tokens_in_strings": False})


def preprocessor_config(task, do_lower_case, sequence_length, recorded=None):
  """preprocessor.json of `task`; `recorded`: the settings an imported
  preset had (keras_hub_task.json)."""
  name, class_name, defaults = _PREPROCESSORS[task]
  config = {"name": name, "trainable": True, "dtype": _dtype("float32"),
            "tokenizer": tokenizer_config(do_lower_case), "config_file": "preprocessor.json",
            "sequence_length": sequence_length, "truncate": "round_robin"}
  config.update(defaults)
  config.update({k: v for k, v in (recorded or {}).items() if k in config})
  return _serialized(name, class_name, config)


def task_config(task, config, preprocessor, settings):
  """task.json: the task's arguments (`settings`: num_classes, activation,
  dropout for a classifier; pooling_mode, normalize for an embedder)."""
  values = {"backbone": backbone_config(config), "preprocessor": preprocessor,
            "name": _TASK_MODULES[task]}
  values.update(settings)
  return _serialized(_TASK_MODULES[task], TASKS[task], values)


def metadata(parameter_count):
  """metadata.json, as keras-hub's saver writes it."""
  return {"keras_version": keras.__version__, "keras_hub_version": FORMAT_VERSION,
          "parameter_count": parameter_count,
          "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
          "tasks": ["MaskedLM", "TextClassifier", "TextEmbedder"]}


def to_json(value):
  """JSON as keras-hub writes it (indent 4, no final newline)."""
  return json.dumps(value, indent=4)


def check_vocab(vocab_lines, source):
  """One error line for a vocabulary BertTokenizer would refuse."""
  present = set(vocab_lines)
  for token in SPECIAL_TOKENS:
    if token not in present:
      raise UserError("%s lacks %s, which keras-hub's BertTokenizer requires." % (source, token))


def choose_task(parts, requested=None, recorded=None, problem=None):
  """The TASKS key to write for a checkpoint holding the heads `parts`
  ({part: True or its output count}): `requested` (--keras_hub_task), else
  the one its heads make (a bare encoder: `recorded`, the task an imported
  preset had, or the backbone). One error line for heads keras-hub has no
  task for."""
  held = ", ".join(parts) or "none"
  if requested in (None, "text_classifier") and "classifier" in parts:
    if parts["classifier"] == 1:
      raise UserError("The checkpoint's classifier has one output (a regressor, as STS-B's, or "
                      "run_swag.py's choice scorer), which keras-hub's BertTextClassifier does "
                      "not express: --keras_hub_task=backbone writes the encoder alone.")
    if problem == heads.MULTI_LABEL:
      raise UserError("The checkpoint is a multi-label classifier (a sigmoid a label), which "
                      "keras-hub's BertTextClassifier (one label of many) does not express: "
                      "--keras_hub_task=backbone writes the encoder alone.")
  if requested is None:
    for part in ("span", "token_classifier"):
      if part in parts and "classifier" not in parts:
        raise UserError("keras-hub has no BERT task for the checkpoint's %s head: "
                        "--keras_hub_task=backbone (or text_embedder) writes the encoder "
                        "alone." % part)
    if "classifier" in parts:
      return "text_classifier"
    if "masked_lm" in parts:
      return "masked_lm"
    return recorded if recorded in ("backbone", "text_embedder") else "backbone"
  needed = {"text_classifier": "classifier", "masked_lm": "masked_lm"}.get(requested)
  if needed and needed not in parts:
    raise UserError("--keras_hub_task=%s needs the checkpoint's %s head, which it lacks (it "
                    "has: %s)." % (requested, needed, held))
  return requested


def task_settings(task, num_classes, recorded, pooling=None, normalize=None):
  """task.json's own arguments: a recorded preset's where it was this task,
  then the flags', then keras-hub's defaults."""
  if task == "text_classifier":
    values = {"num_classes": num_classes, "activation": "linear", "dropout": 0.1}
  elif task == "text_embedder":
    values = {"pooling_mode": "mean", "normalize": True}
  else:
    values = {}
  values.update({k: v for k, v in recorded.items() if k in values and k != "num_classes"})
  if task == "text_embedder":
    if pooling is not None:
      values["pooling_mode"] = pooling
    if normalize is not None:
      values["normalize"] = bool(normalize)
  return values


def preset_files(config, tensors, vocab_lines, do_lower_case, task, settings,
                 sequence_length, preprocessor_settings=None, labels=None):
  """{path in the preset: bytes or text} of a preset of `task` holding
  `tensors` ({original name: array}); `settings` from task_settings."""
  layout = weights.backbone_layout(config)
  contents = {
      "config.json": to_json(backbone_config(config)),
      "metadata.json": to_json(metadata(weights.parameter_count(layout))),
      "model.weights.h5": weights.to_bytes(layout, tensors),
      "tokenizer.json": to_json(tokenizer_config(do_lower_case)),
      VOCABULARY: "".join(token + "\n" for token in vocab_lines),
  }
  if task != "backbone":
    preprocessor = preprocessor_config(task, do_lower_case, sequence_length,
                                       preprocessor_settings)
    contents["preprocessor.json"] = to_json(preprocessor)
    contents["task.json"] = to_json(task_config(task, config, preprocessor, settings))
  if task == "text_classifier":
    contents["task.weights.h5"] = weights.to_bytes(
        weights.classifier_layout(config, settings["num_classes"]), tensors)
  elif task == "masked_lm":
    contents["task.weights.h5"] = weights.to_bytes(weights.masked_lm_layout(config), tensors)
  if labels:
    # keras-hub has no place for label names: they stay beside its files
    # (it reads only those it knows), as a run keeps them.
    contents[files.LABELS_FILE] = "".join(label + "\n" for label in labels)
  return contents


def sentence_transformers_files(hidden_size, settings):
  """An embedder's pooling as sentence-transformers' files describe it
  (sentence_transformers.contents), which embed.py follows when they sit
  beside the vocabulary. `settings`: the preset's (Preset.settings)."""
  task = settings.get("task_config", {})
  return sentence_transformers.contents(
      hidden_size, task.get("pooling_mode", "mean"), task.get("normalize", True),
      settings.get("preprocessor", {}).get("sequence_length") or 512)


def task_layout(task, config, num_classes):
  """The Layout of task.weights.h5 for `task`, or None."""
  if task == "text_classifier":
    return weights.classifier_layout(config, num_classes)
  if task == "masked_lm":
    return weights.masked_lm_layout(config)
  return None


# ---------------------------------------------------------------- reading


class Preset(object):
  """What a preset holds, in the original's terms: `config` (bert_config
  fields), `task` (a TASKS key), `settings` (what our layout has no place
  for: the task's and preprocessor's arguments), `num_classes`, `vocab`
  (lines), `do_lower_case`, `notes` (lines worth telling the user)."""

  def __init__(self, config, task, settings, num_classes, vocab, do_lower_case, notes):
    self.config, self.task, self.settings = config, task, settings
    self.num_classes, self.vocab, self.do_lower_case = num_classes, vocab, do_lower_case
    self.notes = notes


def _read_json(path):
  value = files.read_json(path)
  if not isinstance(value, dict) or not isinstance(value.get("config"), dict):
    raise UserError("%s: expected a serialized Keras object (\"config\": {...})." % path)
  return value


def is_preset(path):
  """Whether `path` is a keras-hub preset directory (its config.json names
  a registered Keras class, as keras-hub's loader tells one)."""
  config = os.path.join(path, "config.json")
  if not os.path.isdir(path) or not os.path.exists(config):
    return False
  try:
    with open(config, encoding="utf-8") as f:
      return "registered_name" in json.load(f)
  except ValueError:
    return False


def read_backbone(directory):
  """config.json -> bert_config fields; one error line for anything else."""
  path = os.path.join(directory, "config.json")
  saved = _read_json(path)
  if saved.get("registered_name") != _BACKBONE:
    raise UserError("%s: \"registered_name\": %r: only keras-hub's BertBackbone converts to "
                    "the original's architecture." % (path, saved.get("registered_name")))
  values = saved["config"]
  policy = values.get("dtype")
  name = policy.get("config", {}).get("name") if isinstance(policy, dict) else policy
  if isinstance(policy, dict) and policy.get("class_name") != "DTypePolicy":
    name = policy.get("class_name")  # A DTypePolicyMap: some layers quantized.
  if name is not None and name not in _FLOAT_POLICIES:
    raise UserError("%s: \"dtype\": %r: a quantized model; only float weights convert." %
                    (path, name))
  for key in ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
              "max_sequence_length"):
    if not isinstance(values.get(key), int):
      raise UserError("%s: \"%s\" must be a number, got %r." % (path, key, values.get(key)))
  dropout = values.get("dropout", 0.1)
  return {"vocab_size": values["vocabulary_size"], "hidden_size": values["hidden_dim"],
          "num_hidden_layers": values["num_layers"], "num_attention_heads": values["num_heads"],
          "intermediate_size": values["intermediate_dim"], "hidden_act": "gelu",
          "hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout,
          "max_position_embeddings": values["max_sequence_length"],
          "type_vocab_size": values.get("num_segments", 2), "initializer_range": 0.02}


def read_tokenizer(directory):
  """(vocabulary lines, do_lower_case, notes) from tokenizer.json and its
  assets; one error line for a tokenizer the original's cannot follow."""
  path = os.path.join(directory, "tokenizer.json")
  if not os.path.exists(path):
    raise UserError("%s: no tokenizer.json: the tokenizer's vocabulary is needed too (save "
                    "the preprocessor or tokenizer with save_to_preset)." % directory)
  values = _read_json(path)["config"]
  for key, wanted in (("split", True), ("suffix_indicator", "##"), ("oov_token", "[UNK]")):
    if values.get(key, wanted) != wanted:
      raise UserError("%s: \"%s\": %s: the original's tokenizer has %s." % (
          path, key, json.dumps(values.get(key)), json.dumps(wanted)))
  lower = values.get("lowercase", False)
  accents = values.get("strip_accents", False)
  notes = []
  if accents and not lower:
    raise UserError("%s: \"strip_accents\": true with \"lowercase\": false: the original's "
                    "tokenizer strips accents only when it lower-cases." % path)
  if lower and not accents:
    notes.append("%s lower-cases without stripping accents (BertTokenizer's default); the "
                 "original's tokenizer, which the scripts run, strips them too, as BERT's "
                 "uncased models were trained: text with accents may tokenize otherwise than "
                 "in keras-hub." % path)
  vocab = values.get("vocabulary")
  if not isinstance(vocab, list):
    vocab_path = os.path.join(directory, VOCABULARY)
    if not os.path.exists(vocab_path):
      raise UserError("%s: no %s: the tokenizer's vocabulary is needed too." % (
          directory, VOCABULARY))
    with open(vocab_path, encoding="utf-8") as f:
      vocab = f.read().split("\n")
    if vocab and vocab[-1] == "":
      vocab.pop()
  return vocab, bool(lower), notes


def read_task(directory, backbone):
  """(task, settings, num_classes) from task.json and preprocessor.json;
  ("backbone", {}, None) without them."""
  path = os.path.join(directory, "task.json")
  if not os.path.exists(path):
    return "backbone", {}, None
  saved = _read_json(path)
  class_name = saved.get("class_name")
  if class_name not in _TASK_NAMES:
    raise UserError("%s: \"class_name\": %r: keras-hub's BERT tasks that convert are %s." % (
        path, class_name, ", ".join(sorted(_TASK_NAMES))))
  task = _TASK_NAMES[class_name]
  values = saved["config"]
  inside = (values.get("backbone") or {}).get("config", {})
  for key, value in inside.items():
    if key in backbone_config_keys() and value != backbone[key]:
      raise UserError("%s: the backbone's \"%s\" is %r, config.json's %r." % (
          path, key, value, backbone[key]))
  settings = {"task_config": {k: v for k, v in values.items()
                              if k not in ("backbone", "preprocessor", "name")}}
  num_classes = None
  if task == "text_classifier":
    num_classes = values.get("num_classes")
    if not isinstance(num_classes, int) or num_classes < 1:
      raise UserError("%s: \"num_classes\" must be a positive number, got %r." % (
          path, num_classes))
    if values.get("activation") not in (None, "linear", "softmax"):
      raise UserError("%s: \"activation\": %r: a classifier converts with its logits (linear) "
                      "or their softmax only." % (path, values.get("activation")))
  elif task == "text_embedder":
    if values.get("pooling_mode", "mean") not in POOLING_MODES:
      raise UserError("%s: \"pooling_mode\": %r: expected one of %s." % (
          path, values.get("pooling_mode"), ", ".join(POOLING_MODES)))
  preprocessor = values.get("preprocessor") or {}
  settings["preprocessor"] = {k: v for k, v in (preprocessor.get("config") or {}).items()
                              if k not in ("name", "trainable", "dtype", "tokenizer",
                                           "config_file")}
  return task, settings, num_classes


def backbone_config_keys():
  """The BertBackbone arguments that decide its weights and outputs."""
  return ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
          "max_sequence_length", "num_segments")


def read_preset(directory):
  """The Preset in `directory` (weights apart: keras_hub_weights.read)."""
  config = read_backbone(directory)
  saved_backbone = _read_json(os.path.join(directory, "config.json"))["config"]
  backbone = {k: saved_backbone.get(k, 2 if k == "num_segments" else None)
              for k in backbone_config_keys()}
  task, settings, num_classes = read_task(directory, backbone)
  vocab, do_lower_case, notes = read_tokenizer(directory)
  if len(vocab) > config["vocab_size"]:
    raise UserError("%s: the vocabulary has %d entries, more than vocabulary_size %d in "
                    "config.json." % (directory, len(vocab), config["vocab_size"]))
  return Preset(config, task, settings, num_classes, vocab, do_lower_case, notes)


def read_record(directories):
  """The settings an imported preset left (keras_hub_task.json) in the first
  of `directories` holding one, or {}."""
  for directory in directories:
    path = os.path.join(directory or ".", RECORD)
    if files.exists(path):
      return files.read_json(path)
  return {}
