"""Converts a BERT checkpoint between the original's format, ours and
Hugging Face's: what the convert_checkpoint.py command
(bert-convert-checkpoint) does, with plain arguments.

The input may be a checkpoint of either TensorFlow kind (a run's directory
means the checkpoint of it that best.choose picks, its best on dev or its
latest; `bert_config_file` gives its config) or a Hugging
Face model directory (config.json, model.safetensors, vocab.txt: its
config and vocabulary come with it). Every head the input holds (masked
LM, next sentence, classifier, SQuAD span, tagger) is carried over.

Written: original or keras: a checkpoint at the prefix `output_checkpoint`,
and from a Hugging Face directory also the released layout's
bert_config.json and vocab.txt beside it, with the tokenizer's casing
(tokenizer_config.json, which the scripts follow); huggingface: the
directory `output_checkpoint`, which transformers' from_pretrained loads
(`vocab_file` and `do_lower_case` give its tokenizer; by default, the casing
and labels the fine-tuning run recorded).
"""

import os

from absl import logging

from data_prep import casing
from modeling.checkpoints import best
from modeling.checkpoints import conversion
from modeling.checkpoints import huggingface
from modeling.config import BertConfig
from plumbing import files
from plumbing.errors import UserError


def convert_checkpoint(input_checkpoint, output_checkpoint, output_format="keras",
                       bert_config_file=None, vocab_file=None, do_lower_case=None,
                       hf_architecture=None, label_names=None, weights=None):
  """Writes `input_checkpoint` in `output_format` (original, keras or
  huggingface) at `output_checkpoint`. The last four apply to huggingface
  output: `vocab_file` defaults to vocab.txt beside `bert_config_file`;
  `do_lower_case` None means the casing recorded beside the run or the
  vocabulary, else True; `hf_architecture` None, the class the checkpoint's
  heads make; `label_names` None, the run's labels.txt, else LABEL_0, ...
  `weights`: which of a run directory's checkpoints (best.choose)."""
  if huggingface.is_huggingface_directory(input_checkpoint):
    if output_format == "huggingface":
      raise UserError("--input_checkpoint=%s is a Hugging Face directory already." %
                      input_checkpoint)
    conversion.import_huggingface(input_checkpoint, output_checkpoint, output_format)
    return
  try:
    source = best.choose(input_checkpoint, weights).prefix
  except FileNotFoundError as e:
    raise UserError("%s Nor is it a Hugging Face model directory (config.json)." % e) from None
  if not bert_config_file:
    raise UserError("--bert_config_file is required for a TensorFlow checkpoint (a "
                    "Hugging Face directory holds config.json).")
  config = BertConfig.from_json_file(bert_config_file)
  if output_format == "huggingface":
    _export_huggingface(config, input_checkpoint, source, output_checkpoint,
                        bert_config_file, vocab_file, do_lower_case, hf_architecture,
                        label_names)
    return
  written = conversion.convert(config, source, output_checkpoint, output_format)
  logging.info("Wrote %s (%s format).", written, output_format)


def _export_huggingface(config, input_checkpoint, source, output_dir, bert_config_file,
                        vocab_file, do_lower_case, hf_architecture, label_names):
  vocab_file = vocab_file or os.path.join(os.path.dirname(bert_config_file), "vocab.txt")
  if not os.path.exists(vocab_file):
    raise UserError("%s does not exist: give the model's vocabulary with --vocab_file." %
                    vocab_file)
  # A fine-tuning run's --output_dir records the casing it tokenized with
  # and its labels (and a multi-label run, its problem type); the
  # vocabulary's directory, the model's casing.
  run_dir = (input_checkpoint if os.path.isdir(input_checkpoint)
             else os.path.dirname(input_checkpoint))
  do_lower_case = casing.resolve(
      True if do_lower_case is None else do_lower_case, do_lower_case is not None,
      [run_dir or ".", os.path.dirname(vocab_file) or "."])
  label_names = label_names or files.read_labels(run_dir or ".")
  problem = files.read_problem(run_dir or ".")
  conversion.export_huggingface(config, source, output_dir, vocab_file, do_lower_case,
                                hf_architecture, label_names, problem)
