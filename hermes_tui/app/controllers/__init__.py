"""Plain classes and functions that decide what the main screen does; the screen routes.

One job per module, each testable without a running app: `live_rules` (what a live report
means for the list and the open session, a pure function), `ordering` (the list's order and
filters), `opening` (opening one store or several), `header` (the info line and the list's
title), `panes` (the panes and the remembered settings), `transcript_loading` (reading a
session for the transcript), `federation` (several stores: arrivals, failures, followers).
"""
