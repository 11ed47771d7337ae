"""Differential tests against the real hermes-agent 0.19.0 ``hermes_state`` (the peer oracle)."""
