"""Named-entity recognition, the data side: CoNLL files and their tag
schemes (conll.py), JSON Lines files of tokens and tags (json_lines.py),
words as WordPieces with labels on first pieces and windows over long
sentences (features.py), raw text lines to entities (raw_text.py), which
split of raw text into words a run reads (word_split.py), and entity scores
counted as the CoNLL shared task's scorer counts them (metrics.py).
"""
