"""Sentence(-pair) classification, the original run_classifier.py's data side:
the tasks (glue.py, and tfds.py for tensorflow-datasets), their features and
records (features.py), their metrics and output files (outputs.py).
"""
