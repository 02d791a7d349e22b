"""Named-entity recognition, the data side: CoNLL files and their tag
schemes (conll.py), words as WordPieces with labels on first pieces and
windows over long sentences (features.py), and entity scores counted as the
CoNLL shared task's scorer counts them (metrics.py).
"""
