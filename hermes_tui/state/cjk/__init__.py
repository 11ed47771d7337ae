"""cjk_unicode61 FTS5 tokenizer: compiled extension and pure-Python twin."""
