"""Datasets from tensorflow-datasets (`--data_dir=tfds`): downloading and
preparing one, or one line saying what to pass instead where there is no
network. Classification (classification/tfds.py) and NER read theirs so.
"""

from plumbing.errors import UserError

DATA_DIR = "tfds"  # The --data_dir value that means "from tensorflow-datasets".


def prepare(builder, name, manual_dir, instead):
  """Downloads (or, from `manual_dir`, copies) and prepares the dataset
  `name`'s builder, once; no network is one line saying what to do
  `instead`."""
  import requests  # pylint: disable=g-import-not-at-top  (tensorflow-datasets downloads with it)
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  try:
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=manual_dir))
  except requests.exceptions.ConnectionError:
    sources = sorted(i.filename for i in (builder.url_infos or {}).values() if i.filename)
    raise UserError(
        "--data_dir=%s: tensorflow-datasets could not download %s (no network?). Pass "
        "--data_dir=<%s> instead, or put its source files%s in a directory and pass it "
        "as --tfds_manual_dir." % (DATA_DIR, name, instead,
                                   " (%s)" % ", ".join(sources) if sources else "")) from None
