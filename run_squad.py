"""Fine-tunes BERT on SQuAD 1.1 / 2.0 and predicts answers, as the original.

  python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \\
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \\
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train \\
    --train_file=train-v1.1.json --do_predict --predict_file=dev-v1.1.json \\
    --train_batch_size=12 --learning_rate=3e-5 --num_train_epochs=2.0 \\
    --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

Writes what the original writes (train.tf_record, eval.tf_record,
predictions.json, nbest_predictions.json, and null_odds.json with
--version_2_with_negative), plus `squad_eval.json` with SQuAD's official
metric when the predict file has answers, and with --export_dir a SavedModel
that answers (question, context) strings under TF Serving. Re-running the same command
resumes training from the last checkpoint in --output_dir.
"""

import os
import random

from absl import flags
from absl import logging

from plumbing import startup  # noqa: F401  (first: loads TensorFlow, see its docstring)
import modeling
from modeling import inference
from modeling import losses
from modeling import training
from plumbing import cli
from plumbing.errors import UserError
from plumbing import tf_example
import run_flags
from tasks.squad import evaluate
from tasks.squad import examples as squad_examples
from tasks.squad import features as squad_features
from tasks.squad import predictions
# The original's public names, where its users look for them.
from tasks.squad.examples import read_squad_examples  # noqa: F401
from tasks.squad.examples import SquadExample  # noqa: F401
from tasks.squad.features import convert_examples_to_features  # noqa: F401
from tasks.squad.features import FeatureWriter  # noqa: F401
from tasks.squad.features import InputFeatures  # noqa: F401
from tasks.squad.predictions import get_final_text  # noqa: F401
from tasks.squad.predictions import RawResult  # noqa: F401
from tasks.squad.predictions import write_predictions  # noqa: F401

FLAGS = flags.FLAGS

# The original's flags, names and defaults unchanged: those shared with the
# other scripts (and the TPU flags) are defined in run_flags.py.
run_flags.define_fine_tuning_flags()
flags.adopt_module_key_flags(run_flags)
flags.DEFINE_string("train_file", None,
                    "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None,
                    "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_integer("max_seq_length", 384,
                     "The maximum total input sequence length after WordPiece "
                     "tokenization. Sequences longer than this will be truncated, and "
                     "sequences shorter than this will be padded.")
flags.DEFINE_integer("doc_stride", 128,
                     "When splitting up a long document into chunks, how much stride to "
                     "take between chunks.")
flags.DEFINE_integer("max_query_length", 64,
                     "The maximum number of tokens for the question. Questions longer "
                     "than this will be truncated to this length.")
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_integer("n_best_size", 20,
                     "The total number of n-best predictions to generate in the "
                     "nbest_predictions.json output file.")
flags.DEFINE_integer("max_answer_length", 30,
                     "The maximum length of an answer that can be generated. This is "
                     "needed because the start and end predictions are not conditioned "
                     "on one another.")
flags.DEFINE_bool("verbose_logging", False,
                  "If true, all of the warnings related to data processing will be "
                  "printed. A number of warnings are expected for a normal SQuAD "
                  "evaluation.")
flags.DEFINE_bool("version_2_with_negative", False,
                  "If true, the SQuAD examples contain some that do not have an answer.")
flags.DEFINE_float("null_score_diff_threshold", 0.0,
                   "If null_score - best_non_null is greater than the threshold predict "
                   "null.")


def validate_flags(flag_values):
  """The original's checks of the flags (its case check comes first, in
  run_flags.set_up_fine_tuning)."""
  f = flag_values
  if not f.do_train and not f.do_predict and not f.export_dir:
    raise UserError("At least one of `do_train` or `do_predict` must be True "
                    "(or --export_dir given).")
  if f.do_train and not f.train_file:
    raise UserError("If `do_train` is True, then `train_file` must be specified.")
  if f.do_predict and not f.predict_file:
    raise UserError("If `do_predict` is True, then `predict_file` must be specified.")
  if f.max_seq_length <= f.max_query_length + 3:
    raise UserError("The max_seq_length (%d) must be greater than max_query_length "
                    "(%d) + 3" % (f.max_seq_length, f.max_query_length))


def _trim_to_multiple():
  """Fixed length unless --pad_to_max_seq_length=false: the original's span
  head scores padding positions too (they are in the training loss's softmax
  and can take places in the n-best lists), so dropping them changes results."""
  return run_flags.trim_to_multiple(FLAGS, pad_by_default=True)


def _convert(examples, tokenizer, is_training, output_fn):
  squad_features.convert_examples_to_features(
      examples=examples, tokenizer=tokenizer, max_seq_length=FLAGS.max_seq_length,
      doc_stride=FLAGS.doc_stride, max_query_length=FLAGS.max_query_length,
      is_training=is_training, output_fn=output_fn)


def train(strategy, model, tokenizer, deferred=None):
  examples = squad_examples.read_squad_examples(
      FLAGS.train_file, is_training=True,
      version_2_with_negative=FLAGS.version_2_with_negative)
  if not examples:
    raise UserError("%s has no usable training examples." % FLAGS.train_file)
  random.Random(12345).shuffle(examples)  # The original's pre-shuffle.
  path = os.path.join(FLAGS.output_dir, "train.tf_record")
  with squad_features.FeatureWriter(path, is_training=True) as writer:
    _convert(examples, tokenizer, True, writer.process_feature)
  counts = [("Num orig examples", len(examples)), ("Num split examples", writer.num_features)]
  settings = run_flags.fine_tuning_settings(FLAGS, len(examples))
  del examples

  def dataset_fn(per_replica_batch, input_context):
    records = squad_features.read_features(path, FLAGS.max_seq_length, is_training=True,
                                           seed=FLAGS.seed, input_context=input_context)
    return tf_example.batched(records, per_replica_batch, drop_remainder=True,
                              trim_to_multiple=_trim_to_multiple())
  return training.train(strategy, model, losses.SpanLoss(), dataset_fn, settings,
                        counts=counts, deferred=deferred)


def predict(strategy, model, tokenizer):
  examples = squad_examples.read_squad_examples(
      FLAGS.predict_file, is_training=False,
      version_2_with_negative=FLAGS.version_2_with_negative)
  path = os.path.join(FLAGS.output_dir, "eval.tf_record")
  features = []
  with squad_features.FeatureWriter(path, is_training=False) as writer:
    def keep(feature):
      features.append(feature)
      writer.process_feature(feature)
    _convert(examples, tokenizer, False, keep)
  logging.info("***** Running predictions *****")
  logging.info("  Num orig examples = %d", len(examples))
  logging.info("  Num split examples = %d", len(features))
  records = squad_features.read_features(path, FLAGS.max_seq_length, is_training=False)
  results = predictions.raw_results(*inference.span_logits(
      strategy, model, records, len(features),
      run_flags.check_batch_size(FLAGS, "predict_batch_size", strategy),
      FLAGS.max_seq_length, _trim_to_multiple()))
  paths = [os.path.join(FLAGS.output_dir, name) for name in (
      "predictions.json", "nbest_predictions.json", "null_odds.json")]
  answers, _, null_odds = predictions.write_predictions(
      examples, features, results, FLAGS.n_best_size, FLAGS.max_answer_length,
      FLAGS.do_lower_case, *paths, version_2_with_negative=FLAGS.version_2_with_negative,
      null_score_diff_threshold=FLAGS.null_score_diff_threshold,
      verbose_logging=FLAGS.verbose_logging)
  evaluate.write_scores(FLAGS.predict_file, answers,
                        null_odds if FLAGS.version_2_with_negative else None,
                        os.path.join(FLAGS.output_dir, "squad_eval.json"),
                        FLAGS.version_2_with_negative)


def main(_):
  logging.set_verbosity(logging.INFO)
  strategy, config, tokenizer = run_flags.set_up_fine_tuning(FLAGS, validate_flags)
  with strategy.scope(), modeling.deferred_initialization() as deferred:
    model = modeling.BertSpanPredictor(config)
  if FLAGS.do_train:
    train(strategy, model, tokenizer, deferred)
  else:
    training.load_for_inference(model, FLAGS.output_dir, FLAGS.init_checkpoint, deferred)
  if FLAGS.do_predict:
    predict(strategy, model, tokenizer)
  if FLAGS.export_dir:
    from serving import squad  # pylint: disable=g-import-not-at-top  (tensorflow-text)
    squad.export_span_predictor(
        model, FLAGS.export_dir, FLAGS.vocab_file, FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length, n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length,
        version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold,
        precision=FLAGS.export_precision, limits=run_flags.request_limits(FLAGS))
    logging.info("Exported a SavedModel to %s", FLAGS.export_dir)


def cli_main():
  """The command line (also the installed command's entry point)."""
  flags.mark_flag_as_required("vocab_file")
  flags.mark_flag_as_required("bert_config_file")
  flags.mark_flag_as_required("output_dir")
  cli.run(main)


if __name__ == "__main__":
  cli_main()
