"""The flags every run_*.py shares, defined once, and what they set up.

Importing this module defines the original's TPU flags (`use_tpu`,
`tpu_name`, `tpu_zone`, `gcp_project`, `master`, `num_tpu_cores`, with the
original's defaults) and our additions: the distribution strategy, GPUs,
XLA, mixed precision, gradient accumulation, the optimizer and the seed.
Each script defines its own task flags, as the original scripts did.
"""

from absl import flags
from absl import logging
import keras

from data_prep.errors import UserError
from modeling import config as config_lib
from modeling import optimization
from modeling import train_loop

FLAGS = flags.FLAGS

flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use for training.")
flags.DEFINE_string("tpu_zone", None, "GCE zone where the Cloud TPU is located in.")
flags.DEFINE_string("gcp_project", None, "Project name for the Cloud TPU-enabled project.")
flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
flags.DEFINE_integer("num_tpu_cores", 8,
                     "Only used if `use_tpu` is True. Total number of TPU cores to use.")

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


def define_training_flags():
  """The original flags every run_*.py shares, with the original's names,
  help and defaults; each script adds its own."""
  flags.DEFINE_string("bert_config_file", None,
                      "The config json file corresponding to the pre-trained BERT model. "
                      "This specifies the model architecture.")
  flags.DEFINE_string("output_dir", None,
                      "The output directory where the model checkpoints will be written.")
  flags.DEFINE_string("init_checkpoint", None,
                      "Initial checkpoint (usually from a pre-trained BERT model).")
  flags.DEFINE_bool("do_train", False, "Whether to run training.")
  flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
  flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
  flags.DEFINE_integer("save_checkpoints_steps", 1000,
                       "How often to save the model checkpoint.")
  flags.DEFINE_integer("iterations_per_loop", 1000,
                       "How many steps to make in each estimator call.")
  # Addition: the original's Estimator kept its default of 5.
  flags.DEFINE_integer("keep_checkpoint_max", 5,
                       "How many of the latest checkpoints to keep (0: all, e.g. "
                       "to fine-tune from several points of one pre-training run).",
                       lower_bound=0)


def define_tokenizer_flags():
  """The original's `vocab_file` and `do_lower_case`."""
  flags.DEFINE_string("vocab_file", None,
                      "The vocabulary file that the BERT model was trained on.")
  flags.DEFINE_bool("do_lower_case", True,
                    "Whether to lower case the input text. Should be True for uncased "
                    "models and False for cased models.")


def define_fine_tuning_flags():
  """define_training_flags, plus the original flags that run_classifier.py
  and run_squad.py also share."""
  define_training_flags()
  define_tokenizer_flags()
  flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
  flags.DEFINE_float("warmup_proportion", 0.1,
                     "Proportion of training to perform linear learning rate warmup for. "
                     "E.g., 0.1 = 10% of training.")
  # Addition.
  flags.DEFINE_string("export_dir", None,
                      "Write a SavedModel for TF Serving here (raw text in, the task's "
                      "answer out; see modeling/export.py) at the end of the run.")


def define_eval_and_predict_flags():
  """The original run_classifier.py's `do_eval`, `do_predict` and their batch
  sizes, which run_swag.py shares."""
  flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
  flags.DEFINE_bool("do_predict", False,
                    "Whether to run the model in inference mode on the test set.")
  flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
  flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")


def create_strategy():
  """The strategy the flags ask for, with the seed and precision policy set.

  Call before TensorFlow runs anything: multi-worker collectives and logical
  devices must be set up first.
  """
  train_loop.split_cpu(FLAGS.num_cpu_devices)
  strategy = train_loop.create_strategy(
      FLAGS.distribution_strategy, FLAGS.num_gpus, FLAGS.use_tpu, FLAGS.tpu_name,
      FLAGS.tpu_zone, FLAGS.gcp_project, FLAGS.master)
  logging.info("Strategy %s with %d replicas.", type(strategy).__name__,
               strategy.num_replicas_in_sync)
  keras.utils.set_random_seed(FLAGS.seed)
  if FLAGS.mixed_precision:
    keras.mixed_precision.set_global_policy(FLAGS.mixed_precision)
  return strategy


def load_config():
  """The --bert_config_file, checked against --max_seq_length."""
  config = config_lib.BertConfig.from_json_file(FLAGS.bert_config_file)
  if FLAGS.max_seq_length > config.max_position_embeddings:
    raise UserError(
        "Cannot use sequence length %d because the BERT model was only trained up "
        "to sequence length %d (--max_seq_length, %s)." %
        (FLAGS.max_seq_length, config.max_position_embeddings, FLAGS.bert_config_file))
  return config


def check_batch_size(flag_name, strategy):
  """A batch-size flag's value, which must split evenly over the replicas."""
  value = getattr(FLAGS, flag_name)
  if value % strategy.num_replicas_in_sync:
    raise UserError("--%s=%d must be divisible by the %d replicas." %
                    (flag_name, value, strategy.num_replicas_in_sync))
  return value


def create_optimizer(learning_rate, num_train_steps, num_warmup_steps):
  """The optimizer of --optimizer with the original's schedule (call under
  the strategy's scope); loss-scaled under mixed_float16."""
  optimizer = optimization.create_optimizer(
      learning_rate, num_train_steps, num_warmup_steps, optimizer=FLAGS.optimizer)
  if FLAGS.mixed_precision == "mixed_float16":
    optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
  return optimizer


def train(strategy, model, optimizer, dataset_fn, loss_fn, output_dir, num_train_steps,
          train_batch_size, init_checkpoint=None):
  """train_loop.train with the shared flags."""
  return train_loop.train(
      strategy, model, optimizer, dataset_fn, loss_fn, output_dir, num_train_steps,
      train_batch_size, save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      iterations_per_loop=FLAGS.iterations_per_loop, init_checkpoint=init_checkpoint,
      gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
      use_xla=FLAGS.use_xla, max_checkpoints=FLAGS.keep_checkpoint_max or None)
