"""A classification task's examples from tensorflow-datasets (`--data_dir=tfds`).

Which dataset, text features and splits hold a task is declared with the
task (tasks/classification/glue.py); this reads them the way the task's
processor reads its files.
"""

from data_prep import tokenization
from plumbing.errors import UserError
from tasks import tfds_data
from tasks.classification.features import InputExample

class TfdsProcessor(object):
  """A task's examples from tensorflow-datasets instead of TSV files.

  The label names of the dataset are mapped onto the task's label list, so a
  model fine-tuned on either source has the same label ids; guids are
  `<split>-<idx>` and GLUE test indices are the dataset's `idx`.
  """

  def __init__(self, task, task_name=None, data_dir=None, manual_dir=None):
    """`task`: the task's processor (tasks/classification/glue.py), whose
    declarations (labels, metrics, ...) this one answers with; `task_name`:
    as the user spelt it, for messages. `data_dir`: where tensorflow-datasets
    keeps prepared data (default ~/tensorflow_datasets); `manual_dir`: the
    dataset's source files, already downloaded (offline preparation)."""
    if not task.tfds_name:
      raise UserError("--data_dir=%s: task %r is not available from "
                      "tensorflow-datasets; pass a directory of its files." %
                      (tfds_data.DATA_DIR, task_name or task.names[0]))
    self.task = task
    self.data_dir = data_dir
    self.manual_dir = manual_dir

  def __getattr__(self, name):
    return getattr(self.task, name)  # The task's declarations and get_labels().

  def get_train_examples(self, data_dir=None):
    return self._examples("train")

  def get_dev_examples(self, data_dir=None):
    return self._examples("dev")

  def get_test_examples(self, data_dir=None):
    return self._examples("test")

  def _label(self, value, names, set_type):
    if self.is_regression:
      return 0.0 if set_type == "test" else float(value)
    labels = self.get_labels()
    if set_type == "test" or value < 0:
      return labels[0]
    name = names[value]
    if name in labels:
      return name
    return labels[int(value)]  # Binary tasks: label names "0"/"1" are ids.

  def _examples(self, set_type):
    import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
    split = self.tfds_splits[set_type]
    builder = tfds.builder(self.tfds_name, data_dir=self.data_dir)
    tfds_data.prepare(builder, self.tfds_name, self.manual_dir, "a directory of the task's TSV files")
    label_feature = builder.info.features["label"]
    names = getattr(label_feature, "names", None)
    examples = []
    for record in tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)):
      texts = [tokenization.convert_to_unicode(record[f]) for f in self.tfds_text_features]
      index = int(record["idx"])
      examples.append(InputExample(
          guid="%s-%d" % (set_type, index), text_a=texts[0],
          text_b=texts[1] if len(texts) > 1 else None,
          label=self._label(record["label"], names, set_type),
          source="%s[%s] idx %d" % (self.tfds_name, split, index),
          index=str(index) if set_type == "test" else None))
    return examples
