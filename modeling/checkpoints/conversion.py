"""Conversions between the checkpoint formats: our two TensorFlow kinds, and
Hugging Face directories in and out (the library side of
bert-convert-checkpoint, convert.py)."""

import json
import os

from absl import logging
import tensorflow as tf

from data_prep import casing
from modeling import bert_model
from modeling import checkpoints
from modeling import heads
from modeling.checkpoints import huggingface
from modeling.config import BertConfig
from plumbing import files
from plumbing.errors import UserError

_POOLER = ("bert/pooler/dense/kernel", "bert/pooler/dense/bias")


def load_model(config, input_checkpoint, may_lack=()):
  """BertWithHeads with every head the checkpoint holds, loaded from it, and
  the names of `may_lack` it lacked."""
  prefix = checkpoints.resolve(input_checkpoint)
  shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
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
  if output_format == "original":
    prefix = checkpoints.write_original_tensors(hf.tensors, output_checkpoint)
  else:
    shapes = {name: value.shape for name, value in hf.tensors.items()}
    model = bert_model.BertWithHeads(bert_model.BertModel(config),
                                     heads.build(config, heads.in_checkpoint(shapes)))
    for name, variable in model.original_names().items():
      if name in hf.tensors:
        variable.assign(hf.tensors[name])
    prefix = checkpoints.save_checkpoint(model, output_checkpoint)
  output_dir = os.path.dirname(prefix) or "."
  names = ("bert_config.json", "vocab.txt", casing.FILE_NAME)
  try:
    with files.atomic_outputs([os.path.join(output_dir, n) for n in names]) as (
        config_out, vocab_out, casing_out):
      config_out.file.write(config.to_json_string())
      vocab_out.file.write("".join(line + "\n" for line in hf.vocab))
      casing_out.file.write(json.dumps(casing.settings(hf.do_lower_case), indent=2) + "\n")
  except BaseException:
    for leftover in tf.io.gfile.glob(prefix + ".*"):
      files.remove(leftover)
    raise
  logging.info("Wrote %s (%s, %s format), bert_config.json (hidden_act %s), vocab.txt and "
               "%s in %s. Its tokenizer %s: the scripts follow that file when "
               "--do_lower_case is not given.", prefix, hf.architecture, output_format,
               config.hidden_act, casing.FILE_NAME, output_dir,
               "lower-cases" if hf.do_lower_case else "keeps case")
  return prefix


def export_huggingface(config, input_checkpoint, directory, vocab_file, do_lower_case,
                       architecture=None, label_names=None, problem=None):
  """A checkpoint of either TensorFlow kind to a Hugging Face directory
  (`problem`: a classifier's heads.MULTI_LABEL or the like)."""
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
                                        do_lower_case, architecture, label_names, problem)
  logging.info("Wrote %s: a %s (hidden_act %s).", directory, written,
               huggingface.ACTIVATIONS_TO_HF[config.hidden_act.lower()])
  return written
