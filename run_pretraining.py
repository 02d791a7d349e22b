"""Masked-LM + next-sentence pre-training of BERT, with the original's flags.

  python run_pretraining.py --input_file=train.tfrecord --output_dir=out \\
    --do_train --do_eval --bert_config_file=bert_config.json \\
    --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \\
    --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5

Runs on one device, several GPUs, several machines or a TPU
(--distribution_strategy); re-running the same command resumes from the last
checkpoint in --output_dir.
"""

import os

from absl import app
from absl import flags
from absl import logging
import keras
import tensorflow as tf

from data_prep import pretraining_dataset
from data_prep import text_io
import modeling
from modeling import optimization
from modeling import pretraining
from modeling import train_loop

FLAGS = flags.FLAGS

# The original's flags, names and defaults unchanged.
flags.DEFINE_string("bert_config_file", None,
                    "The config json file corresponding to the pre-trained BERT "
                    "model. This specifies the model architecture.")
flags.DEFINE_string("input_file", None,
                    "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_integer("max_seq_length", 128,
                     "The maximum total input sequence length after WordPiece "
                     "tokenization. Must match the data generation.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence. "
                     "Must match data generation.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 1000,
                     "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "How many steps to make in each estimator call.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use for training.")
flags.DEFINE_string("tpu_zone", None, "GCE zone where the Cloud TPU is located in.")
flags.DEFINE_string("gcp_project", None, "Project name for the Cloud TPU-enabled project.")
flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
flags.DEFINE_integer("num_tpu_cores", 8,
                     "Only used if `use_tpu` is True. Total number of TPU cores to use.")

# Additions.
flags.DEFINE_enum("distribution_strategy", None,
                  ["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                  "Default: tpu with --use_tpu, mirrored with several GPUs, "
                  "else one_device.")
flags.DEFINE_integer("num_gpus", 0, "GPUs to use (0 = all visible).")
flags.DEFINE_bool("use_xla", False, "Compile the training step with XLA.")
flags.DEFINE_enum("mixed_precision", None, ["mixed_bfloat16", "mixed_float16"],
                  "Compute in 16 bits, keep float32 weights (float16 uses "
                  "dynamic loss scaling).")
flags.DEFINE_integer("gradient_accumulation_steps", 1,
                     "Split each batch into this many micro-batches (same update, "
                     "less memory).")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "adamw is the original's.")
flags.DEFINE_integer("seed", 12345, "Seed for initialisation, dropout and input shuffling.")
flags.DEFINE_integer("num_cpu_devices", 1,
                     "Split the CPU into this many logical devices (to run "
                     "--distribution_strategy=mirrored on a CPU-only machine).")
flags.DEFINE_bool("eval_one_pass", False,
                  "Evaluate every record once instead of --max_eval_steps batches "
                  "of a repeated input.")


def main(_):
  logging.set_verbosity(logging.INFO)
  if not FLAGS.do_train and not FLAGS.do_eval:
    raise ValueError("At least one of `do_train` or `do_eval` must be True.")
  # Devices and the strategy first: multi-worker collectives must be set up
  # before TensorFlow runs anything.
  train_loop.split_cpu(FLAGS.num_cpu_devices)
  strategy = train_loop.create_strategy(
      FLAGS.distribution_strategy, FLAGS.num_gpus, FLAGS.use_tpu, FLAGS.tpu_name,
      FLAGS.tpu_zone, FLAGS.gcp_project, FLAGS.master)
  logging.info("Strategy %s with %d replicas.", type(strategy).__name__,
               strategy.num_replicas_in_sync)
  config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
  if FLAGS.max_seq_length > config.max_position_embeddings:
    raise ValueError("--max_seq_length=%d exceeds max_position_embeddings=%d of %s." % (
        FLAGS.max_seq_length, config.max_position_embeddings, FLAGS.bert_config_file))
  input_files = text_io.expand_globs(FLAGS.input_file)
  pretraining_dataset.check_record_shapes(input_files, FLAGS.max_seq_length,
                                          FLAGS.max_predictions_per_seq)
  tf.io.gfile.makedirs(FLAGS.output_dir)
  keras.utils.set_random_seed(FLAGS.seed)
  if FLAGS.mixed_precision:
    keras.mixed_precision.set_global_policy(FLAGS.mixed_precision)

  with strategy.scope():
    model = modeling.BertPretrainer(config)
    optimizer = optimization.create_optimizer(
        FLAGS.learning_rate, FLAGS.num_train_steps, FLAGS.num_warmup_steps,
        optimizer=FLAGS.optimizer)
    if FLAGS.mixed_precision == "mixed_float16":
      optimizer = keras.optimizers.LossScaleOptimizer(optimizer)

  step = 0
  if FLAGS.do_train:
    def train_dataset(per_replica_batch, input_context):
      return pretraining_dataset.pretraining_dataset(
          input_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
          per_replica_batch, is_training=True, seed=FLAGS.seed,
          input_context=input_context)
    result = train_loop.train(
        strategy, model, optimizer, train_dataset, pretraining.PretrainingLoss(),
        FLAGS.output_dir, FLAGS.num_train_steps, FLAGS.train_batch_size,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop,
        init_checkpoint=FLAGS.init_checkpoint,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        use_xla=FLAGS.use_xla)
    step = result.step
  elif FLAGS.do_eval:
    latest = tf.train.latest_checkpoint(FLAGS.output_dir)
    source = latest or FLAGS.init_checkpoint
    if not source:
      raise ValueError("--do_eval needs a checkpoint in --output_dir or --init_checkpoint.")
    modeling.load_checkpoint(model, source)
    step = train_loop.latest_checkpoint_step(FLAGS.output_dir) if latest else 0

  if FLAGS.do_eval:
    dataset = pretraining_dataset.pretraining_dataset(
        input_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
        FLAGS.eval_batch_size, is_training=False, repeat=not FLAGS.eval_one_pass)
    results = pretraining.evaluate(
        strategy, model, dataset,
        max_steps=None if FLAGS.eval_one_pass else FLAGS.max_eval_steps)
    results["global_step"] = step
    path = os.path.join(FLAGS.output_dir, "eval_results.txt")
    pretraining.write_eval_results(path, results)
    logging.info("***** Eval results *****")
    for key in sorted(results):
      logging.info("  %s = %s", key, str(results[key]))


if __name__ == "__main__":
  flags.mark_flag_as_required("bert_config_file")
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("output_dir")
  app.run(main)
