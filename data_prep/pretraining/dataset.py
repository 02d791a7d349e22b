"""tf.data input pipelines over the pre-training TFRecords, as the original read them.

Training: the file list is repeated and shuffled, files are interleaved
(`min(num_cpu_threads, files)` at a time), records shuffled in a buffer of
100, and batched with fixed shapes (remainders dropped). Unlike the original,
every random choice is seeded and the interleave is deterministic, so a run
is reproducible and a resumed run can skip exactly the batches it has
consumed. Evaluation: the files in order, repeated, so that any number of
full batches can be read (a small file wraps around), as the original did;
`repeat=False` reads one pass instead.
"""

import tensorflow as tf

from data_prep.pretraining import dynamic_masking
from data_prep.pretraining import records
from plumbing import tf_example
from plumbing import tfrecord
from plumbing.errors import UserError


def check_record_shapes(input_files, max_seq_length, max_predictions_per_seq):
  """Fails before training if the first record does not fit the flags."""
  tfrecord.note_read(input_files)
  for path in input_files:
    for raw in tf.data.TFRecordDataset(path).take(1):
      example = tf.train.Example.FromString(raw.numpy())
      feature = example.features.feature
      for name, size in (("input_ids", max_seq_length),
                         ("masked_lm_positions", max_predictions_per_seq)):
        if name not in feature:
          raise UserError("%s: records have no feature %r; are these pre-training "
                           "records from create_pretraining_data?" % (path, name))
        found = len(feature[name].int64_list.value)
        if found != size:
          flag = "max_seq_length" if name == "input_ids" else "max_predictions_per_seq"
          raise UserError(
              "%s: records have %s of length %d but --%s=%d; pass --%s=%d or "
              "regenerate the data." % (path, name, found, flag, size, flag, found))


def left_to_right(features):
  """Decoded records (one, or a batch) as left-to-right language-model
  examples: the masked tokens restored (`masked_lm_ids` holds the
  originals), and as "masked" predictions the next token at every position
  but the last, weighted by whether that next token is real. So the same
  records, loss and metrics serve the paper's LTR ablation. On a batch cut
  to its longest row (tf_example.trim_padding) the predictions stop there
  too; the ones dropped had weight 0."""
  input_ids = dynamic_masking.restored_input_ids(features)
  length = tf.shape(input_ids)[-1]
  features = dict(features, input_ids=input_ids)
  features["masked_lm_positions"] = tf.broadcast_to(
      tf.range(length - 1, dtype=tf.int32), tf.shape(input_ids[..., 1:]))
  features["masked_lm_ids"] = input_ids[..., 1:]
  features["masked_lm_weights"] = tf.cast(features["input_mask"][..., 1:], tf.float32)
  return features


def pretraining_dataset(input_files, max_seq_length, max_predictions_per_seq,
                        batch_size, is_training, num_cpu_threads=4, seed=0,
                        repeat=True, input_context=None, objective="mlm_nsp",
                        trim_to_multiple=None, masking=None):
  """Batches of feature dicts from `input_files` (see the module docstring).

  `input_context` (from tf.distribute) shards files across input pipelines,
  as for multi-worker training; `batch_size` is then per pipeline.
  `objective="ltr"` turns records into left-to-right examples
  (`left_to_right`); the others read records as they are. With
  `trim_to_multiple`, each batch is cut to its longest row, rounded up to a
  multiple of it (tf_example.trim_padding): the same losses and metrics.
  `masking` (a dynamic_masking.DynamicMasking, training only) masks every
  record afresh as it is read.
  """
  spec = records.example_spec(max_seq_length, max_predictions_per_seq)
  tfrecord.note_read(input_files)
  if is_training:
    pipelines = input_context.num_input_pipelines if input_context else 1
    # Each input pipeline (worker) reads its own share: whole files when there
    # are enough of them, otherwise every pipelines-th record.
    shard_files = pipelines > 1 and len(input_files) >= pipelines
    files = tf.data.Dataset.from_tensor_slices(tf.constant(list(input_files)))
    if shard_files:
      files = files.shard(pipelines, input_context.input_pipeline_id)
    files = files.repeat().shuffle(len(input_files), seed=seed)
    d = files.interleave(tf.data.TFRecordDataset,
                         cycle_length=min(num_cpu_threads, len(input_files)),
                         num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if pipelines > 1 and not shard_files:
      d = d.shard(pipelines, input_context.input_pipeline_id)
    d = d.shuffle(100, seed=seed + 1)
  else:
    d = tf.data.TFRecordDataset(list(input_files))
    if repeat:
      d = d.repeat()
  d = d.map(spec.decode, num_parallel_calls=num_cpu_threads, deterministic=True)
  if masking is not None and is_training:
    # Each record's place in this pipeline's stream seeds its masks.
    d = d.enumerate().batch(batch_size, drop_remainder=True).map(
        masking, num_parallel_calls=num_cpu_threads, deterministic=True)
  else:
    d = d.batch(batch_size, drop_remainder=is_training or repeat)
  if trim_to_multiple:
    d = d.map(lambda f: tf_example.trim_padding(f, trim_to_multiple))
  if objective == "ltr":
    d = d.map(left_to_right)
  return d.prefetch(tf.data.AUTOTUNE)
