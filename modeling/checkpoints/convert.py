"""Converts a BERT checkpoint between the original's format, ours and
Hugging Face's.

  bert-convert-checkpoint --input_checkpoint=FILE_OR_DIR \\
    --output_checkpoint=PATH --output_format=original|keras|huggingface \\
    [--bert_config_file=bert_config.json]

The input may be a checkpoint of either TensorFlow kind (a directory means
its latest checkpoint; --bert_config_file gives its config) or a Hugging
Face model directory (config.json, model.safetensors, vocab.txt: its
config and vocabulary come with it). Every head the input holds (masked
LM, next sentence, classifier, SQuAD span, tagger) is carried over.

Written: original or keras: a checkpoint at the prefix PATH, and from a
Hugging Face directory also the released layout's bert_config.json and
vocab.txt beside it, with the tokenizer's casing (tokenizer_config.json,
which the scripts follow); huggingface: the directory PATH, which transformers'
from_pretrained loads (--vocab_file and --do_lower_case give its
tokenizer; by default, the casing and labels the fine-tuning run recorded).
"""

import logging as py_logging
import os
import sys

if __package__ in (None, ""):  # Run as a file path: make the repo importable.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__)))))

from absl import flags
from absl import logging

from data_prep import casing
from modeling import checkpoints
from modeling.checkpoints import conversion
from modeling.checkpoints import huggingface
from modeling.config import BertConfig
from plumbing import cli
from plumbing import files
from plumbing.errors import UserError

FLAGS = flags.FLAGS
flags.DEFINE_string("bert_config_file", None,
                    "The model's bert_config.json (not needed for a Hugging Face directory, "
                    "whose config.json gives it).")
flags.DEFINE_string("input_checkpoint", None,
                    "Checkpoint prefix, a directory of checkpoints, or a Hugging Face model "
                    "directory.")
flags.DEFINE_string("output_checkpoint", None,
                    "Prefix to write (original, keras), or the directory (huggingface).")
flags.DEFINE_enum("output_format", "keras", ["original", "keras", "huggingface"],
                  "original: name-based, as released; keras: ours, object-based; "
                  "huggingface: a directory for transformers' from_pretrained.")
flags.DEFINE_string("vocab_file", None,
                    "With --output_format=huggingface: the model's vocabulary (default: "
                    "vocab.txt beside --bert_config_file).")
flags.DEFINE_bool("do_lower_case", True,
                  "With --output_format=huggingface: whether the model's tokenizer "
                  "lower-cases. Default: what the fine-tuning run's directory or the "
                  "vocabulary's directory records (tokenizer_config.json), else True.")
flags.DEFINE_enum("hf_architecture", None, sorted(huggingface.ARCHITECTURES),
                  "With --output_format=huggingface: the transformers class to write "
                  "(default: the one the checkpoint's heads make; BertForMultipleChoice "
                  "for a run_swag.py model).")
flags.DEFINE_list("label_names", None,
                  "With --output_format=huggingface: the classifier's label names, in "
                  "order (config.json's id2label). Default: the labels.txt of the "
                  "fine-tuning run's directory, else LABEL_0, LABEL_1, ...")


def _config(required_for):
  if not FLAGS.bert_config_file:
    raise UserError("--bert_config_file is required %s." % required_for)
  return BertConfig.from_json_file(FLAGS.bert_config_file)


def main(_):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  source = FLAGS.input_checkpoint
  if huggingface.is_huggingface_directory(source):
    if FLAGS.output_format == "huggingface":
      raise UserError("--input_checkpoint=%s is a Hugging Face directory already." % source)
    conversion.import_huggingface(source, FLAGS.output_checkpoint, FLAGS.output_format)
    return
  try:
    checkpoints.resolve(source)
  except FileNotFoundError as e:
    raise UserError("%s Nor is it a Hugging Face model directory (config.json)." % e) from None
  config = _config("for a TensorFlow checkpoint (a Hugging Face directory holds "
                   "config.json)")
  if FLAGS.output_format == "huggingface":
    vocab_file = FLAGS.vocab_file or os.path.join(
        os.path.dirname(FLAGS.bert_config_file), "vocab.txt")
    if not os.path.exists(vocab_file):
      raise UserError("%s does not exist: give the model's vocabulary with --vocab_file." %
                      vocab_file)
    # A fine-tuning run's --output_dir records the casing it tokenized with
    # and its labels; the vocabulary's directory, the model's casing.
    run_dir = source if os.path.isdir(source) else os.path.dirname(source)
    do_lower_case = casing.resolve(
        FLAGS.do_lower_case, not FLAGS["do_lower_case"].using_default_value,
        [run_dir or ".", os.path.dirname(vocab_file) or "."])
    label_names = FLAGS.label_names or files.read_labels(run_dir or ".")
    conversion.export_huggingface(config, source, FLAGS.output_checkpoint, vocab_file,
                                  do_lower_case, FLAGS.hf_architecture, label_names)
    return
  written = conversion.convert(config, source, FLAGS.output_checkpoint, FLAGS.output_format)
  logging.info("Wrote %s (%s format).", written, FLAGS.output_format)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flags_as_required(["input_checkpoint", "output_checkpoint"])
  cli.run(main)


if __name__ == "__main__":
  cli_main()
