"""embed.py's output files, one vector per input line, written whole or
not at all (plumbing/files.py):

  * `npy`: float32 [lines, dimension], numpy's .npy (np.load reads it);
  * `jsonl`: JSON Lines, {"text": the line, "embedding": [...]} a line, each
    number the shortest decimal that reads back as the same float32.

The format follows --output_file's extension (.npy; .jsonl or .json), or
--output_format.
"""

import json

import numpy as np

from plumbing import files
from plumbing.errors import UserError

FORMATS = ("npy", "jsonl")
_EXTENSIONS = {".npy": "npy", ".jsonl": "jsonl", ".json": "jsonl"}


def output_format(path, given=None):
  """`given`, else the format --output_file's extension names."""
  if given:
    return given
  for extension, kind in _EXTENSIONS.items():
    if path.lower().endswith(extension):
      return kind
  raise UserError("--output_file=%s: name it .npy or .jsonl, or give --output_format=%s."
                  % (path, "|".join(FORMATS)))


class NpyWriter(object):
  """The .npy header first (the count of lines is known: every line is
  checked before the model runs), then the rows as they come."""

  def __init__(self, path, num_lines, dimension):
    self._file = files.AtomicFile(path, "wb")
    self._expected, self._written = num_lines, 0
    np.lib.format.write_array_header_1_0(self._file.file, {
        "descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
        "fortran_order": False, "shape": (num_lines, dimension)})

  def write(self, text, vector):
    del text  # The rows are in the input's order; the array holds numbers only.
    self._file.file.write(np.ascontiguousarray(vector, np.float32).tobytes())
    self._written += 1

  def close(self):
    assert self._written == self._expected, (self._written, self._expected)
    self._file.commit()

  def abort(self):
    self._file.abort()


class JsonLinesWriter(object):
  """{"text", "embedding"} a line."""

  def __init__(self, path, num_lines, dimension):
    del num_lines, dimension  # Each line stands alone.
    self._file = files.AtomicFile(path)

  def write(self, text, vector):
    # float32's shortest decimal (numpy's str), not the float64 it widens to.
    numbers = [float(x) for x in np.asarray(vector, np.float32).astype(str)]
    self._file.file.write(json.dumps({"text": text, "embedding": numbers},
                                     ensure_ascii=False) + "\n")

  def close(self):
    self._file.commit()

  def abort(self):
    self._file.abort()


WRITERS = {"npy": NpyWriter, "jsonl": JsonLinesWriter}
