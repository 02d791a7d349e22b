"""The weights files of a Hugging Face directory, read without PyTorch:
model.safetensors (bfloat16 widened to float32), its shards with their
index, or pytorch_model.bin (that one needs PyTorch).
"""

import json
import os
import struct

import numpy as np

from plumbing import files
from plumbing.errors import UserError

# In the order transformers prefers them.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def _safetensors(path):
  """{name: array} of one .safetensors file (bfloat16 widened to float32)."""
  from safetensors import numpy as safetensors_numpy  # pylint: disable=g-import-not-at-top
  with open(path, "rb") as f:
    data = f.read()
  try:
    return safetensors_numpy.load(data)
  except KeyError:  # A dtype NumPy lacks (BF16): read the file's layout here.
    return _safetensors_with_bfloat16(data, path)
  except Exception as e:  # pylint: disable=broad-except  (safetensors' own errors)
    raise UserError("%s: not a readable safetensors file (%s); copy it again." %
                    (path, e)) from None


_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
           "I32": np.int32}


def _safetensors_with_bfloat16(data, path):
  """The safetensors layout: an 8-byte little-endian header size, a JSON
  header {name: {dtype, shape, data_offsets}}, then the bytes."""
  (size,) = struct.unpack("<Q", data[:8])
  header = json.loads(data[8:8 + size])
  body = data[8 + size:]
  tensors = {}
  for name, entry in header.items():
    if name == "__metadata__":
      continue
    start, end = entry["data_offsets"]
    if entry["dtype"] == "BF16":  # The top half of a float32.
      bits = np.frombuffer(body[start:end], "<u2").astype(np.uint32) << 16
      tensors[name] = bits.view(np.float32).reshape(entry["shape"])
    elif entry["dtype"] in _DTYPES:
      tensors[name] = np.frombuffer(body[start:end], _DTYPES[entry["dtype"]]).reshape(
          entry["shape"])
    else:
      raise UserError("%s: tensor %s has dtype %s, which BERT weights do not use." %
                      (path, name, entry["dtype"]))
  return tensors


def _pytorch_bin(path):
  try:
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise UserError("%s: reading pytorch_model.bin needs PyTorch (pip install torch); or "
                    "save the model as model.safetensors, which needs nothing more." %
                    path) from None
  state = torch.load(path, map_location="cpu", weights_only=True)
  return {name: value.float().numpy() for name, value in state.items()}


def read_tensors(directory):
  """{Hugging Face name: array} from the directory's weights file(s)."""
  for name in WEIGHT_FILES:
    path = os.path.join(directory, name)
    if not os.path.exists(path):
      continue
    read = _pytorch_bin if name.startswith("pytorch") else _safetensors
    if not name.endswith(".index.json"):
      return read(path)
    tensors = {}
    index = files.read_json(path).get("weight_map", {})
    for shard in sorted(set(index.values())):
      shard_path = os.path.join(directory, shard)
      if not os.path.exists(shard_path):
        raise UserError("%s names shard %s, which is not in %s." % (path, shard, directory))
      tensors.update(read(shard_path))
    return tensors
  others = [n for n in ("tf_model.h5", "flax_model.msgpack") if
            os.path.exists(os.path.join(directory, n))]
  raise UserError("%s: no weights file (%s)%s." % (
      directory, ", ".join(WEIGHT_FILES[::2]),
      "; it holds only %s: load it in transformers and save_pretrained() it" % others[0]
      if others else ""))
