"""Fills in the [MASK]s of texts with a checkpoint's masked-LM head: each
mask's most likely tokens and their probabilities.

  python fill_mask.py --input_file=texts.txt --output_file=filled.jsonl \\
    --vocab_file=$BERT_BASE_DIR/vocab.txt \\
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --top_k=5

One text per input line, with one or more [MASK]. Every released checkpoint
(and any pre-trained with run_pretraining.py, or converted from a Hugging
Face BertForMaskedLM or BertForPreTraining) has the head. The arithmetic is
the original run_pretraining.py's get_masked_lm_output. Writes JSON lines
(tasks/fill_mask.py); --export_dir also writes a SavedModel that does the
same on raw text (serving/fill_mask.py).
"""

from absl import flags
from absl import logging
from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
import tensorflow as tf

from data_prep import tokenization
import modeling
from modeling import bert_model
from modeling import checkpoints
from modeling import heads
from modeling.checkpoints import loading
from plumbing import cli
from plumbing.errors import UserError
import run_flags
from tasks import fill_mask

FLAGS = flags.FLAGS

cli.define_tokenizer_flags()
run_flags.define_weights_flag()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("input_file", None, "One text with [MASK]s per line.")
flags.DEFINE_string("output_file", None, "Where to write the JSON lines.")
run_flags.define_model_flags("A checkpoint with the masked-LM head (cls/predictions/...).")
cli.define_max_seq_length(help_text=(
    "[CLS] text [SEP] is cut to this many WordPieces; masks past it are "
    "left out."))
flags.DEFINE_integer("top_k", 5, "How many tokens to give for each mask.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Texts per batch.")
run_flags.define_export_flags("Also write a SavedModel for TF Serving here: raw text in, "
                              "each mask's top tokens out.")


def _check_head(checkpoint):
  names = checkpoints.reader(checkpoints.resolve(checkpoint)).get_variable_to_shape_map()
  if "masked_lm" not in heads.in_checkpoint(names):
    raise UserError("%s has no masked-LM head (cls/predictions/...): fill-mask needs a "
                    "pre-trained checkpoint, not a fine-tuned one." % checkpoint)


def main(_):
  logging.set_verbosity(logging.INFO)
  strategy = run_flags.create_strategy(FLAGS)  # First: before TensorFlow runs anything.
  config = run_flags.load_config(FLAGS)
  batch_size = run_flags.check_batch_size(FLAGS, "batch_size", strategy)
  do_lower_case = run_flags.resolve_casing(FLAGS)
  tokenization.validate_case_matches_checkpoint(do_lower_case, FLAGS.init_checkpoint)
  tokenizer = run_flags.load_tokenizer(FLAGS, config, do_lower_case)
  features = fill_mask.features_of(fill_mask.read_texts(FLAGS.input_file), tokenizer,
                                   FLAGS.max_seq_length, FLAGS.input_file)
  _check_head(FLAGS.init_checkpoint)
  with strategy.scope(), modeling.deferred_initialization() as deferred:
    model = bert_model.BertWithHeads(bert_model.BertModel(config), [heads.MaskedLMHead(config)])
  loading.load_weights(model, FLAGS.init_checkpoint, deferred, FLAGS.weights)
  records = tf.data.Dataset.from_tensor_slices(fill_mask.padded(features, FLAGS.max_seq_length))
  ids, probabilities = fill_mask.masked_lm_top_k(
      strategy, model, records, len(features), batch_size, FLAGS.top_k,
      trim_to_multiple=run_flags.trim_to_multiple(FLAGS))
  fill_mask.write_results(FLAGS.output_file, features, ids, probabilities, tokenizer.inv_vocab)
  logging.info("Wrote %s (%d lines).", FLAGS.output_file, len(features))
  if FLAGS.export_dir:
    from serving import fill_mask as serving_fill_mask  # pylint: disable=g-import-not-at-top
    serving_fill_mask.export_fill_mask(model, FLAGS.export_dir, FLAGS.vocab_file,
                                       do_lower_case, FLAGS.max_seq_length, FLAGS.top_k,
                                       precision=FLAGS.export_precision,
                                       limits=run_flags.request_limits(FLAGS))
    logging.info("Exported a SavedModel to %s", FLAGS.export_dir)


def cli_main():
  """The command line (also the installed command's entry point)."""
  for name in ("input_file", "output_file", "vocab_file", "bert_config_file",
               "init_checkpoint"):
    flags.mark_flag_as_required(name)
  cli.run(main)


if __name__ == "__main__":
  cli_main()
