"""Writes BERT's per-token vectors (chosen encoder layers) for lines of text.

  python extract_features.py --input_file=input.txt --output_file=output.jsonl \\
    --vocab_file=$BERT_BASE_DIR/vocab.txt \\
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \\
    --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

One text per input line, or a pair as `A ||| B`. The output is the
original's JSON lines (see tasks/feature_extraction.py); additions:
--output_format=npz|tfrecord for the float32 numbers, and
--pooling=cls|mean|max for one vector per line and layer (embed.py makes
sentence vectors). The input is read twice (first to check every line),
streamed through the model, and written under a temporary name.
"""

from absl import flags
from absl import logging
from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)

from data_prep import tokenization
import modeling
from modeling import inference
from modeling.checkpoints import loading
from plumbing import cli
from plumbing import progress as progress_lib
from plumbing.errors import UserError
import run_flags
from tasks import feature_extraction

FLAGS = flags.FLAGS

# The original's flags, names and defaults unchanged (the TPU ones come from
# run_flags.py, the tokenizer's from plumbing/cli.py).
cli.define_tokenizer_flags()
run_flags.define_weights_flag()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("input_file", None, "One text, or a pair `A ||| B`, per line.")
flags.DEFINE_string("output_file", None, "Where to write the vectors (see --output_format).")
flags.DEFINE_string("layers", "-1,-2,-3,-4",
                    "Comma-separated encoder layers to output; -1 is the last.")
run_flags.define_model_flags()
cli.define_max_seq_length()
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "Accepted for compatibility; the lookup gives the same vectors "
                  "either way.")

# Additions.
flags.DEFINE_enum("output_format", "json", list(feature_extraction.OUTPUT_FORMATS),
                  "json: the original's JSON lines; npz or tfrecord: the float32 "
                  "numbers themselves (4 bytes each, exact).")
flags.DEFINE_enum("pooling", "none", list(feature_extraction.POOLINGS),
                  "One vector per line and layer: the [CLS] token's (cls), or the "
                  "mean (mean) or the largest value of each component (max) over the "
                  "line's tokens, [CLS] and [SEP] included.")


def layer_indexes(config):
  try:
    indexes = [int(x) for x in FLAGS.layers.split(",")]
  except ValueError:
    raise UserError("--layers=%s should be comma-separated integers, e.g. -1,-2." %
                    FLAGS.layers) from None
  layers = config.num_hidden_layers
  for index in indexes:
    if not -layers <= index < layers:
      raise UserError("--layers: the model has %d layers (%s), so %d is not one of "
                      "them (0..%d or -1..-%d)." % (layers, FLAGS.bert_config_file, index,
                                                    layers - 1, layers))
  return indexes


def main(_):
  logging.set_verbosity(logging.INFO)
  strategy = run_flags.create_strategy(FLAGS)  # First: before TensorFlow runs anything.
  config = run_flags.load_config(FLAGS)
  indexes = layer_indexes(config)
  run_flags.check_batch_size(FLAGS, "batch_size", strategy)
  do_lower_case = run_flags.resolve_casing(FLAGS)
  tokenization.validate_case_matches_checkpoint(do_lower_case, FLAGS.init_checkpoint)
  tokenizer = run_flags.load_tokenizer(FLAGS, config, do_lower_case)
  num_lines = feature_extraction.check_input(FLAGS.input_file)
  with strategy.scope(), modeling.deferred_initialization() as deferred:
    model = modeling.BertModel(config)
  loading.load_weights(model, FLAGS.init_checkpoint, deferred, FLAGS.weights)

  pooled = FLAGS.pooling != "none"

  def replica(features):
    return inference.layer_vectors(model, features, indexes, FLAGS.pooling)

  writer = feature_extraction.WRITERS[FLAGS.output_format](
      FLAGS.output_file, indexes, FLAGS.pooling)
  progress = progress_lib.Progress("lines", num_lines, verb="Extracted")
  try:
    for feature, row in feature_extraction.vectors_by_line(
        strategy, replica, FLAGS.input_file, num_lines, tokenizer, FLAGS.max_seq_length,
        FLAGS.batch_size, run_flags.trim_to_multiple(FLAGS)):
      writer.write(feature, row if pooled else row[:, :len(feature.tokens)])
      progress.advance(1)
  except BaseException:
    writer.abort()
    raise
  writer.close()
  progress.finish()
  logging.info("Wrote %s (%s, %d lines).", FLAGS.output_file, FLAGS.output_format,
               progress.done)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("input_file", "vocab_file", "bert_config_file", "init_checkpoint",
               "output_file"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
