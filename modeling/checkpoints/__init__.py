"""Checkpoints in the formats BERT users hold, and the command converting them.

tf_format.py: TensorFlow's two kinds, the original's name-based checkpoints
(as released) and our object-based training checkpoints; huggingface.py:
Hugging Face BERT directories (config.json, model.safetensors, vocab.txt),
read into and written from the original's names, and huggingface_weights.py:
their weights files' formats; keras_hub.py and
keras_hub_weights.py: keras-hub presets (JSON and Keras' HDF5 weight files),
the same way, and keras_hub_gap.py: how far keras-hub computes a model from
ours where it cannot follow it; conversion.py: from any of these formats to
any other; convert.py: what the `bert-convert-checkpoint`
command does; loading.py: a training run's checkpoints and the weights a
model starts from.
"""

from modeling.checkpoints.tf_format import CheckpointMismatchError
from modeling.checkpoints.tf_format import DamagedCheckpointError
from modeling.checkpoints.tf_format import is_object_based
from modeling.checkpoints.tf_format import load_checkpoint
from modeling.checkpoints.tf_format import load_original_checkpoint
from modeling.checkpoints.tf_format import LoadReport
from modeling.checkpoints.tf_format import matched_every_object
from modeling.checkpoints.tf_format import reader
from modeling.checkpoints.tf_format import reporting_damage
from modeling.checkpoints.tf_format import resolve
from modeling.checkpoints.tf_format import save_checkpoint
from modeling.checkpoints.tf_format import save_original_checkpoint
from modeling.checkpoints.tf_format import write_original_tensors

__all__ = ["CheckpointMismatchError", "DamagedCheckpointError", "is_object_based",
           "load_checkpoint", "load_original_checkpoint", "LoadReport", "matched_every_object", "reader",
           "reporting_damage", "resolve", "save_checkpoint", "save_original_checkpoint",
           "write_original_tensors"]
