"""Structured logs for every driver: one JSON object per line on stderr (structlog).

`configure_logging(env)` routes the standard library's logging — ours and every
library's — through structlog's `ProcessorFormatter`, so a line from the runner, a
Faust agent, uvicorn or aiohttp has the same shape:

    {"event": "job … not leased: …", "level": "info", "logger": "runtime.work",
     "timestamp": "2026-03-01T08:00:00.123Z", "job_id": "…", "store_id": "…",
     "lease_id": "…", "worker": "host:123:0"}

The ids come from `structlog.contextvars`: the shared job step (`runtime/work.py`)
and the bot API bind them around each job, so every line logged while a job runs
carries them, whichever library wrote it.

Settings (environment): `LEDGER_LOG_FORMAT` — `json` or `console` (the same fields,
for a person; the default when stderr is a terminal, `json` otherwise); `LEDGER_LOG_LEVEL` — default `INFO` for
the long-running drivers (`run`, `worker`, `relay`, `serve`, `bot`), `WARNING` for
one-shot commands. Lines go to stderr, which `ledger.host.redact` masks for secrets.
"""

from __future__ import annotations

import json
import logging
import logging.config
import logging.handlers
import sys
from collections.abc import Mapping
from typing import Any

import structlog

from ledger.settings import ConfigError

__all__ = ["DRIVERS", "access_logger", "configure_logging", "logging_config"]

#: commands that run until stopped and log what they do at INFO by default
DRIVERS = frozenset({"run", "worker", "relay", "serve", "bot"})
FORMATS = ("json", "console")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _settings(env: Mapping[str, str], command: str | None) -> tuple[str, str]:
    fmt = (env.get("LEDGER_LOG_FORMAT") or ("console" if sys.stderr.isatty() else "json")
           ).strip().lower()
    if fmt not in FORMATS:
        raise ConfigError(f"LEDGER_LOG_FORMAT must be one of {', '.join(FORMATS)}, not {fmt!r}")
    default = "INFO" if command in DRIVERS else "WARNING"
    level = (env.get("LEDGER_LOG_LEVEL") or default).strip().upper()
    if level not in LEVELS:
        raise ConfigError(f"LEDGER_LOG_LEVEL must be one of {', '.join(LEVELS)}, not {level!r}")
    return fmt, level


def logging_config(env: Mapping[str, str], command: str | None = None) -> dict[str, Any]:
    """A `logging.config.dictConfig` dict (also handed to Faust's worker)."""
    fmt, level = _settings(env, command)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _drop_color_message,
    ]
    renderer: Any = (structlog.processors.JSONRenderer() if fmt == "json"
                     else structlog.dev.ConsoleRenderer(colors=False))
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"structured": {
            "()": structlog.stdlib.ProcessorFormatter,
            "foreign_pre_chain": shared,
            "processors": [structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                           structlog.processors.format_exc_info, renderer],
        }},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "structured",
                                "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": level},
        # libraries that narrate every request at INFO: their warnings still show
        "loggers": {name: {"level": "WARNING"} for name in (
            "uvicorn.access", "httpx", "aiokafka", "kafka", "faust", "mode")},
    }


def _drop_color_message(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    """uvicorn adds a copy of its message with terminal colour codes (`color_message`):
    a log line carries the plain one only."""
    event.pop("color_message", None)
    return event


def configure_logging(env: Mapping[str, str], command: str | None = None) -> None:
    """Route all logging through structlog, as `logging_config` says."""
    logging.config.dictConfig(logging_config(env, command))
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, structlog.stdlib.add_log_level,
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


#: `serve --access-log` values that are not a path
ACCESS_TO_LOGS, ACCESS_OFF = "-", "off"


def access_logger(target: str) -> logging.Logger | None:
    """The logger `serve`'s access log writes to: a file of JSON lines at `target` (reopened
    when it is moved, so logrotate works), the process's own logs for `-`, none for `off`.

    A file keeps request lines apart from the server's own log and never blocks the
    server on a log reader that does not keep up."""
    if target == ACCESS_OFF:
        return None
    logger = logging.getLogger("crawl_ledger.access")
    logger.setLevel(logging.INFO)
    for old in list(logger.handlers):
        logger.removeHandler(old)
        old.close()
    if target == ACCESS_TO_LOGS:
        logger.propagate = True
        return logger
    try:
        handler = logging.handlers.WatchedFileHandler(target, encoding="utf-8")
    except OSError as refused:
        raise ConfigError(f"cannot open the access log {target}: {refused.strerror}") from None
    handler.setFormatter(_JsonLine())
    logger.addHandler(handler)
    logger.propagate = False
    return logger


class _JsonLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(getattr(record, "access", {"event": record.getMessage()}),
                          separators=(",", ":"))
