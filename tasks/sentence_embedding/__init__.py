"""Sentence vectors (embed.py): one vector per text, pooled over its tokens
as sentence-transformers pools them.

settings.py reads what a sentence-transformers model's own files say
(pooling, normalisation, sequence length, casing) and decides each setting
once, with a log line naming where it came from; outputs.py writes the
vectors as .npy or JSON Lines. The pooling itself is
modeling.pooling.sentence_vectors, which the export shares.
"""
