"""Output files that are whole or absent: the project's one way of writing them.

A job can die at any moment (an error, a kill, a full disk). Whatever it was
writing goes to a temporary name beside the final one, `<path>.tmp-<pid>`,
and is renamed into place only when complete; on an error the temporary file
is removed. So a reader never finds half a file under a final name, and a
re-run never mistakes one for finished work. A killed process cannot clean
up: its leftovers (their process gone) are removed by the next writer of
the same path. Paths with a scheme (gs://, hdfs://) go through tf.io.gfile,
imported only for them.
"""

import contextlib
import glob
import io
import json
import os
import shutil

from plumbing.errors import UserError


def cache_directory(*parts):
  """The project's cache of things rebuilt when absent (Unicode tables,
  compiled kernels): $BERT_TF2_CACHE_DIR, else $XDG_CACHE_HOME/bert-tf2,
  else ~/.cache/bert-tf2; `parts` name a folder inside."""
  root = os.environ.get("BERT_TF2_CACHE_DIR") or os.path.join(
      os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
      "bert-tf2")
  return os.path.join(root, *parts)


def is_remote(path):
  return "://" in path


def _gfile():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def exists(path):
  return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def makedirs(path):
  if is_remote(path):
    _gfile().makedirs(path)
  else:
    os.makedirs(path, exist_ok=True)


def is_directory(path):
  return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def file_size(path):
  return _gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def open_text(path, encoding="utf-8", newline=None):
  """A text file open for reading, as `open` opens it; a remote one is read
  whole first."""
  if is_remote(path):
    return io.StringIO(read_bytes(path).decode(encoding), newline=newline)
  return open(path, encoding=encoding, newline=newline)


def read_text(path):
  """The whole of a UTF-8 text file."""
  with open_text(path) as f:
    return f.read()


def open_binary(path):
  """A file open for reading bytes."""
  return _gfile().GFile(path, "rb") if is_remote(path) else open(path, "rb")


def read_bytes(path):
  """The whole of a file, as bytes."""
  with open_binary(path) as f:
    return f.read()


def read_json(path):
  """The value of a JSON file; a file that is not JSON is one error line
  naming it."""
  try:
    return json.loads(read_text(path))
  except ValueError as e:
    raise UserError("%s: not valid JSON (%s)." % (path, e)) from None


def glob_files(pattern):
  """The sorted paths matching a glob pattern."""
  return sorted(_gfile().glob(pattern) if is_remote(pattern) else glob.glob(pattern))


def list_directory(path):
  """The names of the entries of a directory."""
  return _gfile().listdir(path) if is_remote(path) else os.listdir(path)


def move(source, target):
  """Moves a file or directory to `target` (not there yet); remote
  directories file by file, as object stores rename objects, not folders."""
  if not is_remote(source):
    shutil.move(source, target)
    return
  gfile = _gfile()
  if not gfile.isdir(source):
    gfile.rename(source, target)
    return
  for directory, _, names in gfile.walk(source):
    inside = os.path.join(target, os.path.relpath(directory, source))
    gfile.makedirs(inside)
    for name in names:
      gfile.rename(os.path.join(directory, name), os.path.join(inside, name))
  gfile.rmtree(source)


def remove(path):
  """Removes a file if it is there."""
  if is_remote(path):
    if _gfile().exists(path):
      _gfile().remove(path)
  elif os.path.exists(path):
    os.remove(path)


def _temporary_name(path):
  """`<path>.tmp-<pid>`, after removing what killed processes left there."""
  path = path.rstrip("/")
  if not is_remote(path):
    for leftover in glob.glob(glob.escape(path) + ".tmp-*"):
      pid = leftover.rsplit("-", 1)[-1]
      if pid.isdigit() and not _process_exists(int(pid)):
        if os.path.isdir(leftover):
          remove_tree(leftover)
        else:
          remove(leftover)
  return "%s.tmp-%d" % (path, os.getpid())


def _process_exists(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


class AtomicFile(object):
  """A file written under a temporary name: `commit()` renames it to `path`,
  `abort()` removes it. `file` is the open file object."""

  def __init__(self, path, mode="w"):
    self.path = path
    self.temporary = _temporary_name(path)
    if is_remote(path):
      self.file = _gfile().GFile(self.temporary, mode)
    elif "b" in mode:
      self.file = open(self.temporary, mode)
    else:
      self.file = open(self.temporary, mode, encoding="utf-8")

  def commit(self):
    self.finish()
    self.put_in_place()

  def finish(self):
    """Closes the file; if that fails (a full disk often shows here, when
    the buffer is flushed) the temporary file is removed."""
    try:
      self.file.close()
    except BaseException:
      remove(self.temporary)
      raise

  def put_in_place(self):
    if is_remote(self.path):
      _gfile().rename(self.temporary, self.path, overwrite=True)
    else:
      os.replace(self.temporary, self.path)

  def abort(self):
    try:
      self.file.close()
    except OSError:
      pass  # The file is thrown away; the error that caused this is reported.
    remove(self.temporary)


@contextlib.contextmanager
def atomic_output(path, mode="w"):
  """`with atomic_output(path) as f:` writes `path` whole, or not at all."""
  output = AtomicFile(path, mode)
  try:
    yield output.file
  except BaseException:
    output.abort()
    raise
  output.commit()


@contextlib.contextmanager
def atomic_outputs(paths, mode="w"):
  """Several AtomicFiles, all put in place if the block succeeds and every
  file closes, all removed otherwise."""
  outputs = [AtomicFile(p, mode) for p in paths]
  try:
    yield outputs
    for output in outputs:
      output.finish()
  except BaseException:
    for output in outputs:
      output.abort()
    raise
  for output in outputs:
    output.put_in_place()


@contextlib.contextmanager
def atomic_directory(path):
  """`with atomic_directory(path) as temporary:` fill the directory
  `temporary`; when the block succeeds it replaces `path` (an existing one
  is removed first), when it raises it is removed."""
  temporary = _temporary_name(path)
  remove_tree(temporary)
  makedirs(temporary)
  try:
    yield temporary
  except BaseException:
    remove_tree(temporary)
    raise
  remove_tree(path)
  if is_remote(path):
    _gfile().rename(temporary, path)
  else:
    os.replace(temporary, path)


def remove_tree(path):
  """Removes a directory and everything in it, if it is there."""
  if is_remote(path):
    if _gfile().exists(path):
      _gfile().rmtree(path)
  elif os.path.isdir(path):
    shutil.rmtree(path)


def write_text(path, text):
  with atomic_output(path) as f:
    f.write(text)


def write_json(path, obj, indent=2):
  """`json.dumps(obj, indent=indent)` and a newline."""
  write_text(path, json.dumps(obj, indent=indent) + "\n")


# A fine-tuning run's --output_dir keeps its output layer's labels here, one
# a line in the layer's order, for later runs, exports and conversions.
LABELS_FILE = "labels.txt"


def write_labels(directory, labels):
  write_text(os.path.join(directory, LABELS_FILE), "".join("%s\n" % label for label in labels))


def read_labels(directory):
  """The labels `directory` keeps, or None."""
  path = os.path.join(directory, LABELS_FILE)
  if not exists(path):
    return None
  return [line.rstrip("\r") for line in read_text(path).split("\n") if line.strip()]


# A multi-label run's --output_dir says so here (transformers' problem_type),
# for the conversion back: its labels alone look like a classifier's.
PROBLEM_FILE = "problem_type.txt"


def write_problem(directory, problem):
  write_text(os.path.join(directory, PROBLEM_FILE), problem + "\n")


def read_problem(directory):
  """The problem type `directory` records, or None."""
  path = os.path.join(directory, PROBLEM_FILE)
  if not exists(path):
    return None
  return read_text(path).strip() or None
