"""The steps run_classifier.py and run_swag.py share: the set-up, training for
--num_train_epochs, running the model over full batches, reporting the
eval results. They read the shared flags (modeling/run_flags.py)."""

import os

from absl import flags
from absl import logging
import tensorflow as tf

from data_prep import tokenization
from data_prep.errors import UserError
from modeling import classification
from modeling import inference
from modeling import pretraining
from modeling import run_flags

FLAGS = flags.FLAGS


def set_up():
  """The checks and objects both scripts start with; returns (strategy,
  config, tokenizer) and creates --output_dir."""
  tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
  if not FLAGS.do_train and not FLAGS.do_eval and not FLAGS.do_predict:
    raise UserError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
  strategy = run_flags.create_strategy()  # First: before TensorFlow runs anything.
  config = run_flags.load_config()
  tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)
  tf.io.gfile.makedirs(FLAGS.output_dir)
  return strategy, config, tokenizer


def train(strategy, model, loss_fn, num_examples, train_dataset):
  """Trains `model` for --num_train_epochs over `num_examples` (resuming from
  --output_dir); `train_dataset(per_replica_batch, input_context)` gives the
  shuffled, repeated batches. Returns the final global step."""
  num_train_steps = int(num_examples / FLAGS.train_batch_size * FLAGS.num_train_epochs)
  num_warmup_steps = int(num_train_steps * FLAGS.warmup_proportion)
  logging.info("***** Running training *****")
  logging.info("  Num examples = %d", num_examples)
  logging.info("  Batch size = %d", FLAGS.train_batch_size)
  logging.info("  Num steps = %d", num_train_steps)
  with strategy.scope():
    optimizer = run_flags.create_optimizer(FLAGS.learning_rate, num_train_steps,
                                           num_warmup_steps)
  result = run_flags.train(strategy, model, optimizer, train_dataset, loss_fn,
                           FLAGS.output_dir, num_train_steps, FLAGS.train_batch_size,
                           init_checkpoint=FLAGS.init_checkpoint)
  return result.step


def run_inference(strategy, model, records, num_examples, batch_flag, is_regression=False):
  """classification.run_model over `records` in full batches of the flag
  `batch_flag`'s size (the last one padded, as the original did on TPUs)."""
  batch_size = run_flags.check_batch_size(batch_flag, strategy)
  padding = -num_examples % batch_size
  logging.info("  Num examples = %d (%d actual, %d padding)", num_examples + padding,
               num_examples, padding)
  logging.info("  Batch size = %d", batch_size)
  dataset = inference.padded_batches(records, num_examples, batch_size)
  return classification.run_model(strategy, model, dataset, is_regression)


def report_eval_results(results, step):
  """Writes eval_results.txt in --output_dir and logs it, as the original."""
  results["global_step"] = step
  pretraining.write_eval_results(os.path.join(FLAGS.output_dir, "eval_results.txt"), results)
  logging.info("***** Eval results *****")
  for key in sorted(results):
    logging.info("  %s = %s", key, str(results[key]))
