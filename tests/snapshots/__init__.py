"""SVG snapshot tests of every pane and state."""
