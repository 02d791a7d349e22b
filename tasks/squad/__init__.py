"""SQuAD 1.1 and 2.0, the original run_squad.py's data side: reading the files
(examples.py), windows of each document (features.py), predictions.json and
its companions (predictions.py), and the official metric (evaluate.py).
"""
