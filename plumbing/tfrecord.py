"""Writing TFRecord files without importing TensorFlow.

Importing TensorFlow costs several times the resident memory the data
generator needs, so local files are framed here: each record is
uint64 length, uint32 masked CRC32C of the length, the data, uint32 masked
CRC32C of the data (all little-endian), exactly what tf.io.TFRecordWriter
writes. The checksums come from google-crc32c's C code: per record, faster
than a compiled loop over the bytes, with nothing to load or compile first.
Files are written atomically (plumbing.files); paths with a scheme (gs://,
hdfs://) go through tf.io.gfile.
"""

import contextlib

import google_crc32c
import numpy as np

from plumbing import files


def masked_crc32c(data):
  """The masked CRC32C a TFRecord frame stores for `data` (bytes)."""
  crc = google_crc32c.value(data)
  return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def framed(data, offsets):
  """Records data[offsets[j]:offsets[j + 1]] (data: uint8 array) as the bytes
  of a TFRecord file holding them."""
  first = int(offsets[0])
  raw = data[first:int(offsets[-1])].tobytes()
  bounds = (np.asarray(offsets, np.int64) - first).tolist()
  parts = []
  for lo, hi in zip(bounds[:-1], bounds[1:]):
    length = (hi - lo).to_bytes(8, "little")
    record = raw[lo:hi]
    parts += (length, masked_crc32c(length).to_bytes(4, "little"), record,
              masked_crc32c(record).to_bytes(4, "little"))
  return b"".join(parts)


def count_records(f):
  """Records in an open TFRecord file, from the length prefixes of their
  frames (8-byte length, 4-byte CRC, data, 4-byte CRC), without reading the
  data."""
  count = 0
  while True:
    header = f.read(12)
    if not header:
      return count
    f.seek(int.from_bytes(header[:8], "little") + 4, 1)
    count += 1


class RecordWriter(object):
  """Writes framed records into an open binary file."""

  def __init__(self, file):
    self.file = file

  def write_batch(self, data, offsets):
    """Writes records data[offsets[j]:offsets[j + 1]] (data: uint8 array)."""
    self.file.write(framed(data, offsets))

  def write_records(self, records):
    """Writes a list of serialised records (bytes)."""
    if not records:
      return
    lengths = np.fromiter((len(r) for r in records), np.int64, len(records))
    offsets = np.zeros(len(records) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    self.write_batch(np.frombuffer(b"".join(records), np.uint8), offsets)


class RecordFileWriter(RecordWriter):
  """A RecordWriter of one file written atomically (files.AtomicFile):
  `commit()` puts it in place, `abort()` removes it."""

  def __init__(self, path):
    self.path = path
    self._output = files.AtomicFile(path, "wb")
    super().__init__(self._output.file)

  def commit(self):
    self._output.commit()

  def abort(self):
    self._output.abort()


@contextlib.contextmanager
def atomic_writers(paths):
  """RecordWriters for `paths`, all put in place if the block succeeds, all
  removed if it raises: no partial file is ever left under a final name."""
  with files.atomic_outputs(paths, "wb") as outputs:
    yield [RecordWriter(output.file) for output in outputs]


# Record files the readers of this process opened, so that TensorFlow's
# "corrupted record at <offset>" can be turned into a file and a record number.
_files_read = []


def note_read(paths):
  """Called by the record readers with the files they are about to read."""
  for path in paths:
    path = path.decode() if isinstance(path, bytes) else str(path)
    if path not in _files_read:
      _files_read.append(path)


def forget_reads():
  del _files_read[:]


def records_in(path):
  """The number of records in the TFRecord file at `path`."""
  with files.open_binary(path) as f:
    return count_records(f)


def first_damage(path):
  """(1-based number of the first record that cannot be read, what is wrong
  with it), or None when every frame's length, both CRCs and the file's end
  are as a TFRecord writer leaves them."""
  with files.open_binary(path) as f:
    number = 0
    while True:
      header = f.read(12)
      if not header:
        return None
      number += 1
      if len(header) < 12:
        return number, "the file ends inside its length field (truncated)"
      if masked_crc32c(header[:8]) != int.from_bytes(header[8:], "little"):
        return number, "its length field fails its checksum (damaged)"
      length = int.from_bytes(header[:8], "little")
      body = f.read(length + 4)
      if len(body) < length + 4:
        return number, "the file ends inside it (truncated)"
      if masked_crc32c(body[:length]) != int.from_bytes(body[length:], "little"):
        return number, "its data fails its checksum (damaged)"


def describe_damage():
  """One line naming the first damaged record among the files read, or None."""
  for path in _files_read:
    found = first_damage(path)
    if found:
      number, what = found
      return ("%s: record %d cannot be read: %s; the %d before it are intact. The file "
              "was cut short or changed after it was written (an interrupted copy or "
              "write?): copy or generate it again." % (path, number, what, number - 1))
  return None
