"""The HTTP API, the bot pull/submit API and the dashboard: a driver of runtime/."""
