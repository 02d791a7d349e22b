"""Reading raw text exactly as the original scripts saw it.

The original read corpora and vocabularies with TensorFlow's `GFile.readline()`
in text mode. That splits on b"\\n" only (not on the other Unicode line breaks
Python's `str.splitlines` knows), silently drops every b"\\r", and decodes each
line as strict UTF-8. We read the same way, so that Windows line endings, stray
carriage returns and U+2028 behave identically, and we turn a decoding failure
into an error that names the file and line.
"""

import errno
import glob as _glob
import os
import stat

from plumbing.errors import UserError
from plumbing import files

_CHUNK_BYTES = 1 << 24


class InvalidUtf8Error(UserError):
  """A line of an input file is not valid UTF-8."""


class ChangedWhileReadError(UserError):
  """An input file changed, vanished or failed while being read."""


def expand_globs(patterns):
  """Expands comma-separated glob patterns in the order the original saw them.

  The original used TensorFlow's glob, which lists matches in directory
  (readdir) order, not sorted; so does Python's glob, which we use for local
  paths to avoid importing TensorFlow. Remote paths use TensorFlow's glob.
  A pattern that matches nothing is an error rather than a silent no-op.
  """
  paths = []
  for pattern in patterns.split(","):
    if not pattern:
      continue
    if files.is_remote(pattern):
      import tensorflow as tf
      matches = tf.io.gfile.glob(pattern)
    else:
      matches = _glob.glob(pattern)
    if not matches:
      raise FileNotFoundError("No file matches input pattern %r." % pattern)
    paths.extend(matches)
  return paths


def iter_raw_lines(path):
  """Yields (line_number, bytes) per b"\\n"-terminated line, "\\r" removed.

  A file that cannot be read to its end as it was when opened (deleted,
  unreadable, or cut short or grown by another process while read) is an
  error naming it: a corpus that changes under a job makes data no re-run
  could reproduce."""
  line_number = 0
  try:
    with files.open_binary(path) as f:
      expected = _regular_file_size(f)
      read = 0
      pending = b""
      while True:
        chunk = f.read(_CHUNK_BYTES)
        if not chunk:
          break
        read += len(chunk)
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()
        for part in parts:
          line_number += 1
          yield line_number, part.replace(b"\r", b"")
      if pending:
        yield line_number + 1, pending.replace(b"\r", b"")
      if expected is not None and read != expected:
        raise ChangedWhileReadError(
            "%s changed while it was read (%d bytes when opened, %d read). Let "
            "whatever writes it finish, then run the same command again." %
            (path, expected, read))
  except (FileNotFoundError, PermissionError, IsADirectoryError):
    raise
  except OSError as error:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
      raise
    raise ChangedWhileReadError(
        "%s cannot be read after line %d (%s). If it was moved or is on a disk "
        "that went away, restore it and run the same command again." %
        (path, line_number, error.strerror or error)) from None


def _regular_file_size(f):
  """The size of a local regular file when opened (None for pipes, remote files)."""
  try:
    status = os.fstat(f.fileno())
  except (AttributeError, OSError, ValueError):
    return None
  return status.st_size if stat.S_ISREG(status.st_mode) else None


def iter_text_lines(path, errors="strict"):
  """Yields (line_number, str) for each line; see the module docstring.

  errors="strict" raises InvalidUtf8Error naming the file and line (the
  original stopped with a bare UnicodeDecodeError); errors="ignore" drops the
  undecodable bytes, which is what the original's `convert_to_unicode` does
  with byte strings.
  """
  for line_number, raw in iter_raw_lines(path):
    try:
      yield line_number, raw.decode("utf-8", errors)
    except UnicodeDecodeError as e:
      raise InvalidUtf8Error(
          "%s:%d: invalid UTF-8 at byte %d of the line (%s). Fix the file, or "
          "pass --on_invalid_utf8=ignore to drop undecodable bytes." %
          (path, line_number, e.start, e.reason)) from None
