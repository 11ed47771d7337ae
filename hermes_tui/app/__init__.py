"""Textual browser over the session store."""
