"""The fine-tuning tasks, each owning its files, features, records and outputs.

classification/ (GLUE and XNLI: glue.py declares each task once); squad/
(SQuAD 1.1 and 2.0: examples, windowed features, predictions, the official
metric); swag.py (multiple choice); feature_extraction.py (extract_features'
input lines and output files). The model side of a task (its head and loss)
is in modeling/, its SavedModel in serving/.
"""
