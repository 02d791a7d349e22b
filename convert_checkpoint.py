"""Converts a BERT checkpoint between the original's format, ours, Hugging
Face's and keras-hub's.

  python convert_checkpoint.py --input_checkpoint=FILE_OR_DIR \\
    --output_checkpoint=PATH --output_format=original|keras|huggingface|keras_hub \\
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
from modeling.checkpoints import keras_hub
from plumbing import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("bert_config_file", None,
                    "The model's bert_config.json (not needed for a Hugging Face directory, "
                    "whose config.json gives it).")
flags.DEFINE_string("input_checkpoint", None,
                    "Checkpoint prefix, a directory of checkpoints, a Hugging Face model "
                    "directory or a keras-hub preset directory.")
flags.DEFINE_string("output_checkpoint", None,
                    "Prefix to write (original, keras), or the directory (huggingface, "
                    "keras_hub).")
flags.DEFINE_enum("output_format", "keras", ["original", "keras", "huggingface", "keras_hub"],
                  "original: name-based, as released; keras: ours, object-based; "
                  "huggingface: a directory for transformers' from_pretrained; keras_hub: a "
                  "preset directory for keras-hub's from_preset.")
flags.DEFINE_string("vocab_file", None,
                    "With --output_format=huggingface or keras_hub: the model's vocabulary "
                    "(default: vocab.txt beside --bert_config_file).")
flags.DEFINE_bool("do_lower_case", True,
                  "With --output_format=huggingface or keras_hub: whether the model's "
                  "tokenizer lower-cases. Default: what the fine-tuning run's directory or the "
                  "vocabulary's directory records (tokenizer_config.json), else True.")
flags.DEFINE_enum("hf_architecture", None, sorted(huggingface.ARCHITECTURES),
                  "With --output_format=huggingface: the transformers class to write "
                  "(default: the one the checkpoint's heads make; BertForMultipleChoice "
                  "for a run_swag.py model).")
flags.DEFINE_list("label_names", None,
                  "With --output_format=huggingface or keras_hub: the classifier's label "
                  "names, in order (config.json's id2label; a preset's labels.txt). Default: "
                  "the labels.txt of the fine-tuning run's directory, else LABEL_0, ...")
flags.DEFINE_string("weights", None, best.WEIGHTS_HELP)
flags.DEFINE_enum("keras_hub_task", None, sorted(keras_hub.TASKS),
                  "With --output_format=keras_hub: the preset's task (default: the one the "
                  "checkpoint's heads make: text_classifier, masked_lm, else backbone, or "
                  "the task of the preset the model came from). backbone or text_embedder "
                  "writes the encoder alone.")
flags.DEFINE_enum("keras_hub_pooling", None, list(keras_hub.POOLING_MODES),
                  "With --keras_hub_task=text_embedder: how the embedder pools the last "
                  "layer (default: the imported preset's, else mean).")
flags.DEFINE_bool("keras_hub_normalize", None,
                  "With --keras_hub_task=text_embedder: whether it L2-normalises the "
                  "embedding (default: the imported preset's, else true).")
flags.DEFINE_bool("keras_hub_nearest", False,
                  "Convert to or from keras-hub a model it cannot compute as ours does (the "
                  "exact GELU, the masked-LM head) as the nearest model, logging the largest "
                  "difference of their outputs. Without it such a conversion stops.")


def main(_):
  logging.set_verbosity(logging.INFO)
  py_logging.getLogger().setLevel(py_logging.INFO)
  given_casing = not FLAGS["do_lower_case"].using_default_value
  convert.convert_checkpoint(
      FLAGS.input_checkpoint, FLAGS.output_checkpoint, FLAGS.output_format,
      bert_config_file=FLAGS.bert_config_file, vocab_file=FLAGS.vocab_file,
      do_lower_case=FLAGS.do_lower_case if given_casing else None,
      hf_architecture=FLAGS.hf_architecture, label_names=FLAGS.label_names,
      weights=FLAGS.weights, keras_hub_options=dict(
          task=FLAGS.keras_hub_task, pooling=FLAGS.keras_hub_pooling,
          normalize=FLAGS.keras_hub_normalize, nearest=FLAGS.keras_hub_nearest))


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flags_as_required(["input_checkpoint", "output_checkpoint"])
  cli.run(main)


if __name__ == "__main__":
  cli_main()
