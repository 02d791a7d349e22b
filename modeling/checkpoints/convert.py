"""Converts a BERT checkpoint between the original's format, ours, Hugging
Face's and keras-hub's: what the convert_checkpoint.py command
(bert-convert-checkpoint) does, with plain arguments.

The input may be a checkpoint of either TensorFlow kind (a run's directory
means the checkpoint of it that best.choose picks, its best on dev or its
latest; `bert_config_file` gives its config), a Hugging Face model
directory (config.json, model.safetensors, vocab.txt) or a keras-hub preset
(config.json naming BertBackbone, model.weights.h5, tokenizer.json): their
config and vocabulary come with them. Every head the input holds (masked
LM, next sentence, classifier, SQuAD span, tagger) is carried over.

Written: original or keras: a checkpoint at the prefix `output_checkpoint`,
and from a Hugging Face directory or a preset also the released layout's
bert_config.json and vocab.txt beside it, with the tokenizer's casing
(tokenizer_config.json, which the scripts follow); huggingface: the
directory `output_checkpoint`, which transformers' from_pretrained loads;
keras_hub: the preset directory `output_checkpoint`, which keras-hub's
from_preset loads (for both, `vocab_file` and `do_lower_case` give the
tokenizer; by default, the casing and labels the fine-tuning run recorded).
"""

import os

from absl import logging

from data_prep import casing
from modeling.checkpoints import best
from modeling.checkpoints import conversion
from modeling.checkpoints import huggingface
from modeling.checkpoints import keras_hub
from modeling.checkpoints import sentence_transformers
from modeling.config import BertConfig
from plumbing import files
from plumbing.errors import UserError
from plumbing.run_directory import settings as run_settings


def convert_checkpoint(input_checkpoint, output_checkpoint, output_format="keras",
                       bert_config_file=None, vocab_file=None, do_lower_case=None,
                       hf_architecture=None, label_names=None, weights=None,
                       keras_hub_options=None):
  """Writes `input_checkpoint` in `output_format` (original, keras,
  huggingface or keras_hub) at `output_checkpoint`. `vocab_file`,
  `do_lower_case` and `label_names` apply to huggingface and keras_hub
  output: `vocab_file` defaults to vocab.txt beside `bert_config_file`;
  `do_lower_case` None means the casing recorded beside the run or the
  vocabulary, else True; `label_names` None, the run's labels.txt, else
  LABEL_0, ...; `hf_architecture` None, the class the checkpoint's heads
  make. `weights`: which of a run directory's checkpoints (best.choose).
  `keras_hub_options`: {task, pooling, normalize, nearest}, the
  --keras_hub_* flags."""
  options = dict(task=None, pooling=None, normalize=None, nearest=False)
  options.update(keras_hub_options or {})
  if keras_hub.is_preset(input_checkpoint):
    if output_format == "keras_hub":
      raise UserError("--input_checkpoint=%s is a keras-hub preset already." % input_checkpoint)
    conversion.import_keras_hub(input_checkpoint, output_checkpoint, output_format,
                                options["nearest"])
    return
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
  if output_format == "keras_hub":
    _export_keras_hub(config, input_checkpoint, source, output_checkpoint, bert_config_file,
                      vocab_file, do_lower_case, label_names, options)
    return
  written = conversion.convert(config, source, output_checkpoint, output_format)
  logging.info("Wrote %s (%s format).", written, output_format)


def _run_records(input_checkpoint, bert_config_file, vocab_file, do_lower_case):
  """What the run and the model recorded that an export follows: (vocab_file,
  do_lower_case, run_dir)."""
  vocab_file = vocab_file or os.path.join(os.path.dirname(bert_config_file), "vocab.txt")
  if not files.exists(vocab_file):
    raise UserError("%s does not exist: give the model's vocabulary with --vocab_file." %
                    vocab_file)
  # A fine-tuning run's --output_dir records the casing it tokenized with
  # and its labels (and a multi-label run, its problem type); the
  # vocabulary's directory, the model's casing.
  run_dir = (input_checkpoint if files.is_directory(input_checkpoint)
             else os.path.dirname(input_checkpoint)) or "."
  do_lower_case = casing.resolve(
      True if do_lower_case is None else do_lower_case, do_lower_case is not None,
      [run_dir, os.path.dirname(vocab_file) or "."])
  return vocab_file, do_lower_case, run_dir


def _export_huggingface(config, input_checkpoint, source, output_dir, bert_config_file,
                        vocab_file, do_lower_case, hf_architecture, label_names):
  vocab_file, do_lower_case, run_dir = _run_records(input_checkpoint, bert_config_file,
                                                    vocab_file, do_lower_case)
  label_names = label_names or files.read_labels(run_dir)
  problem = files.read_problem(run_dir)
  conversion.export_huggingface(config, source, output_dir, vocab_file, do_lower_case,
                                hf_architecture, label_names, problem,
                                _sentence_vectors(run_dir, config))


def _recorded_vectors(run_dir, config):
  """(pooling, normalize, max_seq_length) of the sentence vectors a run
  recorded as sentence-transformers' files (an embedding fine-tuning run, a
  keras-hub embedder's import), logged; None for any other run."""
  if not sentence_transformers.holds_files(run_dir):
    return None
  found, _ = sentence_transformers.read_files(run_dir)
  pooling, normalize = found["pooling"][0], found["normalize"][0]
  length = found.get("max_seq_length", (min(512, config.max_position_embeddings),))[0]
  logging.info("Sentence vectors as %s records them: %s pooling, %snormalised, texts cut to "
               "%d tokens.", run_dir, pooling, "" if normalize else "not ", length)
  return pooling, normalize, length


def _sentence_vectors(run_dir, config):
  """The files of the vectors a run recorded, written anew for the Hugging
  Face directory so that sentence-transformers loads it as a sentence
  model; {} for any other run."""
  vectors = _recorded_vectors(run_dir, config)
  return sentence_transformers.contents(config.hidden_size, *vectors) if vectors else {}


def _export_keras_hub(config, input_checkpoint, source, output_dir, bert_config_file,
                      vocab_file, do_lower_case, label_names, options):
  vocab_file, do_lower_case, run_dir = _run_records(input_checkpoint, bert_config_file,
                                                    vocab_file, do_lower_case)
  # What an imported preset had beyond our layout, kept beside the run or
  # the model; the run's own sequence length before the preset's.
  record = keras_hub.read_record([run_dir, os.path.dirname(bert_config_file),
                                  os.path.dirname(vocab_file)])
  recorded_run = run_settings.read(run_dir) or {}
  task, pooling, normalize = options["task"], options["pooling"], options["normalize"]
  vectors = _recorded_vectors(run_dir, config)
  if vectors:  # A run's vectors make an embedder of the same pooling, unless asked otherwise.
    task = task or record.get("task") or "text_embedder"
    pooling = vectors[0] if pooling is None else pooling
    normalize = vectors[1] if normalize is None else normalize
  conversion.export_keras_hub(
      config, source, output_dir, vocab_file, do_lower_case, task=task,
      label_names=label_names or files.read_labels(run_dir),
      problem=files.read_problem(run_dir), record=record,
      sequence_length=recorded_run.get("max_seq_length"), pooling=pooling,
      normalize=normalize, nearest=options["nearest"])
