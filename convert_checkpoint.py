"""Converts a BERT checkpoint between the original's format, ours and
Hugging Face's.

  python convert_checkpoint.py --input_checkpoint=FILE_OR_DIR \\
    --output_checkpoint=PATH --output_format=original|keras|huggingface \\
    [--bert_config_file=bert_config.json]

Installed as bert-convert-checkpoint. What it reads and writes:
modeling/checkpoints/convert.py.
"""

import logging as py_logging

from absl import flags
from absl import logging
from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)

from modeling.checkpoints import best
from modeling.checkpoints import convert
from modeling.checkpoints import huggingface
from plumbing import cli

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
flags.DEFINE_string("weights", None, best.WEIGHTS_HELP)


def main(_):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  given_casing = not FLAGS["do_lower_case"].using_default_value
  convert.convert_checkpoint(
      FLAGS.input_checkpoint, FLAGS.output_checkpoint, FLAGS.output_format,
      bert_config_file=FLAGS.bert_config_file, vocab_file=FLAGS.vocab_file,
      do_lower_case=FLAGS.do_lower_case if given_casing else None,
      hf_architecture=FLAGS.hf_architecture, label_names=FLAGS.label_names,
      weights=FLAGS.weights)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flags_as_required(["input_checkpoint", "output_checkpoint"])
  cli.run(main)


if __name__ == "__main__":
  cli_main()
