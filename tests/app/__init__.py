"""Pilot and unit tests of the Textual browser."""
