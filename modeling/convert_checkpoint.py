"""Converts a checkpoint between the original (name-based) format and ours.

  python -m modeling.convert_checkpoint --bert_config_file=bert_config.json \\
    --input_checkpoint=FILE_OR_DIR --output_checkpoint=PATH \\
    --output_format=original|keras

The input may be either kind (a directory means its latest checkpoint); the
heads it holds (masked LM, next sentence, classifier, SQuAD span) are found
from its variable names and carried over.
"""

import logging as py_logging
import os
import sys

if __package__ in (None, ""):  # Run as a file path: make the repo importable.
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags
from absl import logging
import tensorflow as tf

from modeling import bert_model
from modeling import checkpoints
from modeling.config import BertConfig
from plumbing import cli
from plumbing.errors import UserError

FLAGS = flags.FLAGS
flags.DEFINE_string("bert_config_file", None, "The model's bert_config.json.")
flags.DEFINE_string("input_checkpoint", None, "Checkpoint prefix or directory.")
flags.DEFINE_string("output_checkpoint", None, "Prefix to write.")
flags.DEFINE_enum("output_format", "keras", ["original", "keras"],
                  "original: name-based, as released; keras: ours, object-based.")


def convert(config, input_checkpoint, output_checkpoint, output_format):
  prefix = checkpoints.resolve(input_checkpoint)
  shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  found = bert_model.heads_in_checkpoint(shapes)
  logging.info("Heads found in %s: %s", prefix, found)
  model = bert_model.BertWithHeads(config, **found)
  report = checkpoints.load_checkpoint(model, prefix)
  if isinstance(report, checkpoints.LoadReport) and report.missing:
    raise UserError("Checkpoint %s lacks %s." % (prefix, ", ".join(report.missing)))
  if output_format == "original":
    return checkpoints.save_original_checkpoint(model, output_checkpoint)
  return checkpoints.save_checkpoint(model, output_checkpoint)


def main(_):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  config = BertConfig.from_json_file(FLAGS.bert_config_file)
  written = convert(config, FLAGS.input_checkpoint, FLAGS.output_checkpoint,
                    FLAGS.output_format)
  logging.info("Wrote %s (%s format).", written, FLAGS.output_format)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flags_as_required(["bert_config_file", "input_checkpoint",
                                "output_checkpoint"])
  cli.run(main)


if __name__ == "__main__":
  cli_main()
