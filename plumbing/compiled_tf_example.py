"""The record encoder of plumbing/tf_example.py, compiled by numba: about
twice the speed of its NumPy form per record, for large files (pre-training
data, big task files). Loading it (numba and its cached machine code) takes
about half a second, so ExampleSpec uses it only past `compile_after_rows`.
"""

import numba
import numpy as np

_INT = 0


@numba.njit(cache=True)
def _varint_size(value):
  size = 1
  while value >= 128:
    value >>= np.uint64(7)
    size += 1
  return size


@numba.njit(cache=True)
def _put_varint(buf, pos, value):
  while value >= 128:
    buf[pos] = (value & np.uint64(127)) | np.uint64(128)
    value >>= np.uint64(7)
    pos += 1
  buf[pos] = value
  return pos + 1


@numba.njit(cache=True)
def _feature_size(kinds, starts, lengths, ints, floats, row, f):
  """(payload bytes, list message bytes, Feature message bytes) of feature f."""
  if kinds[f] == _INT:
    payload = 0
    for k in range(starts[f], starts[f] + lengths[f]):
      payload += _varint_size(np.uint64(ints[row, k]))
  else:
    payload = 4 * lengths[f]
  values = 1 + _varint_size(np.uint64(payload)) + payload if payload else 0
  return payload, values, 1 + _varint_size(np.uint64(values)) + values


@numba.njit(cache=True)
def _entry_size(key_length, feature):
  return (1 + _varint_size(np.uint64(key_length)) + key_length + 1 +
          _varint_size(np.uint64(feature)) + feature)


@numba.njit(cache=True)
def encode(kinds, starts, lengths, keys, key_offsets, ints, floats, buf, offsets):
  """Serialises every row of ints/floats into buf; record j is
  buf[offsets[j]:offsets[j + 1]]. Returns the bytes written."""
  num_features = len(kinds)
  pos = 0
  for row in range(ints.shape[0]):
    # Example.features' length comes first, so size the entries before writing.
    body = 0
    for f in range(num_features):
      feature = _feature_size(kinds, starts, lengths, ints, floats, row, f)[2]
      entry = _entry_size(key_offsets[f + 1] - key_offsets[f], feature)
      body += 1 + _varint_size(np.uint64(entry)) + entry
    offsets[row] = pos
    buf[pos] = 0x0A  # Example.features
    pos = _put_varint(buf, pos + 1, np.uint64(body))
    for f in range(num_features):
      payload, values, feature = _feature_size(kinds, starts, lengths, ints, floats, row, f)
      key_length = key_offsets[f + 1] - key_offsets[f]
      buf[pos] = 0x0A  # Features.feature: a map entry
      pos = _put_varint(buf, pos + 1, np.uint64(_entry_size(key_length, feature)))
      buf[pos] = 0x0A  # entry.key
      pos = _put_varint(buf, pos + 1, np.uint64(key_length))
      for k in range(key_offsets[f], key_offsets[f + 1]):
        buf[pos] = keys[k]
        pos += 1
      buf[pos] = 0x12  # entry.value: a Feature
      pos = _put_varint(buf, pos + 1, np.uint64(feature))
      buf[pos] = 0x1A if kinds[f] == _INT else 0x12  # Feature.int64_list / float_list
      pos = _put_varint(buf, pos + 1, np.uint64(values))
      if payload:
        buf[pos] = 0x0A  # The list's packed `value` field
        pos = _put_varint(buf, pos + 1, np.uint64(payload))
        if kinds[f] == _INT:
          for k in range(starts[f], starts[f] + lengths[f]):
            pos = _put_varint(buf, pos, np.uint64(ints[row, k]))
        else:
          raw = floats[row, starts[f]:starts[f] + lengths[f]].view(np.uint8)
          for b in raw:
            buf[pos] = b
            pos += 1
  offsets[ints.shape[0]] = pos
  return pos
