"""Conversions between the checkpoint formats: our two TensorFlow kinds,
Hugging Face directories and keras-hub presets in and out (the library side
of bert-convert-checkpoint, convert.py)."""

import json
import os

from absl import logging
import tensorflow as tf

from data_prep import casing
from modeling import bert_model
from modeling import checkpoints
from modeling import heads
from modeling.checkpoints import huggingface
from modeling.checkpoints import keras_hub
from modeling.checkpoints import keras_hub_gap
from modeling.checkpoints import keras_hub_weights
from modeling.config import BertConfig
from plumbing import files
from plumbing.errors import UserError

_POOLER = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")


def load_model(config, input_checkpoint, may_lack=()):
  """BertWithHeads with every head the checkpoint holds, loaded from it, and
  the names of `may_lack` it lacked."""
  prefix = checkpoints.resolve(input_checkpoint)
  shapes = checkpoints.reader(prefix).get_variable_to_shape_map()
  found = heads.in_checkpoint(shapes)
  logging.info("Heads found in %s: %s", prefix, found)
  model = bert_model.BertWithHeads(bert_model.BertModel(config), heads.build(config, found))
  report = checkpoints.load_checkpoint(model, prefix)
  missing = report.missing if isinstance(report, checkpoints.LoadReport) else []
  lacking = [name for name in missing if name not in may_lack]
  if lacking:
    raise UserError("Checkpoint %s lacks %s." % (prefix, ", ".join(lacking)))
  return model, missing


def convert(config, input_checkpoint, output_checkpoint, output_format):
  """Between our two TensorFlow formats; returns the prefix written."""
  model, _ = load_model(config, input_checkpoint)
  if output_format == "original":
    return checkpoints.save_original_checkpoint(model, output_checkpoint)
  return checkpoints.save_checkpoint(model, output_checkpoint)


def import_huggingface(directory, output_checkpoint, output_format):
  """A Hugging Face directory to the released layout: the checkpoint at
  `output_checkpoint`, bert_config.json and vocab.txt beside it."""
  hf = huggingface.read_directory(directory)
  config = BertConfig.from_dict(dict(hf.config), source=os.path.join(directory, "config.json"))
  for note in hf.notes:
    logging.warning("%s: %s", directory, note)
  prefix = _write_released_layout(config, hf.tensors, hf.vocab, hf.do_lower_case,
                                  output_checkpoint, output_format)
  logging.info("Wrote %s (%s, %s format), bert_config.json (hidden_act %s), vocab.txt and "
               "%s in %s. Its tokenizer %s: the scripts follow that file when "
               "--do_lower_case is not given.", prefix, hf.architecture, output_format,
               config.hidden_act, casing.FILE_NAME, os.path.dirname(prefix) or ".",
               "lower-cases" if hf.do_lower_case else "keeps case")
  return prefix


def _write_released_layout(config, tensors, vocab, do_lower_case, output_checkpoint,
                           output_format, extra=None):
  """The checkpoint of `tensors` ({original name: array}) at
  `output_checkpoint`, and beside it bert_config.json, vocab.txt (`vocab`:
  its lines), the casing record and `extra` ({file name: text}); all or
  none. Returns the checkpoint's prefix."""
  if output_format == "original":
    prefix = checkpoints.write_original_tensors(tensors, output_checkpoint)
  else:
    shapes = {name: value.shape for name, value in tensors.items()}
    model = bert_model.BertWithHeads(bert_model.BertModel(config),
                                     heads.build(config, heads.in_checkpoint(shapes)))
    for name, variable in model.original_names().items():
      if name in tensors:
        variable.assign(tensors[name])
    prefix = checkpoints.save_checkpoint(model, output_checkpoint)
  output_dir = os.path.dirname(prefix) or "."
  contents = {"bert_config.json": config.to_json_string(),
              "vocab.txt": "".join(line + "\n" for line in vocab),
              casing.FILE_NAME: json.dumps(casing.settings(do_lower_case), indent=2) + "\n"}
  contents.update(extra or {})
  names = sorted(contents)
  for name in names:
    files.makedirs(os.path.dirname(os.path.join(output_dir, name)))
  try:
    with files.atomic_outputs([os.path.join(output_dir, n) for n in names]) as outputs:
      for name, output in zip(names, outputs):
        output.file.write(contents[name])
  except BaseException:
    for leftover in tf.io.gfile.glob(prefix + ".*"):
      files.remove(leftover)
    raise
  return prefix


def export_huggingface(config, input_checkpoint, directory, vocab_file, do_lower_case,
                       architecture=None, label_names=None, problem=None, extra=None):
  """A checkpoint of either TensorFlow kind to a Hugging Face directory
  (`problem`: a classifier's heads.MULTI_LABEL or the like; `extra`: more
  files, {path in the directory: text})."""
  with open(vocab_file, encoding="utf-8") as f:
    vocab = f.read()
  entries = vocab.count("\n") + (not vocab.endswith("\n"))
  if entries > config.vocab_size:
    raise UserError("%s has %d entries, more than the model's vocab_size %d." % (
        vocab_file, entries, config.vocab_size))
  # A checkpoint imported from a class without the pooler (masked LM, SQuAD,
  # tagging) goes back without it.
  model, missing = load_model(config, input_checkpoint, may_lack=_POOLER)
  tensors = {name: variable.numpy() for name, variable in model.original_names().items()
             if name not in missing}
  written = huggingface.write_directory(directory, config.to_dict(), tensors, vocab,
                                        do_lower_case, architecture, label_names, problem,
                                        extra)
  logging.info("Wrote %s: a %s (hidden_act %s).", directory, written,
               huggingface.ACTIVATIONS_TO_HF[config.hidden_act.lower()])
  return written


def _inexact_error(reason, where, encoder_alone=False):
  return UserError("%s: keras-hub and ours compute this model differently: %s. "
                   "--keras_hub_nearest converts it to the nearest model and logs the largest "
                   "difference of their outputs%s." % (
                       where, reason, "; --keras_hub_task=backbone writes the encoder alone, "
                       "exactly" if encoder_alone else ""))


def import_keras_hub(directory, output_checkpoint, output_format, nearest=False):
  """A keras-hub preset to the released layout, as import_huggingface; the
  preset's task and settings our layout has no place for are kept in
  keras_hub_task.json, its labels.txt beside them."""
  preset = keras_hub.read_preset(directory)
  config = BertConfig.from_dict(dict(preset.config),
                                source=os.path.join(directory, "config.json"))
  reason = keras_hub.inexact(preset.config, preset.task)
  if reason and not nearest:
    raise _inexact_error(reason, "%s (a %s)" % (directory, keras_hub.TASKS[preset.task]))
  tensors = keras_hub_weights.read(os.path.join(directory, "model.weights.h5"),
                                   keras_hub_weights.backbone_layout(preset.config))
  layout = keras_hub.task_layout(preset.task, preset.config, preset.num_classes)
  if layout is not None:
    path = os.path.join(directory, "task.weights.h5")
    if not os.path.exists(path):
      raise UserError("%s: no task.weights.h5: the %s's own weights are needed too." % (
          directory, keras_hub.TASKS[preset.task]))
    tensors.update(keras_hub_weights.read(path, layout))
  for note in preset.notes:
    logging.warning("%s", note)
  if reason:
    _log_gap(config, tensors, preset.task, preset.settings.get("task_config", {}), reason)
  record = {"task": preset.task, **preset.settings}
  extra = {keras_hub.RECORD: json.dumps(record, indent=2, sort_keys=True) + "\n"}
  labels = files.read_labels(directory)
  if labels:
    extra[files.LABELS_FILE] = "".join(label + "\n" for label in labels)
  if preset.task == "text_embedder":  # What embed.py follows.
    extra.update(keras_hub.sentence_transformers_files(config.hidden_size, preset.settings))
  prefix = _write_released_layout(config, tensors, preset.vocab, preset.do_lower_case,
                                  output_checkpoint, output_format, extra)
  logging.info("Wrote %s (from a %s, %s format), with bert_config.json, vocab.txt, %s and %s "
               "in %s. Its tokenizer %s: the scripts follow that file when --do_lower_case "
               "is not given.", prefix, keras_hub.TASKS[preset.task] or "BertBackbone",
               output_format, casing.FILE_NAME, keras_hub.RECORD,
               os.path.dirname(prefix) or ".",
               "lower-cases" if preset.do_lower_case else "keeps case")
  return prefix


def _log_gap(config, tensors, task, settings, reason):
  gap = keras_hub_gap.largest_difference(config, tensors, task,
                                         settings.get("pooling_mode", "mean"),
                                         settings.get("normalize", True))
  logging.warning("The nearest model, not the same: %s. The largest difference of the %s's "
                  "outputs, ours against keras-hub's, %s: %.3g.", reason,
                  keras_hub.TASKS[task] or "BertBackbone", keras_hub_gap.describe(), gap)


def export_keras_hub(config, input_checkpoint, directory, vocab_file, do_lower_case,
                     task=None, label_names=None, problem=None, record=None,
                     sequence_length=None, pooling=None, normalize=None, nearest=False):
  """A checkpoint of either TensorFlow kind to a keras-hub preset directory
  that `from_preset` loads: `task` (keras_hub.TASKS; None: the one its heads
  make), `record` (keras_hub_task.json of an imported preset, {}),
  `sequence_length` the preprocessor's (None: the record's, else 512 or
  max_position_embeddings if less), `pooling` and `normalize` an
  embedder's. Returns the task written."""
  record = record or {}
  with open(vocab_file, encoding="utf-8") as f:
    vocab = f.read().splitlines()
  if len(vocab) > config.vocab_size:
    raise UserError("%s has %d entries, more than the model's vocab_size %d." % (
        vocab_file, len(vocab), config.vocab_size))
  keras_hub.check_vocab(vocab, vocab_file)
  if getattr(config, "causal_attention", False):
    raise UserError("--bert_config_file: a left-to-right (causal_attention) model has no "
                    "keras-hub counterpart.")
  if config.hidden_act.lower() not in ("gelu", "gelu_exact"):
    raise UserError("--bert_config_file: \"hidden_act\" is %r, and keras-hub's BertBackbone "
                    "runs the tanh GELU only." % config.hidden_act)
  model, missing = load_model(config, input_checkpoint, may_lack=_POOLER)
  parts = {head.part: head.num_outputs or True for head in model.heads}
  task = keras_hub.choose_task(parts, task, record.get("task"), problem)
  reason = keras_hub.inexact(config.to_dict(), task)
  if reason and not nearest:
    raise _inexact_error(reason, "--output_format=keras_hub (a %s)" % (
        keras_hub.TASKS[task] or "BertBackbone"), encoder_alone=task == "masked_lm" and
                         config.hidden_act.lower() == "gelu")
  kept = {"text_classifier": ("classifier",), "masked_lm": ("masked_lm",)}.get(task, ())
  left_out = [part for part in parts if part not in kept]
  if left_out:
    logging.info("Left out of the preset: the %s head(s), which a %s does not hold.",
                 ", ".join(left_out), keras_hub.TASKS[task] or "BertBackbone")
  if missing:
    logging.warning("The checkpoint has no pooler: the preset holds its freshly drawn "
                    "weights, as a new head's (the pooled output means nothing yet).")
  tensors = {name: variable.numpy() for name, variable in model.original_names().items()}
  recorded = record if record.get("task") == task else {}
  settings = keras_hub.task_settings(task, parts.get("classifier"),
                                     recorded.get("task_config", {}), pooling, normalize)
  if label_names and task == "text_classifier" and len(label_names) != parts["classifier"]:
    raise UserError("%d label names (--label_names, or the run's labels.txt) for a classifier "
                    "of %d outputs." % (len(label_names), parts["classifier"]))
  preprocessor = dict(recorded.get("preprocessor", {}))
  if sequence_length:
    preprocessor["sequence_length"] = sequence_length
  contents = keras_hub.preset_files(
      config.to_dict(), tensors, vocab, do_lower_case, task, settings,
      preprocessor.get("sequence_length") or min(512, config.max_position_embeddings),
      preprocessor, label_names if task == "text_classifier" else None)
  if reason:
    _log_gap(config, tensors, task, settings, reason)
  _write_preset(directory, contents)
  logging.info("Wrote %s: a keras-hub %s preset (%s).", directory,
               keras_hub.TASKS[task] or "BertBackbone", ", ".join(sorted(contents)))
  return task


def _write_preset(directory, contents):
  """The preset's files, all or none; a directory already there must be a
  preset (it is replaced whole, so no file of another task stays)."""
  if files.exists(directory) and not (tf.io.gfile.isdir(directory) and (
      not tf.io.gfile.listdir(directory) or keras_hub.is_preset(directory))):
    raise UserError("--output_checkpoint=%s exists and is not a keras-hub preset: give a new "
                    "directory." % directory)
  with files.atomic_directory(directory) as temporary:
    for name, data in contents.items():
      path = os.path.join(temporary, name)
      files.makedirs(os.path.dirname(path))
      with files.atomic_output(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
