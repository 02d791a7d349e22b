"""Learning WordPiece and SentencePiece vocabularies from raw text."""
