"""The fine-tuning tasks, each kind owning its files, features, records,
model, outputs and export, and the one driver that runs any of them.

driver.py (train, evaluate, predict, export, in the original's order);
classification/ (GLUE and XNLI: glue.py declares each task once); squad/
(SQuAD 1.1 and 2.0: examples, windowed features, predictions, the official
metric); swag/ (multiple choice); ner/ (named-entity recognition: CoNLL
files, first-piece labels, the CoNLL scorer's counts); each kind's task.py
answers the driver. What several kinds share (no kind imports another,
but multi_label.py the classification it extends): sliding_windows.py
(windows over long token sequences, each token's max-context window),
pair_packing.py ([CLS] A [SEP] B [SEP]), metrics.py (eval numbers),
table_files.py (the user's CSV, TSV and JSON Lines files by column) and
tfds_data.py (tensorflow-datasets' download). feature_extraction.py:
extract_features' input lines and output files (and the stream of lines
through the model embed.py shares); sentence_embedding/: embed.py's settings,
from a sentence-transformers model's files, and its output files.
"""
