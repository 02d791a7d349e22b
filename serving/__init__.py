"""SavedModels for TF Serving: everything an export holds and how to ask it.

tokenizer.py (FullTokenizer as TensorFlow ops), packing.py, window_ops.py and
squad_ops.py (features, windows of long texts and SQuAD answers as TensorFlow
ops), words/ (raw text as words, in Python and as TensorFlow ops alike);
one module per task's signatures (classifier.py, multiple_choice.py,
squad.py, tagger.py, embedding.py for sentence vectors, ...) over what they share (export.py); rest.py, TF Serving's REST answers
from a SavedModel, needing only TensorFlow and tensorflow-text (the
command query.py asks an export with it).
"""
