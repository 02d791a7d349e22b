"""The flags the run_*.py scripts share, defined once, and the plain values
and objects they become.

Importing this module defines the original's TPU flags (`use_tpu`,
`tpu_name`, `tpu_zone`, `gcp_project`, `master`, `num_tpu_cores`, with the
original's defaults) and our additions: the distribution strategy, GPUs,
XLA and its cache, mixed precision, gradient accumulation, the optimizer and
the seed.
Each script defines its own task flags, as the original scripts did. The
functions below take the parsed flags (`FLAGS`) as their first argument and
hand the library plain values: a strategy, a config, a tokenizer,
`modeling.training.TrainingSettings`.
"""

import json
import os

from absl import flags
from absl import logging
import keras

from data_prep import casing
from data_prep import tokenization
from modeling import config as config_lib
from modeling.checkpoints import best as best_weights
from modeling import pooling as pooling_lib
from modeling import training
from modeling import strategy as strategy_lib
from plumbing.errors import UserError
from plumbing import cli
from plumbing import files
from plumbing.run_directory import settings as run_settings
from tasks import driver
from tasks.classification import user_files
from tasks.sentence_embedding import settings as sentence_settings

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
flags.DEFINE_float("weight_decay_rate", 0.01,
                   "Decoupled weight decay (LayerNorm and bias variables excepted); "
                   "0.01 is the original's, 0 Hugging Face Trainer's default.",
                   lower_bound=0.0)
flags.DEFINE_bool("adam_bias_correction", False,
                  "adamw: divide Adam's moments by 1 - beta^t as PyTorch's AdamW and "
                  "Hugging Face's Trainer do (the original does not: its first updates "
                  "are about 3x larger). See docs/fine_tuning.md.")
flags.DEFINE_float("adam_epsilon", 1e-6,
                   "Adam's epsilon: 1e-6 is the original's, 1e-8 PyTorch's and Hugging "
                   "Face Trainer's default.", lower_bound=0.0)
flags.DEFINE_bool("decay_after_warmup", False,
                  "Start the linear decay at --learning_rate when warm-up ends, as Hugging "
                  "Face's linear schedule does. The original's decay counts from step 0, "
                  "so its rate after warm-up starts lower by the warm-up's share "
                  "(--warmup_proportion).")
flags.DEFINE_bool("clip_dense_norm", False,
                  "Clip gradients by the global norm of the summed gradients, as "
                  "PyTorch's clip_grad_norm_ (Hugging Face's Trainer). The original "
                  "counts a word-embedding gradient by its lookups: a token looked up "
                  "k times adds k squared slices, not the square of their sum.")
flags.DEFINE_enum("head_initializer", "truncated_normal", ["truncated_normal", "normal"],
                  "Fine-tuning: how the new output layer's weights are drawn (sd "
                  "initializer_range of bert_config.json). truncated_normal is the "
                  "original's: cut at two sd, so its values spread 0.88 times as wide; "
                  "normal is Hugging Face's.")
flags.DEFINE_integer("seed", 12345, "Seed for initialisation, dropout and input shuffling.")
flags.DEFINE_integer("num_cpu_devices", 1,
                     "Split the CPU into this many logical devices (to run "
                     "--distribution_strategy=mirrored on a CPU-only machine).")
flags.DEFINE_bool("pad_to_max_seq_length", None,
                  "Run every batch at --max_seq_length, as the original. Otherwise "
                  "each batch runs at the length of its longest real row, rounded up "
                  "to --padding_multiple (the same results: padding is masked out), "
                  "and evaluation and prediction batch examples of similar length "
                  "(shorter rows, more of them: up to the token positions of a batch "
                  "at --max_seq_length). "
                  "Default: True on TPUs (--use_tpu or --distribution_strategy=tpu; "
                  "they want static shapes) and in run_squad.py (its span head scores "
                  "padding positions too, as the original's), else False.")
flags.DEFINE_integer("train_shuffle_buffer", 100,
                     "Fine-tuning: shuffle the training records in a buffer of this many "
                     "(100, the original's: on a file in a meaningful order, such as CoNLL's "
                     "documents or CoLA's sources, batches then come from a few neighbouring "
                     "stretches); 0: a new order of the whole file each epoch, as Hugging "
                     "Face's Trainer shuffles.", lower_bound=0)
flags.DEFINE_bool("group_by_length", False,
                  "Fine-tuning: make each training batch from examples of about the same "
                  "length (as Hugging Face's group_by_length), so that batches carry "
                  "little padding. Faster on data of mixed lengths, but it changes "
                  "which examples share a batch (not the original's batches).")
flags.DEFINE_string("xla_cache_dir", None,
                    "Keep the XLA kernels training compiles (one per batch shape: the "
                    "fused kernels, and the whole step with --use_xla) in this directory, "
                    "so that later runs load them instead of compiling again; a folder "
                    "per TensorFlow version, CPU and GPUs. Default: the xla folder of "
                    "$BERT_TF2_CACHE_DIR or ~/.cache/bert-tf2. Empty: no cache.")
flags.DEFINE_integer("padding_multiple", 8,
                     "Round each batch's length up to a multiple of this: at most "
                     "max_seq_length / padding_multiple distinct shapes (with --use_xla "
                     "each compiles once).", lower_bound=1)


def define_model_flags(init_checkpoint_help="Initial checkpoint (usually from a pre-trained "
                                             "BERT model).", module_name=None):
  """The original's `bert_config_file` and `init_checkpoint`: the model a
  command builds and the weights it starts from."""
  module_name = module_name or cli.calling_script()
  flags.DEFINE_string("bert_config_file", None,
                      "The config json file corresponding to the pre-trained BERT model. "
                      "This specifies the model architecture.", module_name=module_name)
  flags.DEFINE_string("init_checkpoint", None, init_checkpoint_help, module_name=module_name)


def define_best_weights_flags(metric):
  """--eval_every_steps and --early_stopping_patience of a fine-tuning
  script whose dev results rank weights by `metric` (its words)."""
  module_name = cli.calling_script()
  flags.DEFINE_integer("eval_every_steps", 0,
                       "With --do_train and --do_eval: evaluate on the dev set every this "
                       "many steps and at the end, keep the weights that score best by %s "
                       "(in <output_dir>/best/), and evaluate, predict and export with "
                       "those. 0: off." % metric,
                       module_name=module_name)
  flags.DEFINE_integer("early_stopping_patience", 0,
                       "With --eval_every_steps: stop training after this many evaluations "
                       "in a row that do not improve %s. 0: never stop early." % metric,
                       module_name=module_name)


def define_export_flags(export_help, request_limits=True, module_name=None):
  """--export_dir (`export_help`: what the script's export answers),
  --export_precision and, with `request_limits`, the export's limits on a
  request."""
  module_name = module_name or cli.calling_script()
  flags.DEFINE_string("export_dir", None, export_help, module_name=module_name)
  flags.DEFINE_enum("export_precision", "float32", ["float32", "bfloat16"],
                    "bfloat16: the export stores the encoder's weights in bfloat16 and "
                    "multiplies in bfloat16 (layer norms, softmax and embeddings stay "
                    "float32): half the weight bytes, faster on CPUs with bfloat16 "
                    "arithmetic (AVX512-BF16, AMX), slower on others.",
                    module_name=module_name)
  if request_limits:
    flags.DEFINE_integer("serving_max_batch_size", 1024,
                         "The export answers at most this many examples per request; a "
                         "larger one gets an error, not the server's memory.", lower_bound=1,
                         module_name=module_name)
    flags.DEFINE_integer("serving_max_text_bytes", 100_000,
                         "The export refuses a text longer than this (UTF-8 bytes) with an "
                         "error; longer than --max_seq_length tokens is truncated anyway.",
                         lower_bound=1, module_name=module_name)


def define_training_flags():
  """The original flags every run_*.py shares, with the original's names,
  help and defaults; each script adds its own."""
  define_model_flags(module_name=__name__)
  flags.DEFINE_string("output_dir", None,
                      "The output directory where the model checkpoints will be written.")
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
  define_weights_flag()
  flags.DEFINE_bool("start_over", False,
                    "With --do_train: move the run already in --output_dir (checkpoints, "
                    "results, records) into <output_dir>/previous_runs/<date-time>/ and "
                    "train afresh. Without it, training resumes from the checkpoints "
                    "there, and stops in one line if its settings differ from those the "
                    "run recorded (run_settings.json).")


def define_weights_flag():
  """--weights: which of a training run's checkpoints a command reads."""
  flags.DEFINE_string("weights", None, best_weights.WEIGHTS_HELP)


def define_fine_tuning_flags():
  """define_training_flags, plus the original flags that run_classifier.py
  and run_squad.py also share."""
  define_training_flags()
  cli.define_tokenizer_flags(run_directory=True, module_name=__name__)
  flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
  flags.DEFINE_float("warmup_proportion", 0.1,
                     "Proportion of training to perform linear learning rate warmup for. "
                     "E.g., 0.1 = 10% of training.")
  # Addition.
  define_export_flags("Write a SavedModel for TF Serving here (raw text in, the task's "
                      "answer out; see serving/) at the end of the run.", module_name=__name__)


def define_eval_flags():
  """The original run_classifier.py's `do_eval` and its batch size."""
  flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
  flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")


def define_eval_and_predict_flags():
  """The original run_classifier.py's `do_eval`, `do_predict` and their batch
  sizes, which run_swag.py shares."""
  define_eval_flags()
  flags.DEFINE_bool("do_predict", False,
                    "Whether to run the model in inference mode on the test set.")
  flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")


def define_sentence_vector_flags():
  """How a text's vector is made of the model's last layer, and where the
  defaults come from: a sentence-transformers model's files (embed.py, and
  fine-tuning sentence vectors)."""
  flags.DEFINE_string("sentence_transformers_dir", None,
                      "The model's sentence-transformers files (modules.json, "
                      "1_Pooling/config.json, sentence_bert_config.json): its Hugging Face "
                      "directory. Default: --vocab_file's directory, when it holds them.")
  flags.DEFINE_enum("pooling", None, list(pooling_lib.POOLINGS),
                    "The vector of a text: the mean of its tokens' last-layer vectors, "
                    "[CLS] and [SEP] included (mean), the [CLS] vector (cls), or the "
                    "largest value of each component (max). Default: the "
                    "sentence-transformers files', else mean.")
  flags.DEFINE_bool("normalize", None,
                    "Divide each vector by its length (L2). Default: true when the "
                    "sentence-transformers files have a Normalize module, else false.")
  cli.define_max_seq_length(None, "[CLS] text [SEP] is cut to this many WordPieces. Default: "
                            "the sentence-transformers files' max_seq_length, else 128.",
                            lower_bound=2)


def sentence_vector_settings(flag_values):
  """The flags of define_sentence_vector_flags, with the casing, decided once
  from the flags, else the sentence-transformers files, else our defaults
  (tasks/sentence_embedding/settings.Settings)."""
  f = flag_values
  directory = sentence_settings.find_directory(f.sentence_transformers_dir, f.vocab_file)
  return sentence_settings.resolve(
      directory, f.vocab_file, pooling=f.pooling, normalize=f.normalize,
      max_seq_length=f.max_seq_length, do_lower_case=f.do_lower_case,
      casing_given=not f["do_lower_case"].using_default_value)


def define_user_file_flags():
  """The flags naming the user's own files and their columns (a
  classification task's, or a multi-label one's)."""
  flags.DEFINE_string("train_file", None,
                      "Instead of --task_name and --data_dir: your training file, .csv, "
                      ".tsv or .jsonl (JSON Lines); its labels are the task's (sorted, as "
                      "numbers where all are integers), kept in <output_dir>/labels.txt.")
  flags.DEFINE_string("dev_file", None, "With --train_file: the file --do_eval scores.")
  flags.DEFINE_string("test_file", None,
                      "With --train_file: the file --do_predict predicts (labels, if any, "
                      "are not used).")
  flags.DEFINE_string("text_a_column", None,
                      "Your files' text column: a header name, or a 0-based index for files "
                      "without a header. Default: sentence1 and sentence2 (a pair) or text "
                      "or sentence if the header has them, else its only column besides "
                      "the label.")
  flags.DEFINE_string("text_b_column", None,
                      "Your files' second text column, for sentence pairs.")
  flags.DEFINE_string("label_column", None,
                      "Your files' label column: a header name (default: label) or a 0-based "
                      "index.")
  flags.DEFINE_list("label_names", None,
                    "With --train_file: the labels in the order of the classifier's outputs "
                    "(default: the training file's, sorted).")


def user_files_processor(flag_values, regression=False, separator=None):
  """The processor of the user's files that the flags name (with `separator`,
  a multi-label task's)."""
  f = flag_values
  paths = {"train": f.train_file, "dev": f.dev_file, "test": f.test_file}
  columns = user_files.Columns.from_flags(f.text_a_column, f.text_b_column, f.label_column)
  labels = user_files.labels_for(paths, columns, f.label_names, f.output_dir, regression,
                                 separator)
  return user_files.UserFilesProcessor(paths, columns, labels, regression, separator)


# The flags of every training script that decide what a run computes
# (plumbing/run_directory/settings.py); each script adds its own. Hardware and
# bookkeeping flags (strategy, devices, XLA, checkpoint frequency and count,
# eval and predict batch sizes, precision) are not settings: a run may resume
# on other machines.
TRAINING_SETTINGS = (
    "bert_config_file", "init_checkpoint", "vocab_file", "do_lower_case", "max_seq_length",
    "train_batch_size", "learning_rate", "num_train_epochs", "num_train_steps",
    "warmup_proportion", "num_warmup_steps", "optimizer", "weight_decay_rate",
    "adam_bias_correction", "adam_epsilon", "decay_after_warmup", "clip_dense_norm",
    "head_initializer", "seed", "train_shuffle_buffer", "group_by_length")
# Settings recorded as files (path and size) or paths, and those a run may
# raise to go on.
_FILE_SETTINGS = ("bert_config_file", "vocab_file", "input_file", "data_dir", "train_file")
_PATH_SETTINGS = ("init_checkpoint",)
_GROWING_SETTINGS = ("num_train_epochs", "num_train_steps")


def check_run_settings(flag_values, names, decided=None):
  """With --do_train, before any work: the settings the flags `names` give
  (TRAINING_SETTINGS plus the script's own; those the script does not
  define are left out), and `decided` ({name: value} the script decided
  from them and the model's files, in place of those flags' values),
  against those of a run already in --output_dir, which --start_over moves
  aside. Returns them, for training to record (None without --do_train, and
  on the workers of a cluster other than its chief, which leave this to
  it). The casing recorded is the one the run will tokenize with
  (resolve_casing)."""
  f = flag_values
  if not f.do_train or not _is_chief_worker():
    return None
  if "do_lower_case" in f:
    decided = dict({"do_lower_case": resolve_casing(f, f.output_dir)}, **(decided or {}))
  settings = {}
  for name in names:
    if name in f:
      value = f[name].value
      if name in _FILE_SETTINGS:
        value = run_settings.file_setting(value)
      elif name in _PATH_SETTINGS:
        value = run_settings.path_setting(value)
      settings[name] = value
  settings.update(decided or {})
  run_settings.check(f.output_dir, settings, growing=_GROWING_SETTINGS,
                     start_over=f.start_over)
  return settings


def _is_chief_worker():
  """False for the workers of a TF_CONFIG cluster other than its chief (the
  "chief" task, else worker 0), which write no run files of their own."""
  config = json.loads(os.environ.get("TF_CONFIG") or "{}")
  task = config.get("task") or {}
  if not task:
    return True
  if "chief" in (config.get("cluster") or {}):
    return task.get("type") == "chief"
  return task.get("type") == "worker" and int(task.get("index", 0)) == 0


def create_strategy(flag_values):
  """The strategy the flags ask for, with the seed and precision policy set.

  Call before TensorFlow runs anything: multi-worker collectives and logical
  devices must be set up first.
  """
  strategy_lib.split_cpu(flag_values.num_cpu_devices)
  strategy = strategy_lib.create_strategy(
      flag_values.distribution_strategy, flag_values.num_gpus, flag_values.use_tpu,
      flag_values.tpu_name, flag_values.tpu_zone, flag_values.gcp_project,
      flag_values.master)
  logging.info("Strategy %s with %d replicas.", type(strategy).__name__,
               strategy.num_replicas_in_sync)
  keras.utils.set_random_seed(flag_values.seed)
  # Set either way: an earlier run in this process may have left another.
  keras.mixed_precision.set_global_policy(flag_values.mixed_precision or "float32")
  return strategy


def load_config(flag_values, max_seq_length=None):
  """The --bert_config_file, checked against --max_seq_length (or the
  `max_seq_length` a command decided otherwise)."""
  config = config_lib.BertConfig.from_json_file(flag_values.bert_config_file)
  length = flag_values.max_seq_length if max_seq_length is None else max_seq_length
  if length > config.max_position_embeddings:
    raise UserError(
        "Cannot use sequence length %d because the BERT model was only trained up "
        "to sequence length %d (--max_seq_length=%d, %s)." %
        (length, config.max_position_embeddings, length, flag_values.bert_config_file))
  return config


def request_limits(flag_values):
  """The export's limits on a request (--serving_max_batch_size, --serving_max_text_bytes)."""
  from serving import export  # pylint: disable=g-import-not-at-top  (tensorflow-text)
  return export.RequestLimits(flag_values.serving_max_batch_size,
                              flag_values.serving_max_text_bytes)


def resolve_casing(flag_values, output_dir=None):
  """The casing to tokenize with: --do_lower_case when given, else the
  casing recorded beside --vocab_file (a converted Hugging Face model), else
  in `output_dir` (what an earlier fine-tuning run there tokenized with),
  with a line saying which; one error line when a given flag contradicts
  the model's record. Without a record (the released checkpoints), the
  original's default. The flags keep their values."""
  flag = flag_values["do_lower_case"]
  vocab_file = flag_values.vocab_file
  return casing.resolve(flag.value, not flag.using_default_value,
                        [vocab_file and os.path.dirname(vocab_file) or "."], output_dir)


def load_tokenizer(flag_values, config, do_lower_case):
  """The --vocab_file's FullTokenizer of the casing decided
  (resolve_casing), checked against the config: a vocabulary with more
  entries than `vocab_size` gives ids the model has no embedding for."""
  tokenizer = tokenization.FullTokenizer(flag_values.vocab_file, do_lower_case)
  entries = max(tokenizer.vocab.values(), default=-1) + 1
  if entries > config.vocab_size:
    raise UserError(
        "%s has %d entries, more than the vocab_size %d of %s: its last %d tokens would "
        "have no embedding. Use the vocabulary that came with the checkpoint (or the "
        "config that matches this vocabulary)." %
        (flag_values.vocab_file, entries, config.vocab_size, flag_values.bert_config_file,
         entries - config.vocab_size))
  return tokenizer


def trim_to_multiple(flag_values, pad_by_default=False):
  """None to run at --max_seq_length, else the multiple each batch's length
  is rounded up to (see --pad_to_max_seq_length)."""
  pad = flag_values.pad_to_max_seq_length
  if pad is None:
    pad = pad_by_default or on_tpu(flag_values)
  return None if pad else flag_values.padding_multiple


def on_tpu(flag_values):
  """Whether the run is on TPUs (which want static shapes)."""
  return flag_values.use_tpu or flag_values.distribution_strategy == "tpu"


def check_batch_size(flag_values, flag_name, strategy):
  """A batch-size flag's value, which must split evenly over the replicas."""
  return driver.batch_size_of(strategy, getattr(flag_values, flag_name), flag_name)


def check_classifier_actions(flag_values):
  """The original run_classifier.py's check of the do_* flags; --export_dir
  alone is a run too (exporting a model trained before)."""
  f = flag_values
  if not (f.do_train or f.do_eval or f.do_predict or f.export_dir):
    raise UserError("At least one of `do_train`, `do_eval` or `do_predict' must be True "
                    "(or --export_dir given, to export the model in --output_dir or "
                    "--init_checkpoint).")


def set_up_fine_tuning(flag_values, check_flags=check_classifier_actions, max_seq_length=None,
                       recorded=None):
  """What the fine-tuning scripts start with, in the original's order: the
  checks (the casing against a released checkpoint's name, then the
  script's own `check_flags`), then (strategy, config, tokenizer), with
  --output_dir created. `max_seq_length`: the length the script decided,
  if not --max_seq_length; `recorded`: check_run_settings' result, whose
  casing is already decided."""
  do_lower_case = (recorded["do_lower_case"] if recorded and "do_lower_case" in recorded
                   else resolve_casing(flag_values, flag_values.output_dir))
  tokenization.validate_case_matches_checkpoint(do_lower_case, flag_values.init_checkpoint)
  check_flags(flag_values)
  strategy = create_strategy(flag_values)  # First: before TensorFlow runs anything.
  config = load_config(flag_values, max_seq_length)
  tokenizer = load_tokenizer(flag_values, config, do_lower_case)
  files.makedirs(flag_values.output_dir)
  casing.write(flag_values.output_dir, do_lower_case)
  return strategy, config, tokenizer


def training_settings(flag_values, num_train_steps, num_warmup_steps, recorded=None):
  """The training flags as TrainingSettings, for `num_train_steps` with
  `num_warmup_steps` of warm-up; `recorded`: check_run_settings' result."""
  return training.TrainingSettings(
      recorded_settings=recorded,
      output_dir=flag_values.output_dir, num_train_steps=num_train_steps,
      num_warmup_steps=num_warmup_steps, train_batch_size=flag_values.train_batch_size,
      learning_rate=flag_values.learning_rate, init_checkpoint=flag_values.init_checkpoint,
      optimizer=flag_values.optimizer, mixed_precision=flag_values.mixed_precision,
      save_checkpoints_steps=flag_values.save_checkpoints_steps,
      iterations_per_loop=flag_values.iterations_per_loop,
      keep_checkpoint_max=flag_values.keep_checkpoint_max,
      gradient_accumulation_steps=flag_values.gradient_accumulation_steps,
      use_xla=flag_values.use_xla, weight_decay_rate=flag_values.weight_decay_rate,
      adam_bias_correction=flag_values.adam_bias_correction,
      adam_epsilon=flag_values.adam_epsilon, decay_after_warmup=flag_values.decay_after_warmup,
      clip_dense_norm=flag_values.clip_dense_norm)


def _value(flag_values, name, default):
  """A flag's value, or `default` where the script does not define it."""
  return flag_values[name].value if name in flag_values else default


def driver_settings(flag_values, pad_by_default=False, recorded=None):
  """The fine-tuning flags as the driver's Settings (tasks/driver.py);
  `recorded`: check_run_settings' result."""
  f = flag_values
  return driver.Settings(
      output_dir=f.output_dir, training=training_settings(f, 0, 0, recorded),
      do_train=f.do_train,
      do_eval=_value(f, "do_eval", False), do_predict=_value(f, "do_predict", False),
      export_dir=f.export_dir,
      init_checkpoint=f.init_checkpoint, num_train_epochs=f.num_train_epochs,
      warmup_proportion=f.warmup_proportion, seed=f.seed,
      eval_batch_size=_value(f, "eval_batch_size", 8),
      predict_batch_size=_value(f, "predict_batch_size", 8),
      trim_to_multiple=trim_to_multiple(f, pad_by_default), group_by_length=f.group_by_length,
      train_shuffle_buffer=f.train_shuffle_buffer,
      eval_every_steps=_value(f, "eval_every_steps", 0),
      early_stopping_patience=_value(f, "early_stopping_patience", 0),
      head_initializer=f.head_initializer, weights=f.weights)


def export_settings(flag_values, tokenizer):
  """What every export takes from the flags (driver.Export), tokenizing as
  `tokenizer` (set_up_fine_tuning's) does."""
  return driver.Export(flag_values.vocab_file, tokenizer.do_lower_case,
                       flag_values.export_precision,
                       request_limits(flag_values) if flag_values.export_dir else None)
