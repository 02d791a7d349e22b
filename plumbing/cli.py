"""Command-line entry points: a user's mistake is one line, not a traceback.

Every script of the project starts through `cli.run(main)`. Errors that
describe bad input (a missing file, a malformed line, a flag out of range, a
checkpoint that does not fit the config) are printed as one line naming what
is wrong and what to do, and the process exits with status 1. Anything else
is a bug and keeps its traceback; `--traceback` shows it for user errors too.
A run stopped by SIGTERM after saving its state says so in one line and exits
with status 143.
"""

import errno
import gc
import re
import signal
import sys

from absl import app
from absl import flags

from plumbing.errors import Stopped
from plumbing.errors import UserError
from plumbing import xla_cache

# The original scripts' words for --max_seq_length.
MAX_SEQ_LENGTH_HELP = ("The maximum total input sequence length after WordPiece tokenization. "
                       "Sequences longer than this will be truncated, and sequences shorter "
                       "than this will be padded.")


def calling_script(depth=1):
  """The module `depth` calls above the caller, named as absl files flags
  (the script's path for __main__): a flag a shared definer makes belongs to
  the script that asked for it, and its --help lists it."""
  name = sys._getframe(depth + 1).f_globals["__name__"]  # pylint: disable=protected-access
  return sys.argv[0] if name == "__main__" else name


def define_tokenizer_flags(run_directory=False, module_name=None):
  """The original's `vocab_file` and `do_lower_case`, whose default is the
  casing recorded beside the vocabulary (and, for a command with a run
  directory, in --output_dir): data_prep/casing.py."""
  module_name = module_name or calling_script()
  flags.DEFINE_string("vocab_file", None,
                      "The vocabulary file that the BERT model was trained on.",
                      module_name=module_name)
  flags.DEFINE_bool("do_lower_case", True,
                    "Whether to lower case the input text. Should be True for uncased "
                    "models and False for cased models. Default: the casing recorded "
                    "beside --vocab_file%s (tokenizer_config.json, written by the "
                    "checkpoint converter%s), else True." % (
                        " or in --output_dir" if run_directory else "",
                        " and by fine-tuning" if run_directory else ""),
                    module_name=module_name)


def define_max_seq_length(default=128, help_text=MAX_SEQ_LENGTH_HELP, **bounds):
  """--max_seq_length, which every command that packs WordPieces into
  sequences defines here; each keeps its own default (run_squad.py's is the
  original's 384) and says what the length means for it."""
  flags.DEFINE_integer("max_seq_length", default, help_text, module_name=calling_script(),
                       **bounds)


flags.DEFINE_bool("traceback", False,
                  "Show the Python traceback of input errors too (for debugging).")

EXIT_USER_ERROR = 1
# A run stopped by SIGTERM reports what a process ended by it does (128 + 15),
# so that schedulers see it did not finish; its state is saved.
EXIT_STOPPED = 128 + signal.SIGTERM


def _user_error_types():
  """The exception types that mean bad input rather than a bug."""
  types = [UserError, FileNotFoundError, IsADirectoryError, PermissionError,
           UnicodeDecodeError]
  tf = sys.modules.get("tensorflow")
  if tf is not None:  # Only if the script uses TensorFlow anyway.
    types += [tf.errors.NotFoundError, tf.errors.PermissionDeniedError,
              tf.errors.DataLossError]
  return tuple(types)


def _out_of_space(error):
  """Whether `error` is a write that failed for lack of disk space or quota
  (Python's OSError, or TensorFlow's error carrying the same message)."""
  if isinstance(error, OSError):
    return error.errno in (errno.ENOSPC, errno.EDQUOT)
  tf = sys.modules.get("tensorflow")
  return (tf is not None and isinstance(error, tf.errors.OpError) and
          ("No space left on device" in str(error) or "Disk quota exceeded" in str(error)))


def _one_line(error):
  tf = sys.modules.get("tensorflow")
  if tf is not None and isinstance(error, tf.errors.DataLossError):
    # TensorFlow names an offset in a dataset; say which file and record.
    from plumbing import tfrecord  # pylint: disable=g-import-not-at-top
    described = tfrecord.describe_damage()
    if described:
      return described
  text = str(error).strip() or type(error).__name__
  # TensorFlow's messages can carry a trailing op trace; the first paragraph
  # says what went wrong.
  return " ".join(text.split("\n\n")[0].split())


def parse_known_flags(argv):
  """A flags parser for `run` that leaves the flags it does not know in the
  arguments given to main (e.g. Apache Beam's pipeline options)."""
  try:
    return flags.FLAGS(argv, known_only=True)
  except flags.Error as error:
    sys.stderr.write("%s: error: %s\n" % (argv[0].rsplit("/", 1)[-1], error))
    sys.exit(EXIT_USER_ERROR)


def _parse_then_set_up_xla_cache(parser):
  """`parser`, then the cache of compiled XLA kernels (--xla_cache_dir, when
  the script has it: plumbing/xla_cache.py). Here because absl's `app.run`
  starts TensorFlow's devices right after parsing the flags (an init callback
  of TensorFlow's), and XLA reads its options then, before `main`."""
  def parse(argv):
    result = parser(argv)
    if "xla_cache_dir" in flags.FLAGS:
      directory = flags.FLAGS.xla_cache_dir
      xla_cache.enable(xla_cache.default_directory() if directory is None else directory)
    return result
  return parse


def run(main, flags_parser=None, argv=None):
  """absl's app.run(main), with input errors reported as one line. `argv`
  defaults to sys.argv (tests pass their own, to run cases in one process)."""
  argv = list(sys.argv if argv is None else argv)

  def guarded_main(args):
    if "plumbing.tfrecord" in sys.modules:  # A new run in this process (tests).
      sys.modules["plumbing.tfrecord"].forget_reads()
    try:
      result = main(args)
      # The work is done and written: spare the exit the garbage collector's
      # last pass over every object TensorFlow made (objects are still
      # released, files closed, as usual).
      gc.freeze()
      return result
    except _user_error_types() as error:
      if flags.FLAGS.traceback:
        raise
      program = argv[0].rsplit("/", 1)[-1]
      sys.stderr.write("%s: error: %s\n" % (program, _one_line(error)))
      sys.stderr.flush()
      sys.exit(EXIT_USER_ERROR)
    except Stopped as stopped:
      program = argv[0].rsplit("/", 1)[-1]
      sys.stderr.write("%s: stopped: %s\n" % (program, stopped))
      sys.stderr.flush()
      sys.exit(EXIT_STOPPED)
    except Exception as error:  # pylint: disable=broad-except
      if not _out_of_space(error) or flags.FLAGS.traceback:
        raise
      program = argv[0].rsplit("/", 1)[-1]
      where = getattr(error, "filename", None)
      if where:  # The final name of a file written under a temporary one.
        where = re.sub(r"\.tmp-\d+$", "", str(where))
      sys.stderr.write("%s: error: out of disk space%s (%s). Free some space, or write to "
                       "another directory; output files are written whole or not at all, "
                       "and checkpoints already saved are intact.\n" % (
                           program, " writing %s" % where if where else "",
                           _one_line(error)))
      sys.stderr.flush()
      sys.exit(EXIT_USER_ERROR)
  app.run(guarded_main, argv=argv, flags_parser=_parse_then_set_up_xla_cache(
      flags_parser or app.parse_flags_with_usage))
