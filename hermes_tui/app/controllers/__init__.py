"""Plain classes and functions that decide what the main screen does; the screen routes.

One job per module, each testable without a running app: `live_rules` (what a live report
means for the list and the open session: pure functions), `ordering` (the list's order and
filters), `opening` (opening one store or several, and the first order), `header` (the info
line and the list's title), `panes` (the panes, their widths, the footer keys that fit),
`transcript_loading` (reading a session for the transcript, its title and subtitle),
`federation` (several stores: their follower, failures told, the merge's bookkeeping),
`search_source` (one store searched as several are) and `messages` (what the workers tell
the main screen).
"""
